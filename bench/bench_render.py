"""Benchmark: the trace debugger page's first render and pan/zoom in headless Chromium.

Serves the app as the browser tests do (`manage.py up --no-worker`: Daphne, embedded Redis, SQLite
in a temporary SWARMSCOPE_DATA_DIR), imports `synthetic_trace(300, 4000)`,
`synthetic_trace(1000, 20000)` and `synthetic_trace(301, 33000)` (the 33k-event, 301-agent case) with
`manage.py import_traces`, logs in once, then for each trace:

* first full render, `--runs` times in a fresh browser context (cold cache): milliseconds from
  navigation start (`performance.now()`, whose origin is the navigation) until
  `window.swarmscope.ready` has resolved and one `requestAnimationFrame` after it has run (sigma
  and the timeline draw in the frame after the page's render). Reported: median and max, with the
  snapshot request (resource timing) and the page's JavaScript (snapshot applied, views drawn, the
  timeline's canvas draws, the agent graph's sigma renders) as a breakdown. Targets: < 2 s (4,000
  events) and < 5 s (20,000 and 33,000 events).
* pan and zoom with the level of detail on (the default): a scripted 20-frame camera path on the
  timeline (`timeline.setWindow`, its x window, once per `requestAnimationFrame`, so it redraws
  every frame, edges included), and a mouse-driven one (wheel zooms and a drag, as a person
  pans). Frame time = interval between consecutive rAF timestamps; reported p95 and max. Target:
  p95 <= 150 ms.

Every figure is printed with the WebGL renderer string (WEBGL_debug_renderer_info); headless
Chromium renders WebGL (the agent graph's sigma) in software (SwiftShader), and the timeline is a 2D
canvas, so frame times are CPU-bound. The agent graph's sigma instance is reached by wrapping
`window.Sigma` in an init script; the timeline is `window.swarmscope.timeline`.

    .venv/bin/python bench/bench_render.py [--runs 5] [--frames 20] [--seed 0]

Environment: SWARMSCOPE_CHROMIUM (default /usr/bin/chromium). The server is stopped by process
group in `finally`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import signal
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, save_admin_session  # noqa: E402
from tests.servers import app_env, first_start_password, free_port, manage, start, stop, wait_http  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402

VIEWPORT = {"width": 1600, "height": 1000}
#: (agents, events, first-render target in ms)
SIZES = ((300, 4000, 2000.0), (1000, 20000, 5000.0), (301, 33000, 5000.0))
FRAME_TARGET_MS = 150.0
#: Above this many events the page's level of detail folds lanes (DEFAULT_LOD_THRESHOLD in
#: static/js/model/level_of_detail.js).
LOD_THRESHOLD = 5000
#: Bounds on every wait in the page, in ms.
PAGE_TIMEOUT_MS = 120_000
IMPORT_TIMEOUT_S = 600

#: Wraps `window.Sigma` (set by the vendor UMD build) so that every instance the page creates is
#: kept in `window.__benchSigmas`; and times the model's snapshot and view work once
#: `window.swarmscope` appears.
INIT_SCRIPT = """
(() => {
  let wrapped;
  Object.defineProperty(window, "Sigma", {
    configurable: true,
    get() { return wrapped; },
    set(Original) {
      wrapped = class extends Original {
        constructor(...args) {
          super(...args);
          (window.__benchSigmas ||= []).push(this);
          const render = this.render;
          const times = (window.__benchSigmaRenders ||= []);
          this.render = function (...a) {
            const t0 = performance.now();
            const out = render.apply(this, a);
            times.push([t0, performance.now() - t0]);
            return out;
          };
        }
      };
    },
  });
  const timings = (window.__benchTimings = {});
  const time = (object, name) => {
    const original = object[name];
    object[name] = function (...a) {
      const t0 = performance.now();
      const out = original.apply(this, a);
      (timings[name] ||= []).push([t0, performance.now() - t0]);
      return out;
    };
  };
  let app;
  Object.defineProperty(window, "swarmscope", {
    configurable: true,
    get() { return app; },
    set(value) {
      app = value;
      time(value.model, "applySnapshot");
      time(value.model, "view");
      // The timeline's canvas draws (one per frame that changed), kept like sigma's renders.
      const timeline = value.timeline;
      const draw = timeline._draw;
      const draws = (window.__benchTimelineDraws ||= []);
      timeline._draw = function (...a) {
        const t0 = performance.now();
        const out = draw.apply(this, a);
        draws.push([t0, performance.now() - t0]);
        return out;
      };
    },
  });
})();
"""

#: The timeline's view (nodes and edges of `model.view`) and what its last draw drew.
DRAWN_COUNTS_JS = """
const drawnCounts = () => {
  const t = window.swarmscope.timeline, view = t._view, s = t.debugState();
  return {nodes: view.nodes.size, edges: view.edges.size, drawn: s.drawn, visible_rows: s.visibleRows,
          lane_h: s.laneH};
};
"""

#: Resolves to the first-render figures of the page just navigated to (all in ms since navigation).
FIRST_RENDER_JS = """
async () => {
  %s
  await window.swarmscope.ready;
  const readyAt = performance.now();
  await new Promise((resolve) => requestAnimationFrame(resolve));
  const renderedAt = performance.now();
  const snapshot = performance.getEntriesByType("resource").find((e) => e.name.includes("/snapshot"));
  const sum = (rows) => (rows || []).reduce((n, [, ms]) => n + ms, 0);
  const nav = performance.getEntriesByType("navigation")[0];
  return {
    first_render_ms: renderedAt, ready_ms: readyAt,
    html_done_ms: nav ? nav.responseEnd : null,
    dom_content_loaded_ms: nav ? nav.domContentLoadedEventEnd : null,
    snapshot_start_ms: snapshot ? snapshot.startTime : null,
    snapshot_wait_ms: snapshot ? snapshot.responseStart - snapshot.requestStart : null,
    snapshot_done_ms: snapshot ? snapshot.responseEnd : null,
    snapshot_kib: snapshot ? snapshot.encodedBodySize / 1024 : null,
    apply_snapshot_ms: sum(window.__benchTimings.applySnapshot),
    view_ms: sum(window.__benchTimings.view),
    sigma_render_ms: sum((window.__benchSigmaRenders || []).filter(([t0]) => t0 <= renderedAt)),
    timeline_draw_ms: sum((window.__benchTimelineDraws || []).filter(([t0]) => t0 <= renderedAt)),
    events: window.swarmscope.eventCount(),
    lanes: document.querySelectorAll("[data-testid=lane]").length,
    ...drawnCounts(),
  };
}
""" % DRAWN_COUNTS_JS.strip()

#: The WebGL renderer string of this browser (what draws the timeline).
RENDERER_JS = """
() => {
  const gl = document.createElement("canvas").getContext("webgl");
  if (!gl) return "no WebGL";
  const info = gl.getExtension("WEBGL_debug_renderer_info");
  return info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
}
"""

#: Scripted pan and zoom: `frames` x windows, one set per rAF (`timeline.setWindow`; the timeline
#: redraws in that frame); resolves to the rAF intervals that each contain one redraw, and the
#: timeline's own draw times (CPU side) meanwhile.
CAMERA_PATH_JS = """
async (frames) => {
  const timeline = window.swarmscope.timeline;
  const [e0, e1] = timeline.extent;
  const full = e1 - e0, mid = (e0 + e1) / 2;
  // First half: zoom in to a fifth while drifting left; second half: pan right and zoom out a little.
  const state = (i) => {
    const p = i / (frames - 1);
    const zoomIn = Math.min(1, 2 * p), pan = Math.max(0, 2 * p - 1);
    const centre = mid - 0.2 * full * zoomIn + 0.45 * full * pan;
    const span = full * Math.pow(0.2, zoomIn) * Math.pow(2, pan);
    return [centre - span / 2, centre + span / 2];
  };
  const draws = window.__benchTimelineDraws;
  const before = draws.length;
  const stamps = await new Promise((resolve) => {
    const stamps = [];
    let i = 0;
    const step = (ts) => {
      stamps.push(ts);
      // setWindow in frames 0..frames-1; the timeline redraws each in the frame after: stamps 0..frames+1.
      if (stamps.length === frames + 2) return resolve(stamps);
      if (i < frames) timeline.setWindow(...state(i++));
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  });
  const intervals = stamps.slice(2).map((t, k) => t - stamps[k + 1]);
  timeline.fit();
  return {intervals, renders: draws.slice(before).map(([, ms]) => ms)};
}
"""

#: Starts recording rAF timestamps and the timeline's draw times; `__benchStopFrames()` returns them.
RECORD_FRAMES_JS = """
() => {
  const stamps = [];
  let running = true;
  const before = window.__benchTimelineDraws.length;
  const step = (ts) => { stamps.push(ts); if (running) requestAnimationFrame(step); };
  requestAnimationFrame(step);
  window.__benchStopFrames = () => {
    running = false;
    const renders = window.__benchTimelineDraws.slice(before);
    return {intervals: stamps.slice(1).map((t, k) => t - stamps[k]), renders: renders.map(([, ms]) => ms),
            renderStarts: renders.map(([t0]) => t0), stamps};
  };
}
"""


def percentile(values: list[float], q: float) -> float:
    """The `q` quantile (0..1) of `values`, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def load() -> str:
    """The 1-minute load average: other work on these few CPUs slows software WebGL a lot."""
    return f"load average {os.getloadavg()[0]:.2f}"


def machine() -> str:
    """nproc, CPU model and RAM of this machine, one line."""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown CPU",
    )
    kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    return f"{os.cpu_count()} CPUs ({model}), {kib / 2**20:.0f} GiB RAM, python {platform.python_version()}"


