"""Benchmark: huge traces' pages with the server-side level of detail (webapp/traces/lod.py).

Serves the app as bench_render.py does (`manage.py up --no-worker`, SQLite in a temporary data
folder), seeds `synthetic_trace(500, 100_000)` and `synthetic_trace(1000, 1_000_000)` straight into
the database with the ORM's `bulk_create` (one trace row, its agents, events, edges and labels at
seq 1; computed metrics stored once, as a worker would after an import), then:

* server: the overview (`/overview/?bins=200`), a window of about 2,000 events (`/window/`), a
  search (`/search/?q=conflicting`) and the page's snapshot (`/snapshot/lod/`), ms over HTTP on
  loopback: the first request (the overview is computed, then cached per seq), then the median
  of 3 more.
* page, `--runs` times in a fresh browser context: *overview drawn* (ms from navigation start until
  the timeline has drawn the overview's bins, `debugState().drawn.overviewCells > 0`), *click
  answered* (a lane name clicked right then, until `body[data-selected]` names that agent), their
  sum as *time to interactive*; *zoom to detail* (the timeline's window set to about 2,000 events
  until they are fetched and drawn, including the page's 150 ms rest before it fetches); and the
  RSS of Chromium's processes (sum, and the largest), read with psutil after the zoom.

The renderer string (navigator.userAgent and WEBGL_debug_renderer_info) is printed with the
figures: headless Chromium renders WebGL in software (SwiftShader); the timeline is a 2D canvas.

    .venv/bin/python bench/bench_lod.py [--sizes 100000,1000000] [--runs 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_render import load, logged_in_browser, machine, running_app  # noqa: E402
from tests.browser.page_waits import wait_until  # noqa: E402

#: events -> agents of the synthetic trace
AGENTS = {100_000: 500, 1_000_000: 1000}
VIEWPORT = {"width": 1600, "height": 1000}
DETAIL_EVENTS = 2000
PAGE_TIMEOUT_MS = 300_000

RENDERER_JS = """() => {
  const gl = document.createElement("canvas").getContext("webgl");
  const info = gl && gl.getExtension("WEBGL_debug_renderer_info");
  const renderer = info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : String(gl && gl.getParameter(gl.RENDERER));
  return {ua: navigator.userAgent, renderer};
}"""

#: Overview drawn, then a lane name clicked and its selection answered (ms from navigation start).
INTERACTIVE_JS = """async () => {
  const until = (f) => new Promise((resolve) => {
    const tick = () => { const v = f(); if (v) resolve(v); else requestAnimationFrame(tick); };
    tick();
  });
  await until(() => window.swarmscope && document.body.dataset.lod === "server"
    && (window.swarmscope.timeline.debugState().drawn?.overviewCells ?? 0) > 0);
  const overview = performance.now();
  const lane = document.querySelector('[data-testid="lane"] .lane-name');
  const name = lane.closest("[data-agent]").dataset.agent;
  const clicked = performance.now();
  lane.click();
  await until(() => document.body.dataset.selected === `agent:${name}`);
  await new Promise((r) => requestAnimationFrame(() => r()));
  const answered = performance.now();
  return {overview_ms: overview, click_ms: answered - clicked, interactive_ms: answered,
    cells: window.swarmscope.timeline.debugState().drawn.overviewCells};
}"""

#: A window of about `n` events from the overview's counts, set on the timeline; ms until drawn.
ZOOM_JS = """async (n) => {
  const until = (f) => new Promise((resolve) => {
    const tick = () => { const v = f(); if (v) resolve(v); else requestAnimationFrame(tick); };
    tick();
  });
  const server = window.swarmscope.server();
  const [t0, t1] = server.extent();
  const mid = (t0 + t1) / 2;
  let lo = 0, hi = t1 - t0;
  for (let i = 0; i < 40; i += 1) {
    const span = (lo + hi) / 2;
    if (server.estimate(mid, mid + span) * 2 > n) hi = span; else lo = span;  // fetched: 2x the view
  }
  const start = performance.now();
  window.swarmscope.timeline.setWindow(mid, mid + lo);
  await until(() => document.body.dataset.windowEvents !== undefined
    && window.swarmscope.timeline.drawnItems().some((d) => d.kind === "event"));
  return {zoom_ms: performance.now() - start, window_events: Number(document.body.dataset.windowEvents),
    drawn_events: window.swarmscope.timeline.drawnItems().filter((d) => d.kind === "event").length};
}"""


def seed_into_database(agents: int, events: int, seed: int) -> dict:
    """(In a process with the app's environment) store `synthetic_trace(agents, events, seed)`
    with bulk_create; its id and the seconds each step took."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
    django.setup()
    from django.db import transaction

    from tests.synthetic import synthetic_trace
    from webapp.accounts.services import DEFAULT_PROJECT, do_get_or_create_project
    from webapp.traces import services
    from webapp.traces.models import Agent, Edge, Event, Label, Trace

    started = time.perf_counter()
    trace = synthetic_trace(agents, events, seed)
    made = time.perf_counter()
    chunk = 20_000
    with transaction.atomic():
        row = Trace.objects.create(
            project=do_get_or_create_project(DEFAULT_PROJECT),
            identity_key=f"bench-lod:{agents}:{events}:{seed}",
            source_format="native",
            source_id=f"synthetic-{agents}a-{events}e",
            name=f"synthetic {agents} agents, {events} events",
            system="synthetic",
            seq=1,
            event_count=len(trace.events),
            agent_count=len(trace.agents),
            total_tokens=sum(e.tokens or 0 for e in trace.events),
            duration_s=max(e.t_end or e.t for e in trace.events) - min(e.t for e in trace.events),
        )
        Agent.objects.bulk_create(
            [Agent(trace=row, seq=1, **{k: getattr(a, k) for k in services.AGENT_COLUMNS}) for a in trace.agents],
            batch_size=2000,
        )
        for start in range(0, len(trace.events), chunk):
            Event.objects.bulk_create(
                [
                    Event(trace=row, position=start + i, seq=1, **services.event_columns(e))
                    for i, e in enumerate(trace.events[start : start + chunk])
                ],
                batch_size=2000,
            )
        for start in range(0, len(trace.edges), chunk):
            Edge.objects.bulk_create(
                [Edge(trace=row, src=e.src, dst=e.dst, type=e.type, seq=1) for e in trace.edges[start : start + chunk]],
                batch_size=2000,
            )
        Label.objects.bulk_create(
            [
                Label(trace=row, seq=1, **{k: v for k, v in lb.to_dict().items() if k in services.LABEL_COLUMNS})
                for lb in trace.labels
            ]
        )
    stored = time.perf_counter()
    services.get_computed_metrics(row)
    return {
        "trace_id": row.pk,
        "events": len(trace.events),
        "edges": len(trace.edges),
        "agents": len(trace.agents),
        "synthesize_s": made - started,
        "insert_s": stored - made,
        "metrics_s": time.perf_counter() - stored,
    }


def seed(app, agents: int, events: int, seed_: int) -> dict:
    result = subprocess.run(
        [sys.executable, __file__, "--seed-into", str(agents), str(events), str(seed_)],
        env=app.env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if result.returncode != 0:
        raise RuntimeError(f"seeding failed: {result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def server_ms(app, path: str, runs: int = 3) -> tuple[float, float, int]:
    """ms of the first GET `path` (token auth; cold: the overview is cached afterwards), the median
    ms of `runs` more, and the answer's size in bytes."""
    times, size = [], 0
    for _ in range(runs + 1):
        request = urllib.request.Request(app.url + path, headers={"Authorization": f"Bearer {app.token}"})
        t0 = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as response:
            size = len(response.read())
        times.append((time.perf_counter() - t0) * 1000)
    return times[0], statistics.median(times[1:]), size


def chromium_rss_mib() -> tuple[float, float]:
    """Sum and largest RSS (MiB) of the Chromium processes under this one."""
    import psutil

    rss = [
        p.memory_info().rss
        for p in psutil.Process().children(recursive=True)
        if "chrom" in p.name().lower() or "headless_shell" in p.name().lower()
    ]
    return sum(rss) / 2**20, max(rss, default=0) / 2**20


def page_figures(browser, state: str, url: str) -> dict:
    context = browser.new_context(storage_state=state, viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(url, wait_until="commit")
        wait_until(page, "() => window.swarmscope !== undefined", timeout_s=PAGE_TIMEOUT_MS / 1000)
        figures = page.evaluate(INTERACTIVE_JS)
        figures.update(page.evaluate(ZOOM_JS, DETAIL_EVENTS))
        figures["rss_mib"], figures["rss_max_mib"] = chromium_rss_mib()
        if errors:
            raise RuntimeError(f"console errors on {url}: {errors[:5]}")
        return figures
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="event counts, comma-separated")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seed-into", nargs=3, type=int, metavar=("AGENTS", "EVENTS", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.seed_into:
        print(json.dumps(seed_into_database(*args.seed_into)))
        return
    print(machine(), "|", load(), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-lod-") as tmp, running_app(Path(tmp)) as app:
        seeded = {}
        for events in map(int, args.sizes.split(",")):
            agents = AGENTS.get(events, max(1, events // 200))
            seeded[events] = info = seed(app, agents, events, args.seed)
            print(
                f"\nseeded {info['events']} events, {info['agents']} agents, {info['edges']} edges: "
                f"synthesize {info['synthesize_s']:.1f} s, bulk insert {info['insert_s']:.1f} s, "
                f"metrics {info['metrics_s']:.1f} s",
                flush=True,
            )
            tid = info["trace_id"]
            overview = json.loads(
                urllib.request.urlopen(
                    urllib.request.Request(
                        f"{app.url}/api/traces/{tid}/overview/?bins=50",  # not the measured one: cached after
                        headers={"Authorization": f"Bearer {app.token}"},
                    ),
                    timeout=600,
                ).read()
            )
            mid = (overview["t0"] + overview["t1"]) / 2
            span = (overview["t1"] - overview["t0"]) * DETAIL_EVENTS / info["events"]
            for label, path in (
                ("overview ?bins=200", f"/api/traces/{tid}/overview/?bins=200"),
                (f"window ~{DETAIL_EVENTS} events", f"/api/traces/{tid}/window/?t0={mid}&t1={mid + span}&limit=10000"),
                ("search q=conflicting", f"/api/traces/{tid}/search/?q=conflicting&limit=200"),
                ("page snapshot (snapshot/lod/)", f"/api/traces/{tid}/snapshot/lod/"),
            ):
                cold, warm, size = server_ms(app, path)
                print(
                    f"  server {label}: first {cold:.0f} ms, then {warm:.0f} ms (median of 3), {size / 1024:.0f} KiB",
                    flush=True,
                )
            print(f"  overview lanes grouped by {overview['grouped_by']}: {len(overview['lanes'])} lanes", flush=True)
        with logged_in_browser(app, Path(tmp)) as (browser, state):
            context = browser.new_context(storage_state=state)
            page = context.new_page()
            page.goto(app.url + "/")
            info = page.evaluate(RENDERER_JS)
            context.close()
            print(f"\nChromium: {info['ua']}\nWebGL renderer: {info['renderer']}", flush=True)
            for events, seeded_info in seeded.items():
                url = f"{app.url}/traces/{seeded_info['trace_id']}/"
                runs = [page_figures(browser, state, url) for _ in range(args.runs)]

                def med(key: str, runs=runs) -> float:
                    return statistics.median(r[key] for r in runs)

                print(
                    f"\n{events} events ({args.runs} runs, median / max): overview drawn {med('overview_ms'):.0f} ms; "
                    f"click answered {med('click_ms'):.0f} ms; time to interactive {med('interactive_ms'):.0f} / "
                    f"{max(r['interactive_ms'] for r in runs):.0f} ms ({runs[0]['cells']} overview cells drawn); "
                    f"zoom to detail {med('zoom_ms'):.0f} / {max(r['zoom_ms'] for r in runs):.0f} ms "
                    f"({runs[0]['window_events']} events fetched, {runs[0]['drawn_events']} drawn); "
                    f"Chromium RSS {med('rss_mib'):.0f} MiB summed over its processes, "
                    f"largest {med('rss_max_mib'):.0f} MiB",
                    flush=True,
                )
    print("\n" + load())


if __name__ == "__main__":
    main()
