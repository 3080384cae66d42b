"""Send orchestration traces to Swarmscope: the REST client (standard library only) and, with the
`otel` extra, `register()`, which points an OpenTelemetry SDK at the app.

    from swarmscope_client import Client, register
    client = Client()        # SWARMSCOPE_URL, SWARMSCOPE_API_KEY, SWARMSCOPE_PROJECT
    tracer_provider = register()  # OTLP/HTTP to $SWARMSCOPE_URL/v1/traces and /v1/logs

`register` is loaded on first use (PEP 562), so `import swarmscope_client` never needs OpenTelemetry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .client import Client, SwarmscopeClient, SwarmscopeError, TraceStream, settings_from_env

if TYPE_CHECKING:
    from .otel import register

__all__ = ["Client", "SwarmscopeClient", "SwarmscopeError", "TraceStream", "register", "settings_from_env"]


def __getattr__(name: str) -> Any:
    if name == "register":
        from .otel import register  # noqa: PLC0415 - optional dependency, loaded on first use

        return register
    raise AttributeError(f"module 'swarmscope_client' has no attribute {name!r}")