class RunningApp:
    """The app served by `manage.py up` on a free loopback port; its admin password and an API token."""

    def __init__(self, url: str, password: str, token: str, env: dict[str, str]):
        self.url, self.password, self.token, self.env = url, password, token, env

    def import_file(self, path: Path) -> int:
        """`manage.py import_traces path`; returns the new trace's id."""
        result = manage("import_traces", str(path), env=self.env, timeout=IMPORT_TIMEOUT_S)
        match = re.search(r": imported as trace (\d+)", result.stdout)
        if result.returncode != 0 or not match:
            raise RuntimeError(
                f"import_traces {path.name}: {result.returncode}\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
            )
        return int(match.group(1))


@contextmanager
def running_app(work: Path) -> Iterator[RunningApp]:
    """Serve the app from `work` (its data folder and log); stops the whole process group on exit."""
    env = app_env(work / "data", SWARMSCOPE_LOG_LEVEL="WARNING")
    port = free_port()
    log = work / "up.log"
    process = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker"], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", process, log)
        password = first_start_password(env)  # written before the server starts
        result = manage("create_token", "admin", env=env)
        if result.returncode != 0:
            raise RuntimeError(f"create_token: {result.stderr[-2000:]}")
        yield RunningApp(f"http://127.0.0.1:{port}", password, result.stdout.strip().splitlines()[-1], env)
    finally:
        stop(process, signal.SIGINT)


