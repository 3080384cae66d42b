"""A live socket whose reader stops, against the real server (`manage.py up`: Daphne + embedded
Redis): it is closed with 4008 once SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES are left unsent, and a
reconnect with `?seq=N` gets what it missed (webapp.web.socket_buffers)."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import websockets

from swarmscope.client import SwarmscopeClient
from tests.servers import app_env, free_port, manage, start, stop, wait_http

pytestmark = [pytest.mark.processes, pytest.mark.timeout(240)]

BATCHES, EVENTS, CHARS = 16, 5, 150_000  # deltas of ~750 kB (under a socket message's 800 kB), 12 MB in all


def test_a_reader_that_stops_is_closed_with_4008_and_resumes(tmp_path):
    env = app_env(tmp_path / "data", SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES=str(256 * 1024))
    port = free_port()
    log = tmp_path / "up.log"
    up = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker"], env, log)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/", up, log)
        token = manage("create_token", "admin", env=env).stdout.strip()
        client = SwarmscopeClient(base, token)
        trace = client.create_trace("slow reader", system="tests")
        url = f"ws://127.0.0.1:{port}/ws/traces/{trace['id']}/?token={token}"

        def push(batch: int) -> int:
            events = [
                {"id": f"e{batch}-{i}", "t": float(batch), "type": "message", "agent": "a", "content": "x" * CHARS}
                for i in range(EVENTS)
            ]
            return client.send_batch(trace["id"], events)["seq"]

        async def checks():
            slow = socket.socket()
            slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window: the server holds the rest
            slow.connect(("127.0.0.1", port))
            async with websockets.connect(url, sock=slow, max_queue=1, max_size=None, open_timeout=30) as ws:
                assert json.loads(await ws.recv())["type"] == "snapshot"
                last = 0
                for batch in range(BATCHES):  # not reading meanwhile
                    last = await asyncio.to_thread(push, batch)
                got = []
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    while True:
                        got.append(json.loads(await asyncio.wait_for(ws.recv(), 30)))
                assert closed.value.rcvd is not None, "dropped without a close frame"
                assert (
                    closed.value.rcvd.code == 4008 and "SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES" in closed.value.rcvd.reason
                )
                seen = max((m["seq"] for m in got if "seq" in m), default=0)
                assert seen < last  # it was dropped before everything was sent
            async with websockets.connect(f"{url}&seq={seen}", max_size=None, open_timeout=30) as ws:
                caught_up = json.loads(await asyncio.wait_for(ws.recv(), 30))
                assert caught_up["seq"] == last  # one delta, or a referral to load the state over HTTP

        with ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, checks()).result(timeout=200)
    finally:
        stop(up, signal.SIGINT)
