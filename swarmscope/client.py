"""Stream a running swarm's orchestration trace into Swarmscope. Standard library only.

    from swarmscope.client import SwarmscopeClient
    client = SwarmscopeClient("http://127.0.0.1:8000", token="ssk_...")
    with client.stream(name="my swarm run", system="my-mas") as trace:
        trace.event(id="e1", t=0.0, type="spawn", agent="orchestrator", to="worker_1")
        trace.event(id="e2", t=0.4, type="message", agent="worker_1", to="orchestrator", content="...")
        trace.edge("e1", "e2", "spawn")

Events are buffered and sent in batches (`batch_size` events or every `flush_interval` seconds);
a batch that fails with a network error or a 5xx is retried with backoff (re-sending is safe:
the server treats an event re-sent with the same id as a no-op). A 4xx raises SwarmscopeError
carrying the server's JSON (which names the bad event index and field).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["SwarmscopeClient", "SwarmscopeError", "TraceStream"]


class SwarmscopeError(RuntimeError):
    """The server refused a request: `status` is the HTTP status, `body` its JSON answer."""

    def __init__(self, status: int, body: Any):
        self.status, self.body = status, body
        message = body.get("error") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {message}")


class SwarmscopeClient:
    """A client for the REST API. `url` is the app's base URL, `token` an API token."""

    def __init__(self, url: str, token: str, *, timeout: float = 30.0, retries: int = 5):
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries

    def _request(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json"
    ) -> Any:
        delay = 0.5
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(
                self.url + path,
                data=body,
                method=method,
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": content_type,
                    "Accept": "application/json",
                },
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = response.read()
                    return json.loads(payload) if payload else None
            except urllib.error.HTTPError as exc:
                payload = exc.read()
                try:
                    parsed = json.loads(payload)
                except ValueError:
                    parsed = payload.decode("utf-8", "replace")
                if (exc.code < 500 and exc.code != 429) or attempt == self.retries:
                    raise SwarmscopeError(exc.code, parsed) from None
                if exc.code == 429:  # over the token's ingestion rate: wait as told, then resend
                    time.sleep(float(exc.headers.get("Retry-After") or delay))
                    continue
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if attempt == self.retries:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 8.0)
        raise AssertionError("unreachable")

    def create_trace(
        self, name: str, *, system: str = "", source_id: str = "", attributes: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Create a trace (or find it again by `source_id`); returns the trace resource."""
        body = {"name": name, "system": system, "source_id": source_id, "attributes": attributes or {}}
        return self._request("POST", "/api/traces/", json.dumps(body).encode())["trace"]

    def send_batch(
        self,
        trace_id: int,
        events: list[dict[str, Any]],
        *,
        edges: Sequence[dict[str, str]] = (),
        agents: Sequence[dict[str, Any]] = (),
        labels: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        """Append one batch of events (native event dicts) and edges; returns `{seq, events_added, ...}`."""
        body = {"events": list(events), "edges": list(edges), "agents": list(agents), "labels": list(labels)}
        return self._request("POST", f"/api/traces/{trace_id}/events/", json.dumps(body).encode())

    def upload(self, path: str | Path) -> dict[str, Any]:
        """Import a trace file of any supported format; returns the per-file report."""
        path = Path(path)
        return self._request(
            "POST",
            f"/api/traces/upload/?filename={urllib.parse.quote(path.name)}",
            path.read_bytes(),
            content_type="application/octet-stream",
        )

    def get_trace(self, trace_id: int) -> dict[str, Any]:
        """The trace resource: name, counts (`event_count`, `agent_count`), `seq`, rewards, ..."""
        return self._request("GET", f"/api/traces/{trace_id}/")

    # --- training runs (trainer/recipes/app_client.py reports here) ---------------------------

    def create_run(self, config: dict[str, Any], *, name: str = "") -> dict[str, Any]:
        """Create the app's record of an external training run (`config`: a RunConfig dict);
        returns the run resource (its `id` names it in the calls below)."""
        return self._request("POST", "/api/runs/", json.dumps({"name": name, "config": config}).encode())

    def get_run(self, run_id: int) -> dict[str, Any]:
        """The run resource: status, iterations_done, env_steps, best_reward, config, ..."""
        return self._request("GET", f"/api/runs/{run_id}/")

    def post_iteration(self, run_id: int, iteration: dict[str, Any]) -> dict[str, Any]:
        """Report one iteration (the recipe's iteration dict; its `episodes` become traces of the
        run's project); returns `{iteration, seq, episodes}` (the traces' ids)."""
        return self._request("POST", f"/api/runs/{run_id}/iterations/", json.dumps(iteration).encode())

    def finish_run(
        self, run_id: int, *, status: str | None = None, error: str = "", summary: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Mark the run finished (or `status`, e.g. "failed" with an `error`); returns the run."""
        body: dict[str, Any] = {"error": error, "summary": summary}
        if status:
            body["status"] = status
        return self._request("POST", f"/api/runs/{run_id}/finish/", json.dumps(body).encode())

    def stream(
        self, name: str, *, batch_size: int = 500, flush_interval: float = 0.5, **trace_fields: Any
    ) -> TraceStream:
        """A buffered stream into a new trace (`trace_fields` as for `create_trace`); use it as a
        context manager, which flushes on exit."""
        trace_id = self.create_trace(name, **trace_fields)["id"]
        return TraceStream(self, trace_id, batch_size=batch_size, flush_interval=flush_interval)


class TraceStream:
    """Buffers events and edges of one trace and sends them in batches from the caller's thread."""

    def __init__(self, client: SwarmscopeClient, trace_id: int, *, batch_size: int = 500, flush_interval: float = 0.5):
        self.client, self.trace_id = client, trace_id
        self.batch_size, self.flush_interval = batch_size, flush_interval
        self._events: list[dict[str, Any]] = []
        self._edges: list[dict[str, str]] = []
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()

    def event(self, **fields: Any) -> None:
        """Queue one event: `id`, `t` (s from trace start), `type`, `agent`, and optional fields.
        Use `from_` for the `from` field."""
        if "from_" in fields:
            fields["from"] = fields.pop("from_")
        with self._lock:
            self._events.append(fields)
        self._maybe_flush()

    def edge(self, src: str, dst: str, type: str) -> None:
        with self._lock:
            self._edges.append({"src": src, "dst": dst, "type": type})
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if len(self._events) >= self.batch_size or time.monotonic() - self._last_flush >= self.flush_interval:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            events, edges = self._events, self._edges
            self._events, self._edges = [], []
            self._last_flush = time.monotonic()
        if events or edges:
            self.client.send_batch(self.trace_id, events, edges=edges)

    def __enter__(self) -> TraceStream:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.flush()
