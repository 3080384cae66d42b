"""Stream a running swarm's orchestration trace into Swarmscope. Standard library only.

    from swarmscope_client import Client
    client = Client()  # SWARMSCOPE_URL, SWARMSCOPE_API_KEY (and SWARMSCOPE_PROJECT) from the environment
    with client.stream(name="my swarm run", system="my-mas") as trace:
        trace.event(id="e1", t=0.0, type="spawn", agent="orchestrator", to="worker_1")
        trace.event(id="e2", t=0.4, type="message", agent="worker_1", to="orchestrator", content="...")
        trace.edge("e1", "e2", "spawn")
    # leaving the block flushes and closes the stream: the trace stops showing as live at once

Events are buffered and sent in batches (`batch_size` events or every `flush_interval` seconds);
a batch that fails with a network error or a 5xx is retried with backoff (re-sending is safe:
the server treats an event re-sent with the same id as a no-op), and one that still fails stays
buffered for the next flush. Creating a trace sends an `Idempotency-Key`, so its retries create
one trace. A 4xx raises SwarmscopeError carrying the server's JSON (which names the bad event
index and field).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Client", "SwarmscopeClient", "SwarmscopeError", "TraceStream", "settings_from_env"]

#: The environment variables `Client()` and `register()` read when an argument is not given.
URL_VAR, API_KEY_VAR, PROJECT_VAR = "SWARMSCOPE_URL", "SWARMSCOPE_API_KEY", "SWARMSCOPE_PROJECT"


def settings_from_env(
    url: str | None = None,
    api_key: str | None = None,
    project: int | str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> tuple[str, str, int | None]:
    """`(url, api_key, project)`: each argument, else its environment variable (`SWARMSCOPE_URL`,
    `SWARMSCOPE_API_KEY`, `SWARMSCOPE_PROJECT`). `url` loses a trailing `/`; `project` is the
    project's number (as in `/projects/<id>/`) or None. Raises ValueError naming the variable
    when the URL or API key is missing, or when the project is not a number."""
    environ = os.environ if environ is None else environ
    url = url or environ.get(URL_VAR, "").strip()
    api_key = api_key or environ.get(API_KEY_VAR, "").strip()
    if not url:
        raise ValueError(f"no Swarmscope URL: set {URL_VAR} (e.g. http://127.0.0.1:8000) or pass the URL")
    if not api_key:
        raise ValueError(f"no Swarmscope API key: set {API_KEY_VAR} (a token from /tokens/) or pass api_key=")
    raw = project if project is not None and project != "" else environ.get(PROJECT_VAR, "").strip()
    try:
        number = int(raw) if raw not in (None, "") else None
    except ValueError:
        raise ValueError(
            f"{PROJECT_VAR} (or project=...) must be the project's number, as in /projects/<id>/, not {raw!r}"
        ) from None
    return url.rstrip("/"), api_key, number


class SwarmscopeError(RuntimeError):
    """The server refused a request: `status` is the HTTP status, `body` its JSON answer."""

    def __init__(self, status: int, body: Any):
        self.status, self.body = status, body
        message = body.get("error") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {message}")


class SwarmscopeClient:
    """A client for the REST API: `url` is the app's base URL, `api_key` an API token (`ssk_...`).

    Either may come from the environment (`SWARMSCOPE_URL`, `SWARMSCOPE_API_KEY`); explicit
    arguments win, and a missing one raises ValueError naming its variable. The token decides the
    project the server files traces and runs under (one token, one project); `project`
    (`SWARMSCOPE_PROJECT`, optional: the project's number, as in `/projects/<id>/`) makes the
    client check that, raising ValueError when a trace or run it creates lands anywhere else.
    `timeout` is per request, in seconds; `retries` the resends of a batch after a 5xx, a 429 or a
    network error.
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        project: int | str | None = None,
        timeout: float = 30.0,
        retries: int = 5,
    ):
        self.url, self.api_key, self.project = settings_from_env(url, api_key, project)
        self.timeout = timeout
        self.retries = retries

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(url={self.url!r}, project={self.project!r})"

    def _check_project(self, resource: dict[str, Any], what: str) -> dict[str, Any]:
        """`resource` unchanged, or ValueError where it belongs to another project than `self.project`."""
        if self.project is not None and resource.get("project") != self.project:
            raise ValueError(
                f"{what} {resource.get('id')} went to project {resource.get('project')}, not {PROJECT_VAR}="
                f"{self.project}: the API key decides the project; use a token of project {self.project}"
            )
        return resource

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str = "application/json",
        *,
        idempotency_key: str | None = None,
    ) -> Any:
        """Send one logical call, resending it after a 5xx, a 429 or a network error (`retries`
        times, backoff 0.5 s doubling to 8 s); every resend carries the same `Idempotency-Key`
        when one is given, so the server creates what the call creates once."""
        headers = {
            "Authorization": f"Bearer {self.api_key}",
            "Content-Type": content_type,
            "Accept": "application/json",
        }
        if idempotency_key is not None:
            headers["Idempotency-Key"] = f'"{idempotency_key}"'  # an sf-string (IETF draft)
        delay = 0.5
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
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
        self,
        name: str,
        *,
        system: str = "",
        source_id: str = "",
        attributes: dict[str, Any] | None = None,
        rewards: dict[str, float] | None = None,
        costs: dict[str, float] | None = None,
    ) -> dict[str, Any]:
        """Create a trace (or find it again by `source_id`) with its `rewards` (channel -> number:
        the list's reward) and `costs`; returns the trace resource. The call carries a fresh
        `Idempotency-Key` (uuid4) that its resends reuse: a retry after a timeout answers the trace
        the first attempt created instead of creating another."""
        body: dict[str, Any] = {"name": name, "system": system, "source_id": source_id, "attributes": attributes or {}}
        body.update({k: v for k, v in (("rewards", rewards), ("costs", costs)) if v})
        key = str(uuid.uuid4())
        trace = self._request("POST", "/api/traces/", json.dumps(body).encode(), idempotency_key=key)["trace"]
        return self._check_project(trace, "trace")

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

    def close_trace(self, trace_id: int) -> dict[str, Any] | None:
        """Tell the server the stream into trace `trace_id` has ended (`POST /api/traces/<id>/close/`):
        its Live badge clears now rather than after the server's idle time. Idempotent; returns
        `{trace, seq, closed}` (`closed` false when there was nothing to end), or None where the
        server has no such call (an older one, answering 404 or 405: it falls back to its idle
        time) or no longer has the trace."""
        try:
            return self._request("POST", f"/api/traces/{trace_id}/close/", b"{}")
        except SwarmscopeError as exc:
            if exc.status in (404, 405):
                return None
            raise

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
        """The trace resource: name, counts (`event_count`, `agent_count`), `seq`, rewards, cost,
        `metrics` (computed by the app: swarmscope.metrics, as the trace page shows them) and
        `source_metrics` (those the source gave), ..."""
        return self._request("GET", f"/api/traces/{trace_id}/")

    # --- training runs (trainer/recipes/app_client.py reports here) ---------------------------

    def create_run(self, config: dict[str, Any], *, name: str = "") -> dict[str, Any]:
        """Create the app's record of an external training run (`config`: a RunConfig dict);
        returns the run resource (its `id` names it in the calls below)."""
        run = self._request("POST", "/api/runs/", json.dumps({"name": name, "config": config}).encode())
        return self._check_project(run, "run")

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
        context manager, which flushes and closes it on exit (`TraceStream.close`). The trace is
        created at once and kept: where every batch is refused it is left on the server empty and
        closed (not live), the refusal raised to the caller."""
        trace_id = self.create_trace(name, **trace_fields)["id"]
        return TraceStream(self, trace_id, batch_size=batch_size, flush_interval=flush_interval)


class TraceStream:
    """Buffers events and edges of one trace and sends them in batches from the caller's thread.
    `close()` (or leaving the `with` block) sends what is left and tells the server the stream has
    ended; queuing an event or edge after that raises ValueError."""

    def __init__(self, client: SwarmscopeClient, trace_id: int, *, batch_size: int = 500, flush_interval: float = 0.5):
        self.client, self.trace_id = client, trace_id
        self.batch_size, self.flush_interval = batch_size, flush_interval
        self._events: list[dict[str, Any]] = []
        self._edges: list[dict[str, str]] = []
        self._last_flush = time.monotonic()
        self._lock = threading.Lock()
        self.closed = False

    def event(self, **fields: Any) -> None:
        """Queue one event: `id`, `t` (s from trace start), `type`, `agent`, and optional fields.
        Use `from_` for the `from` field."""
        if "from_" in fields:
            fields["from"] = fields.pop("from_")
        with self._lock:
            self._check_open()
            self._events.append(fields)
        self._maybe_flush()

    def edge(self, src: str, dst: str, type: str) -> None:
        with self._lock:
            self._check_open()
            self._edges.append({"src": src, "dst": dst, "type": type})
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if len(self._events) >= self.batch_size or time.monotonic() - self._last_flush >= self.flush_interval:
            self.flush()

    def flush(self) -> None:
        """Send the buffered events and edges as one batch. Where the send fails for a reason
        that may pass (a network error, a timeout, a 5xx or 429 after the client's retries; the
        exception propagates) they go back to the front of the buffer, in order, so the next flush
        or `close` sends them again: safe even when the server stored the batch and only its
        answer was lost, as a re-sent event (same id and content) is a no-op. A batch the server
        refused (another 4xx: SwarmscopeError naming the bad event) is not kept: it cannot pass."""
        with self._lock:
            events, edges = self._events, self._edges
            self._events, self._edges = [], []
            self._last_flush = time.monotonic()
        if not (events or edges):
            return
        try:
            self.client.send_batch(self.trace_id, events, edges=edges)
        except SwarmscopeError as exc:
            if _may_pass(exc):
                self._requeue(events, edges)
            raise
        except BaseException:
            self._requeue(events, edges)
            raise

    def _requeue(self, events: list[dict[str, Any]], edges: list[dict[str, str]]) -> None:
        """Put a batch whose send failed back before what was queued meanwhile."""
        with self._lock:
            self._events[:0], self._edges[:0] = events, edges

    def _check_open(self) -> None:
        if self.closed:
            raise ValueError(f"the stream into trace {self.trace_id} is closed")

    def close(self) -> None:
        """Send what is buffered, then tell the server the stream has ended (`close_trace`): the
        trace's live state clears at once. A second call does nothing.

        Where the server refuses the last batch (a 4xx but 429: it cannot pass), the stream is
        closed all the same and then that SwarmscopeError is raised; the trace stays on the server,
        closed, with what earlier batches stored (none: an empty trace), and is not deleted: a
        stream may have found a trace that was there before (`source_id`), and deleting is the
        trace's owner's call. Where the send fails for a reason that may pass (as in `flush`), or
        the close itself fails, the error is raised and the stream stays open, so a retry sends the
        rest."""
        with self._lock:  # no event slips in between the last flush and the close
            if self.closed:
                return
            self.closed = True
        refused: SwarmscopeError | None = None
        try:
            try:
                self.flush()
            except SwarmscopeError as exc:
                if _may_pass(exc):
                    raise
                refused = exc
            self.client.close_trace(self.trace_id)
        except BaseException:
            self.closed = False
            raise
        if refused is not None:
            raise refused

    def __enter__(self) -> TraceStream:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        """Close the stream; leaving with an exception, a failure to close does not hide it."""
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the block's own exception is the one to see
            pass


def _may_pass(exc: SwarmscopeError) -> bool:
    """Whether a refused request may pass when sent again: a 5xx or a 429 (after the retries)."""
    return exc.status >= 500 or exc.status == 429


#: The name to use: `Client()` reads its settings from the environment.
Client = SwarmscopeClient