@contextmanager
def logged_in_browser(app: RunningApp, work: Path) -> Iterator[tuple[object, str]]:
    """Headless Chromium and the path of a saved, logged-in admin session."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser, save_admin_session(browser, app.url, app.password, str(work / "state.json"))
        finally:
            browser.close()


def new_page(browser, state: str, init_script: str = INIT_SCRIPT):
    """A fresh context (cold cache) running `init_script` in every page; console errors are collected
    on `page.errors`."""
    context = browser.new_context(storage_state=state, viewport=VIEWPORT)
    context.add_init_script(init_script)
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    return context, page


def first_render(browser, state: str, url: str) -> dict:
    context, page = new_page(browser, state)
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_function("() => window.swarmscope !== undefined")
        figures = page.evaluate(FIRST_RENDER_JS)
        if page.errors:
            raise RuntimeError(f"console errors on {url}: {page.errors[:5]}")
        return figures
    finally:
        context.close()


def pan_zoom(browser, state: str, url: str, frames: int, runs: int) -> dict[str, dict]:
    """The scripted camera path (`runs` times, frames pooled) and a mouse-driven pan/zoom on one loaded page."""
    context, page = new_page(browser, state)
    try:
        page.goto(url)
        page.wait_for_function("() => window.swarmscope !== undefined")
        page.evaluate("window.swarmscope.ready.then(() => new Promise((r) => requestAnimationFrame(r)))")
        page.evaluate("new Promise((r) => setTimeout(r, 500))")  # let the first frames settle
        lod = page.evaluate(
            "(() => { %s return {lanes: document.querySelectorAll('[data-testid=lane]').length, "
            "agents: window.swarmscope.model.agents.size, ...drawnCounts()}; })()" % DRAWN_COUNTS_JS.strip()
        )
        scripted = {"intervals": [], "renders": [], "p95_per_run": []}
        for _ in range(runs):
            one = page.evaluate(CAMERA_PATH_JS, frames)
            scripted["intervals"] += one["intervals"]
            scripted["renders"] += one["renders"]
            scripted["p95_per_run"].append(percentile(one["intervals"], 0.95))
            page.evaluate("new Promise((r) => setTimeout(r, 300))")

        box = page.get_by_test_id("timeline-canvas").bounding_box()
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.evaluate(RECORD_FRAMES_JS)
        page.mouse.move(cx, cy)
        for _ in range(5):  # zoom in
            page.mouse.wheel(0, -240)
            page.wait_for_timeout(40)
        page.mouse.down()
        for k in range(1, 16):  # drag left by 600 px
            page.mouse.move(cx - 40 * k, cy - 4 * k)
            page.wait_for_timeout(16)
        page.mouse.up()
        for _ in range(3):  # zoom out a little
            page.mouse.wheel(0, 240)
            page.wait_for_timeout(40)
        page.wait_for_timeout(600)  # the last wheel animation and the refresh after the drag
        mouse = page.evaluate("window.__benchStopFrames()")
        # Frame time of each frame that drew: the rAF interval in which a timeline draw started (idle
        # frames between inputs are not frame times of the interaction).
        starts, stamps = mouse.pop("renderStarts"), mouse.pop("stamps")
        drawn = [
            stamps[k + 1] - stamps[k]
            for k in range(len(stamps) - 1)
            if any(stamps[k] <= t0 < stamps[k + 1] for t0 in starts)
        ]
        mouse["intervals"] = drawn
        if page.errors:
            raise RuntimeError(f"console errors on {url}: {page.errors[:5]}")
        return {"lod": lod, "scripted": scripted, "mouse": mouse}
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--frames", type=int, default=20, help="frames of the scripted pan and zoom")
    parser.add_argument("--pan-runs", type=int, default=3, help="scripted pan and zoom runs (frames pooled)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write every raw figure to this file")
    args = parser.parse_args()

    # SIGTERM (run_all's timeout) unwinds through the `finally` blocks that stop the server and browser.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"{machine()}; {load()}", flush=True)
    raw: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="swarmscope-bench-render-") as tmp:
        work = Path(tmp)
        with running_app(work) as app, logged_in_browser(app, work) as (browser, state):
            version = browser.version
            probe, page = new_page(browser, state)
            renderer = page.evaluate(RENDERER_JS)
            probe.close()
            print(
                f"Chromium {version} headless; WebGL renderer: {renderer}; viewport "
                f"{VIEWPORT['width']}x{VIEWPORT['height']}",
                flush=True,
            )
            raw["renderer"], raw["chromium"] = renderer, version
            for agents, events, target in SIZES:
                trace = synthetic_trace(agents, events, args.seed)
                path = work / f"synthetic-{agents}a-{events}e.json"
                path.write_text(json.dumps(trace.to_dict()), encoding="utf-8")
                trace_id = app.import_file(path)
                url = f"{app.url}/traces/{trace_id}/"
                print(
                    f"\n{path.name}: {len(trace.agents)} agents, {len(trace.events)} events, {len(trace.edges)} edges",
                    flush=True,
                )

                runs = [first_render(browser, state, url) for _ in range(args.runs)]
                for r in runs:
                    if r["events"] != len(trace.events):
                        raise RuntimeError(f"the page shows {r['events']} events, not {len(trace.events)}")
                print(f"  ({load()} after the first-render runs)")
                times = [r["first_render_ms"] for r in runs]
                median = statistics.median(times)
                print(
                    f"  first render ({args.runs} runs, ms since navigation): median {median:.0f}, "
                    f"max {max(times):.0f}; target < {target:.0f}: {'met' if median < target else 'MISSED'} "
                    f"[{renderer}]"
                )
                print("  runs: " + ", ".join(f"{t:.0f}" for t in times))
                keys = (
                    "html_done_ms",
                    "dom_content_loaded_ms",
                    "snapshot_start_ms",
                    "snapshot_wait_ms",
                    "snapshot_done_ms",
                    "snapshot_kib",
                    "apply_snapshot_ms",
                    "view_ms",
                    "sigma_render_ms",
                    "timeline_draw_ms",
                    "ready_ms",
                )
                print(
                    "  breakdown (medians): "
                    + ", ".join(
                        f"{k.removesuffix('_ms')} {statistics.median(r[k] for r in runs):.0f}"
                        for k in keys
                        if runs[0][k] is not None
                    )
                )
                print(
                    f"  drawn: {runs[0]['lanes']} lanes ({runs[0]['lane_h']} px, rows {runs[0]['visible_rows']} on "
                    f"screen), {runs[0]['nodes']} timeline nodes, {runs[0]['edges']} timeline edges; first "
                    f"frame drew {runs[0]['drawn']}",
                    flush=True,
                )

                moves = pan_zoom(browser, state, url, args.frames, args.pan_runs)
                lod = moves["lod"]
                state_of_lod = "on" if events > LOD_THRESHOLD else f"on, inactive up to {LOD_THRESHOLD:,} events"
                print(
                    f"  pan/zoom (level of detail {state_of_lod}: "
                    f"{lod['lanes']} lanes for {lod['agents']} agents, {lod['nodes']} nodes, {lod['edges']} edges)"
                )
                print(f"  ({load()} after the pan/zoom)")
                for name, label in (
                    ("scripted", f"scripted {args.frames}-frame camera path x {args.pan_runs} (edges drawn)"),
                    ("mouse", "mouse wheel + drag"),
                ):
                    m = moves[name]
                    if not m["intervals"]:
                        print(f"    {label}: no frames drawn")
                        continue
                    p95 = percentile(m["intervals"], 0.95)
                    verdict = "met" if p95 <= FRAME_TARGET_MS else "MISSED"
                    print(
                        f"    {label}: {len(m['intervals'])} frames, frame time p50 "
                        f"{percentile(m['intervals'], 0.5):.0f} ms, p95 {p95:.1f} ms, "
                        f"max {max(m['intervals']):.0f} ms; "
                        f"timeline draw p95 {percentile(m['renders'], 0.95) if m['renders'] else 0:.0f} ms "
                        f"({len(m['renders'])} renders); target p95 <= {FRAME_TARGET_MS:.0f} ms: {verdict} "
                        f"[{renderer}]",
                        flush=True,
                    )
                    if name == "scripted":
                        print("      p95 of each run: " + ", ".join(f"{v:.0f}" for v in m["p95_per_run"]) + " ms")
                raw[path.name] = {"first_render": runs, "pan_zoom": moves}
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
