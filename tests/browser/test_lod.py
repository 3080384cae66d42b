"""A huge trace's page at a small size (SWARMSCOPE_LOD_EVENTS=2000, a 3,000-event trace): the
overview is drawn with no events held, zooming in fetches and draws the window's events (and the
store holds exactly those), and the transcript's search finds a hit outside the window on the
server and jumps to it."""

from __future__ import annotations

import json
import signal
import sys

import pytest

from tests.browser.conftest import save_admin_session
from tests.browser.page_waits import open_trace_page, wait_until
from tests.servers import app_env, first_start_password, free_port, manage, start, stop, wait_http
from tests.synthetic import synthetic_trace

THRESHOLD = 2000


@pytest.fixture(scope="module")
def lod_app(chromium_path, tmp_path_factory):
    """An app whose level-of-detail threshold is THRESHOLD events, with one 3,000-event trace."""
    from tests.browser.conftest import App

    root = tmp_path_factory.mktemp("lod-app")
    env = {k: v for k, v in app_env(root / "data").items() if not k.startswith("SWARMSCOPE_OPENAI_")}
    env["SWARMSCOPE_LOD_EVENTS"] = str(THRESHOLD)
    port = free_port()
    log = root / "up.log"
    process = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker"], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", process, log)
        password = first_start_password(env)
        token = manage("create_token", "admin", env=env).stdout.strip()
        app = App(f"http://127.0.0.1:{port}", password, token, env)
        trace = synthetic_trace(40, 3000, seed=2)
        path = root / "huge.json"
        path.write_text(json.dumps(trace.to_dict()), encoding="utf-8")
        (trace_id,) = app.import_files(path).values()
        yield app, trace, trace_id
    finally:
        stop(process, signal.SIGINT)


@pytest.fixture
def lod_page(browser, lod_app, tmp_path):
    app, _, _ = lod_app
    state = save_admin_session(browser, app.url, app.password, str(tmp_path / "state.json"))
    context = browser.new_context(storage_state=state, viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert errors == [], f"console errors: {errors}"


def test_overview_then_detail_on_zoom_then_search_anywhere(lod_app, lod_page):
    app, trace, trace_id = lod_app
    page = lod_page
    open_trace_page(page, app, trace_id)
    assert page.evaluate("() => document.body.dataset.lod") == "server"
    first = wait_until(page, "() => { const s = window.swarmscope.timeline.debugState(); return s.drawn && s; }")
    assert first["drawn"]["overviewCells"] > 0
    assert page.evaluate("() => window.swarmscope.eventCount()") == 0  # the overview only
    assert page.get_by_test_id("transcript-window-note").inner_text() == "showing events of the visible window"

    # Zoom to a tenth of the trace: few enough events, fetched and drawn in detail.
    times = sorted(e.t for e in trace.events)
    a, b = times[1000], times[1200]
    page.evaluate("([a, b]) => window.swarmscope.timeline.setWindow(a, b)", [a, b])
    wait_until(page, "() => document.body.dataset.windowEvents !== undefined")
    held = page.evaluate(
        "() => { const s = window.swarmscope.server(); const m = window.swarmscope.model;"
        " return {loaded: s.loaded, ids: [...m.events.keys()]}; }"
    )
    loaded = held["loaded"]
    assert loaded["t0"] <= a and b <= loaded["t1"] and not loaded["truncated"]
    assert sorted(held["ids"]) == sorted(e.id for e in trace.events if loaded["t0"] <= e.t <= loaded["t1"])
    drawn = wait_until(
        page, "() => window.swarmscope.timeline.drawnItems().filter((d) => d.kind === 'event').map((d) => d.eventId)"
    )
    assert set(drawn) <= set(held["ids"]) and {e.id for e in trace.events if a < e.t < b} & set(drawn)

    # Search: a hit outside the loaded window, found on the server; Enter goes there.
    outside = next(e for e in trace.events if e.t > loaded["t1"] and e.type == "tool_result" and e.tool)
    page.get_by_test_id("transcript-search").fill(outside.id)
    page.get_by_test_id("transcript-search").press("Enter")
    wait_until(page, "(id) => document.body.dataset.selected === id", outside.id)
    assert page.evaluate("(id) => window.swarmscope.model.events.has(id)", outside.id)
    assert "in the trace" in page.get_by_test_id("transcript-search-count").inner_text()

    # A deep link to an event outside any loaded window: found on the server, its window loaded.
    late = max(trace.events, key=lambda e: e.t)
    page.goto(f"{app.url}/traces/{trace_id}/?event={late.id}")
    wait_until(page, "(id) => document.body.dataset.selected === id", late.id)
    assert page.evaluate("() => window.swarmscope.server().loaded !== null")
