"""OpenTelemetry to Swarmscope in one call, in the spirit of `phoenix.otel.register()`:

    from swarmscope_client import register
    tracer_provider = register()  # SWARMSCOPE_URL, SWARMSCOPE_API_KEY from the environment
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)  # or register(auto_instrument=True)

sets up an OpenTelemetry SDK TracerProvider whose spans go, OTLP/HTTP protobuf, to the app's
`/v1/traces` with `Authorization: Bearer <api key>`, and a LoggerProvider whose log records (where
the GenAI instrumentations put prompts and completions) go to `/v1/logs`. Any instrumentor that
takes a tracer provider (OpenInference, OpenLLMetry, the OpenTelemetry GenAI instrumentations)
then needs no hand-written events. Needs the `otel` extra: `pip install swarmscope-client[otel]`
(`[otel-grpc]` for `protocol="grpc"`, to the app's OTLP/gRPC receiver on port 4317).
"""

from __future__ import annotations

import urllib.parse
import warnings
from importlib.metadata import entry_points
from typing import Any

from .client import settings_from_env

try:
    from opentelemetry import _logs, trace
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        f"swarmscope_client.register needs the OpenTelemetry SDK ({exc.name} is missing): "
        "pip install 'swarmscope-client[otel]'"
    ) from exc

try:  # protocol="grpc" only: the `otel-grpc` extra
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
except ImportError:
    GrpcLogExporter = GrpcSpanExporter = None  # type: ignore[assignment,misc]

__all__ = ["SwarmscopeTracerProvider", "register"]

PROTOCOLS = ("http/protobuf", "grpc")
#: The app's OTLP/gRPC receiver's port (`manage.py up --grpc-port`), where SWARMSCOPE_URL names none.
GRPC_PORT = 4317

#: The resource attribute that records `project` on every span and log record (the server files
#: them under the API key's project; this keeps which one the sender meant).
PROJECT_ATTRIBUTE = "swarmscope.project"
#: Where `auto_instrument=True` finds instrumentors: the entry points OpenInference packages declare.
INSTRUMENTOR_ENTRY_POINTS = "openinference_instrumentor"


class SwarmscopeTracerProvider(TracerProvider):
    """An SDK TracerProvider that also owns the LoggerProvider `register()` made (`logger_provider`,
    None with `logs=False`): `force_flush()` and `shutdown()` act on both signals."""

    logger_provider: LoggerProvider | None = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        spans = super().force_flush(timeout_millis)
        logs = self.logger_provider.force_flush(timeout_millis) if self.logger_provider else True
        return spans and logs

    def shutdown(self) -> None:
        super().shutdown()
        if self.logger_provider is not None:
            self.logger_provider.shutdown()


def otlp_endpoints(base: str) -> tuple[str, str]:
    """`(traces URL, logs URL)` of `base`: the app's URL, or its `/v1/traces` endpoint itself."""
    base = base.rstrip("/")
    if base.endswith("/v1/traces"):
        base = base[: -len("/v1/traces")]
    return f"{base}/v1/traces", f"{base}/v1/logs"


def grpc_endpoint(url: str, explicit: bool) -> str:
    """The OTLP/gRPC receiver's address: `url` itself when given as `endpoint`, else the host of
    the app's URL (SWARMSCOPE_URL) on GRPC_PORT. `http://` means plain text, `https://` TLS."""
    if explicit:
        return url
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{GRPC_PORT}"


def register(
    *,
    project: int | str | None = None,
    endpoint: str | None = None,
    api_key: str | None = None,
    protocol: str = "http/protobuf",
    batch: bool = True,
    set_global_tracer_provider: bool = True,
    logs: bool = True,
    auto_instrument: bool = False,
    headers: dict[str, str] | None = None,
    resource_attributes: dict[str, Any] | None = None,
) -> SwarmscopeTracerProvider:
    """Set up OpenTelemetry tracing (and logs) to Swarmscope; returns the TracerProvider.

    `endpoint`: the app's URL or its `/v1/traces` URL (default `SWARMSCOPE_URL`); `api_key`: an API
    token (default `SWARMSCOPE_API_KEY`), sent as a bearer token; a missing one raises ValueError
    naming the variable. `project` (default `SWARMSCOPE_PROJECT`): the project's number, recorded as
    the `swarmscope.project` resource attribute (the token decides where spans are filed).
    `protocol`: "http/protobuf", or "grpc" (the `otel-grpc` extra) to the app's OTLP/gRPC receiver:
    `endpoint` is then its address, default the URL's host on port 4317. `batch`: a BatchSpanProcessor (spans
    leave in the background, call `force_flush()` before exit in short scripts) rather than one
    request per span. `set_global_tracer_provider` also sets the global LoggerProvider. `logs=False`
    leaves logs out. `auto_instrument` instruments every installed OpenInference instrumentor.
    `headers` are added to the bearer token; `resource_attributes` to the resource, which also reads
    OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r}: one of {', '.join(PROTOCOLS)}")
    if protocol == "grpc" and GrpcSpanExporter is None:
        raise ImportError("protocol='grpc' needs the gRPC exporter: pip install 'swarmscope-client[otel-grpc]'")
    url, api_key, number = settings_from_env(endpoint, api_key, project)
    # gRPC metadata keys are lower case; HTTP headers are not case-sensitive.
    sent_headers = {**(headers or {}), "authorization": f"Bearer {api_key}"}
    if protocol == "grpc":
        address = grpc_endpoint(url, explicit=endpoint is not None)
        span_exporter: Any = GrpcSpanExporter(endpoint=address, headers=sent_headers)
        log_exporter: Any = GrpcLogExporter(endpoint=address, headers=sent_headers) if logs else None
    else:
        traces_url, logs_url = otlp_endpoints(url)
        span_exporter = OTLPSpanExporter(endpoint=traces_url, headers=sent_headers)
        log_exporter = OTLPLogExporter(endpoint=logs_url, headers=sent_headers) if logs else None
    attributes = dict(resource_attributes or {})
    if number is not None:
        attributes[PROJECT_ATTRIBUTE] = number
    resource = Resource.create(attributes)

    tracer_provider = SwarmscopeTracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(span_exporter) if batch else SimpleSpanProcessor(span_exporter)
    )
    if log_exporter is not None:
        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(log_exporter) if batch else SimpleLogRecordProcessor(log_exporter)
        )
        tracer_provider.logger_provider = logger_provider
    if set_global_tracer_provider:
        trace.set_tracer_provider(tracer_provider)
        if tracer_provider.logger_provider is not None:
            _logs.set_logger_provider(tracer_provider.logger_provider)
    if auto_instrument:
        instrument_installed(tracer_provider)
    return tracer_provider


def instrument_installed(tracer_provider: TracerProvider) -> list[str]:
    """Instrument every installed OpenInference instrumentor with `tracer_provider`; returns their
    entry point names (a warning when there is none)."""
    found = list(entry_points(group=INSTRUMENTOR_ENTRY_POINTS))
    if not found:
        warnings.warn(
            f"auto_instrument: no OpenInference instrumentor is installed (entry points "
            f"{INSTRUMENTOR_ENTRY_POINTS!r}); install one, e.g. openinference-instrumentation-openai",
            stacklevel=3,
        )
    for entry_point in found:
        entry_point.load()().instrument(tracer_provider=tracer_provider)
    return [entry_point.name for entry_point in found]
