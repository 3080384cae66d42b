"""Websocket hijacking and revocation against the real server (`manage.py up`: Daphne + embedded
Redis), with a websocket client sending what a browser would: a logged-in session cookie and the
page's Origin. The in-process variants of every case are tests/web/test_socket_security.py."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import re
import signal
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import websockets

from swarmscope.client import SwarmscopeClient
from tests.servers import app_env, first_start_password, free_port, manage, start, stop, wait_http

pytestmark = [pytest.mark.processes, pytest.mark.timeout(240)]


def login(base: str, password: str) -> str:
    """Log in as the local admin through the login form; the session cookie's value."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base + "/accounts/login/", timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": "admin", "password": password, "csrfmiddlewaretoken": csrf})
    opener.open(urllib.request.Request(base + "/accounts/login/", data=form.encode()), timeout=30).read()
    return next(c.value for c in jar if c.name == "sessionid")


async def first_message(url: str, **kw) -> dict:
    async with websockets.connect(url, open_timeout=30, **kw) as ws:
        return json.loads(await asyncio.wait_for(ws.recv(), 30))


async def refused_status(url: str, **kw) -> int | None:
    try:
        async with websockets.connect(url, open_timeout=30, **kw):
            return None
    except websockets.InvalidStatus as exc:
        return exc.response.status_code


def test_hijacks_are_refused_and_a_revoked_token_is_closed_at_once(tmp_path):
    env = app_env(tmp_path / "data")
    port = free_port()
    log = tmp_path / "up.log"
    up = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker"], env, log)
    try:
        base, ws_base = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}"
        wait_http(base + "/", up, log)
        password = first_start_password(env)
        token = manage("create_token", "admin", env=env).stdout.strip()
        trace = SwarmscopeClient(base, token).create_trace("secret run", system="tests")
        url = f"{ws_base}/ws/traces/{trace['id']}/"
        cookie = {"Cookie": f"sessionid={login(base, password)}"}
        redis_url = (Path(env["SWARMSCOPE_DATA_DIR"]) / "redis" / "url").read_text().strip()

        async def checks():
            # The app's own page (same scheme, host and port) reads the trace with its session.
            own = await first_message(url, origin=base, additional_headers=cookie)
            assert own["type"] == "snapshot"
            # Any other page, on another port of the same host, or with no Origin: 403.
            assert await refused_status(url, origin=f"http://127.0.0.1:{port + 1}", additional_headers=cookie) == 403
            assert await refused_status(url, origin=f"http://localhost:{port}", additional_headers=cookie) == 403
            assert await refused_status(url, additional_headers=cookie) == 403
            # A bogus token never falls back to the cookie: told why and closed with 4401.
            async with websockets.connect(url + "?token=x", origin=base, additional_headers=cookie) as ws:
                assert json.loads(await ws.recv()) == {"type": "error", "message": "invalid or revoked API token"}
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await ws.recv()
                assert closed.value.rcvd.code == 4401
            # A script's token socket (no Origin) works, and is closed when the token is revoked.
            async with websockets.connect(f"{url}?token={token}") as ws:
                assert json.loads(await ws.recv())["type"] == "snapshot"
                code = (
                    "import time; from webapp.accounts.models import ApiToken, hash_token; "
                    "from webapp.accounts.services import do_revoke_token; "
                    f"do_revoke_token(ApiToken.objects.get(token_hash=hash_token({token!r}))); print(time.time())"
                )
                revoke = asyncio.create_task(
                    asyncio.to_thread(manage, "shell", "-c", code, env={**env, "REDIS_URL": redis_url})
                )
                assert json.loads(await asyncio.wait_for(ws.recv(), 60)) == {
                    "type": "error",
                    "message": "API token revoked",
                }
                with pytest.raises(websockets.ConnectionClosed) as closed:
                    await asyncio.wait_for(ws.recv(), 10)
                closed_at = time.time()
                assert closed.value.rcvd.code == 4401
                result = await revoke
                assert result.returncode == 0, result.stderr
                delay = closed_at - float(result.stdout.split()[-1])
                print(f"closed {delay * 1000:.0f} ms after the revocation committed")
                assert delay < 1.0

        with ThreadPoolExecutor(1) as pool:  # a loop of its own (a Playwright fixture may own this one)
            pool.submit(asyncio.run, checks()).result(timeout=180)
    finally:
        stop(up, signal.SIGINT)
