"""OTLP/gRPC receiver: `TraceService/Export` and `LogsService/Export` (OTLP spec, "OTLP/gRPC"), for the
SDKs whose exporters default to gRPC (port 4317). Started by `manage.py up` (`manage.py otlp_grpc`).

Each call is answered by the OTLP/HTTP view of its signal (`api.otlp_traces`, `api.otlp_logs`): the
request message's bytes become the body of a protobuf POST with the call's `authorization`
metadata as its header, so authentication (`Authorization: Bearer <token>`, the token's project;
also checked before the message is read, `check_caller`),
the ingestion rate, the size limit, decoding, storage and the error messages are those of
/v1/traces and /v1/logs, not a copy. The generic handlers take and give serialised messages (no
parse here; the view decodes and encodes them); the service and method names are read from the
`opentelemetry-proto` descriptors. The view's HTTP status becomes the gRPC status the OTLP spec
gives for that failure (`GRPC_STATUS`); 429 also carries a `google.rpc.RetryInfo` with the
Retry-After delay, which exporters honour. gRPC undoes gzip (`grpc-encoding`) itself. Plain text
only (no TLS): put a TLS-terminating proxy in front for remote senders.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.handlers.wsgi import WSGIRequest
from django.core.signals import request_finished, request_started
from django.http import HttpResponse
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from webapp.accounts.services import AuthenticationRefused, authenticate_token

from . import api

logger = logging.getLogger(__name__)

DEFAULT_PORT = 4317  # the OTLP/gRPC port of the OTLP spec
TRANSPORT = "OTLP/gRPC"
#: HTTP status of the OTLP/HTTP view -> gRPC status (OTLP spec, "Failures" and "OTLP/HTTP Throttling").
GRPC_STATUS = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    405: grpc.StatusCode.UNIMPLEMENTED,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,  # what gRPC itself answers to a message over its limit
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,  # with RetryInfo: retryable
    503: grpc.StatusCode.UNAVAILABLE,
}
#: Gives the bytes of the call to the view and takes its answer's bytes back (no re-encoding).
_RAW = {"request_deserializer": None, "response_serializer": None}


def _service_name(module, name: str) -> str:
    return module.DESCRIPTOR.services_by_name[name].full_name


#: gRPC service -> (path, OTLP/HTTP view) answering its `Export`.
SERVICES: dict[str, tuple[str, Callable[..., HttpResponse]]] = {
    _service_name(trace_service_pb2, "TraceService"): ("/v1/traces", api.otlp_traces),
    _service_name(logs_service_pb2, "LogsService"): ("/v1/logs", api.otlp_logs),
}


def http_request(path: str, body: bytes, metadata) -> WSGIRequest:
    """The OTLP/HTTP protobuf POST of one gRPC call: `body` as the request body, the call's
    `authorization` metadata as its header (gRPC has no session: `user` is anonymous)."""
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "otlp-grpc",
        "SERVER_PORT": str(DEFAULT_PORT),
        "SERVER_PROTOCOL": "HTTP/2",
        "CONTENT_TYPE": "application/x-protobuf",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
    }
    authorization = next((v for k, v in metadata or () if k.lower() == "authorization" and isinstance(v, str)), None)
    if authorization is not None:
        environ.update(HTTP_AUTHORIZATION=authorization)  # the header, as a WSGI server passes it
    request = WSGIRequest(environ)
    request.user = AnonymousUser()
    request.otlp_transport = TRANSPORT
    return request


def _error_message(response: HttpResponse) -> str:
    """The message of the view's error: its `google.rpc.Status` body (protobuf: the call is a
    protobuf POST), else its JSON `error`."""
    from google.protobuf.message import DecodeError  # noqa: PLC0415
    from google.rpc.status_pb2 import Status  # noqa: PLC0415

    try:
        message = Status.FromString(response.content).message
    except DecodeError:
        message = ""
    if message:
        return message
    try:
        return str(json.loads(response.content)["error"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}"


def _retry_info(seconds: int) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata with a `google.rpc.RetryInfo` of `seconds` (OTLP spec, throttling)."""
    from google.rpc.error_details_pb2 import RetryInfo  # noqa: PLC0415 - only on throttling

    info = RetryInfo()
    info.retry_delay.seconds = seconds
    return (("google.rpc.retryinfo-bin", info.SerializeToString()),)


def check_caller(metadata) -> str | None:
    """Why the call's `authorization` metadata lets no one in (the message the HTTP view gives), or
    None for a live API token: checked before the request message is read."""
    authorization = next((v for k, v in metadata or () if k.lower() == "authorization" and isinstance(v, str)), "")
    if not authorization.startswith("Bearer "):
        return "authentication required: send 'Authorization: Bearer <token>'"
    try:
        authenticate_token(authorization[len("Bearer ") :].strip())
    except AuthenticationRefused as exc:
        return str(exc)
    return None


def _export(path: str, view: Callable[..., HttpResponse]) -> Callable[[Iterator[bytes], grpc.ServicerContext], bytes]:
    """The call's handler. A stream-unary handler (the wire is the same as unary's) so that the
    message is read only after the token is checked: an unauthenticated call is refused having
    cost its metadata, not its message (up to SWARMSCOPE_MAX_UPLOAD_BYTES)."""

    def export(messages: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
        request_started.send(sender=__name__, environ={})  # fresh database connections, as Django
        try:
            refused = check_caller(context.invocation_metadata())
            if refused is None:
                body = next(messages, b"")
                response = view(http_request(path, body, context.invocation_metadata()))
        except Exception:  # a bug: logged, answered INTERNAL as the HTTP server answers 500
            logger.exception("OTLP/gRPC %s failed", path)
            refused, response = None, HttpResponse(status=500)
        finally:
            request_finished.send(sender=__name__)
        if refused is not None:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, refused)
        if response.status_code == 200:
            return response.content
        if response.status_code == 429:
            context.set_trailing_metadata(_retry_info(int(response.get("Retry-After") or 1)))
        context.abort(GRPC_STATUS.get(response.status_code, grpc.StatusCode.INTERNAL), _error_message(response))
        raise AssertionError("unreachable: abort raises")

    return export


def handlers() -> list[grpc.GenericRpcHandler]:
    """One generic handler per OTLP service, its `Export` answered by the OTLP/HTTP view."""
    return [
        grpc.method_handlers_generic_handler(
            service, {"Export": grpc.stream_unary_rpc_method_handler(_export(path, view), **_RAW)}
        )
        for service, (path, view) in SERVICES.items()
    ]


def make_server(host: str, port: int, workers: int = 4) -> tuple[grpc.Server, int]:
    """A started gRPC server on `host:port` (port 0: any free one) and the port it got. Messages are
    limited to SWARMSCOPE_MAX_UPLOAD_BYTES (the view answers one at the limit, gRPC refuses a
    larger one with RESOURCE_EXHAUSTED). Raises RuntimeError when the port cannot be bound."""
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="otlp-grpc"),
        handlers=handlers(),
        options=[
            ("grpc.max_receive_message_length", settings.SWARMSCOPE_MAX_UPLOAD_BYTES + 1),
            ("grpc.so_reuseport", 0),  # a second app on the port fails to start, never shares it
        ],
    )
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as exc:
        raise RuntimeError(f"cannot listen on {host}:{port}: {exc}") from None
    if not bound:
        raise RuntimeError(f"cannot listen on {host}:{port}")
    server.start()
    return server, bound
