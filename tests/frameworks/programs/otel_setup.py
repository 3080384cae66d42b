"""What every framework program does first: the OpenTelemetry SDK set up as users do, from the
standard OTEL_* environment variables the test sets (endpoint, headers, protocol, service name).

`setup()` returns the TracerProvider (and sets it global); `finish(provider)` flushes and shuts it
down, so every span has been exported when the program exits. With OTEL_LOGS_EXPORTER=otlp a
LoggerProvider is set up too (content on the logs signal) and flushed by `finish`.
"""

import os

from opentelemetry import _logs, trace
from opentelemetry.sdk._configuration import _OTelSDKConfigurator


def setup():
    os.environ.setdefault("OTEL_METRICS_EXPORTER", "none")
    os.environ.setdefault("OTEL_LOGS_EXPORTER", "none")
    os.environ.setdefault("OTEL_TRACES_EXPORTER", "otlp")
    _OTelSDKConfigurator().configure()
    return trace.get_tracer_provider()


def finish(provider) -> None:
    provider.force_flush()
    provider.shutdown()
    logs = _logs.get_logger_provider()
    if hasattr(logs, "shutdown"):
        logs.force_flush()
        logs.shutdown()
