"""The stdlib SDK against a local HTTP server (tests/servers.py is for the app; this one scripts
answers): 429 waits for Retry-After and resends, other 4xx fail at once with the body."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from swarmscope.client import SwarmscopeClient, SwarmscopeError


@pytest.fixture
def scripted():
    """A server that answers each POST with the next (status, headers, body) of `answers`."""
    answers, seen = [], []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            seen.append((time.monotonic(), self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            status, headers, body = answers.pop(0)
            payload = json.dumps(body).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", answers, seen
    server.shutdown()


def test_a_rate_limited_batch_waits_for_retry_after_and_is_sent_again(scripted):
    url, answers, seen = scripted
    answers += [(429, {"Retry-After": "1"}, {"error": "over the ingestion rate"}), (200, {}, {"added": 1})]
    result = SwarmscopeClient(url, "ssk_x").send_batch(7, [{"id": "e1", "t": 0, "type": "message", "agent": "a"}])
    assert result == {"added": 1}
    assert len(seen) == 2 and seen[0][1:] == seen[1][1:]  # the same batch, to the same place
    assert seen[1][0] - seen[0][0] >= 0.9


def test_a_bad_request_fails_at_once_with_the_servers_reason(scripted):
    url, answers, seen = scripted
    answers += [(400, {}, {"error": "events[0].t: must be a number", "field": "events[0].t"})]
    with pytest.raises(SwarmscopeError) as raised:
        SwarmscopeClient(url, "ssk_x").send_batch(7, [{"id": "e1", "t": "x", "type": "message", "agent": "a"}])
    assert raised.value.status == 400 and raised.value.body["field"] == "events[0].t" and len(seen) == 1
