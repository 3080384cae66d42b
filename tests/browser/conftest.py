"""Browser tests: the real app (`manage.py up`: Daphne + embedded Redis) driven in Debian's Chromium.

Skipped with a reason when /usr/bin/chromium is absent; SWARMSCOPE_REQUIRE_BROWSER=1 (CI) makes
that a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import _require
from tests.servers import (
    app_env,
    first_start_password,
    free_port,
    manage,
    start,
    start_worker,
    stop,
    wait_http,
)

CHROMIUM = os.environ.get("SWARMSCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        message = f"Chromium not found at {CHROMIUM} (install Debian's 'chromium' package)"
        if _require("SWARMSCOPE_REQUIRE_BROWSER"):
            pytest.fail(message + "; SWARMSCOPE_REQUIRE_BROWSER=1 makes this a failure")
        pytest.skip(message)
    return CHROMIUM


class App:
    """A running app: its base URL, the admin's credentials, an API token, and its environment."""

    def __init__(self, url: str, password: str, token: str, env: dict[str, str]):
        self.url, self.password, self.token, self.env = url, password, token, env

    def api(self, path: str, body=None, method: str | None = None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method or ("POST" if data else "GET"),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def start_worker(self, queue: str, log: Path):
        """A Celery worker of this app's `queue`, with the app's environment (data folder, Redis)."""
        redis_url = (Path(self.env["SWARMSCOPE_DATA_DIR"]) / "redis" / "url").read_text().strip()
        return start_worker(queue, {**self.env, "REDIS_URL": redis_url}, log)

    def import_files(self, *paths: Path) -> dict[str, int]:
        """Import through the management command; returns {file name: trace id}."""
        result = manage("import_traces", *map(str, paths), env=self.env, timeout=300)
        ids = {}
        for line in result.stdout.splitlines():
            match = re.match(r"(.+): imported as trace (\d+)", line)
            if match:
                ids[Path(match.group(1)).name] = int(match.group(2))
        assert ids, f"import_traces imported nothing:\n{result.stdout}\n{result.stderr[-3000:]}"
        return ids


@pytest.fixture(scope="session")
def app(chromium_path, tmp_path_factory) -> App:
    """The app of the browser tests, on the `sim` backend only: the live LLM endpoint of the test run
    (SWARMSCOPE_OPENAI_*) is not passed on, so its dialogs default to `sim` wherever the tests run; a
    test on an LLM backend starts its own app with the endpoint (test_counterfactual.openai_app)."""
    root = tmp_path_factory.mktemp("app")
    env = {k: v for k, v in app_env(root / "data").items() if not k.startswith("SWARMSCOPE_OPENAI_")}
    port = free_port()
    log = root / "up.log"
    process = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker"], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", process, log)
        password = first_start_password(env)
        token = manage("create_token", "admin", env=env).stdout.strip()
        yield App(f"http://127.0.0.1:{port}", password, token, env)
    finally:
        stop(process, signal.SIGINT)


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


def save_admin_session(browser, url: str, password: str, path: str) -> str:
    """Log in as the local admin through the login page and save the session to `path`."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(url + "/accounts/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", password)
    page.click("form.stack button")
    page.wait_for_url(url + "/")
    context.storage_state(path=path)
    context.close()
    return path


@pytest.fixture(scope="session")
def storage_state(app, browser, tmp_path_factory) -> str:
    """A logged-in admin session, saved once for every page of the run."""
    return save_admin_session(browser, app.url, app.password, str(tmp_path_factory.mktemp("state") / "state.json"))


@pytest.fixture
def page(browser, storage_state):
    """A logged-in page that fails the test on any console error or uncaught exception."""
    context = browser.new_context(storage_state=storage_state, viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.console_errors = errors
    yield page
    context.close()
    assert errors == [], f"console errors: {errors}"
