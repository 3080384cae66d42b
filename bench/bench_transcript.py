"""Benchmark: the trace page's transcript (static/js/panels/transcript.js) on large traces.

Serves the app as bench_render does, imports `synthetic_trace(301, 33000)` (the 33k-event,
301-agent case) and, for each trace:

* time until the page is ready with the transcript drawn (navigation to `swarmscope.ready` + one
  frame), and how many rows are in the DOM;
* scrolling: a scripted path (`--frames` frames of +600 px each, then `--frames` random jumps
  anywhere), one `scrollTop` change per `requestAnimationFrame`; reported: frame interval p95 and
  max, the transcript's own layout time per frame (p95, max) and the most rows ever in the DOM;
* jumping to the middle event through the page's selection (`swarmscope.selectEvent`), and a
  transcript search for a word in every event (Enter to the first hit).

    .venv/bin/python bench/bench_transcript.py [--events 33000] [--agents 301] [--frames 60]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_render import logged_in_browser, new_page, percentile, running_app  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402

SCROLL_SCRIPT = """async ([frames, seed]) => {
  const s = document.querySelector('[data-testid=transcript-scroll]');
  const t = window.swarmscope.transcript;
  let x = seed;
  const rand = () => { x = (x * 1103515245 + 12345) % 2147483648; return x / 2147483648; };
  const intervals = [], layouts = [];
  let maxRows = 0, last = null;
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  await frame();
  for (let i = 0; i < 2 * frames; i += 1) {
    s.scrollTop = i < frames ? s.scrollTop + 600 : rand() * (s.scrollHeight - s.clientHeight);
    const before = t.stats.layouts;
    const now = await frame();
    await frame();  // the scroll handler's layout runs in the next frame
    if (last !== null) intervals.push(now - last);
    last = performance.now();
    if (t.stats.layouts > before) layouts.push(t.stats.lastLayoutMs);
    maxRows = Math.max(maxRows, document.querySelectorAll('[data-testid=transcript-row]').length);
  }
  return {intervals, layouts, maxRows};
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=33000)
    parser.add_argument("--agents", type=int, default=301)
    parser.add_argument("--frames", type=int, default=60)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="swarmscope-bench-transcript-"))
    path = work / f"synthetic-{args.agents}-{args.events}.json"
    path.write_text(json.dumps(synthetic_trace(args.agents, args.events).to_dict()))
    with running_app(work) as app:
        trace_id = app.import_file(path)
        with logged_in_browser(app, work) as (browser, state):
            context, page = new_page(browser, state, "")
            page.goto(f"{app.url}/traces/{trace_id}/")
            page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined")
            ready_ms = page.evaluate(
                "window.swarmscope.ready.then(() => new Promise("
                "r => requestAnimationFrame(() => r(performance.now()))))"
            )
            page.get_by_test_id("transcript-row").first.wait_for()
            first = page.evaluate(
                "({rows: document.querySelectorAll('[data-testid=transcript-row]').length,"
                " count: document.querySelector('[data-testid=transcript-count]').textContent,"
                " layout: window.swarmscope.transcript.stats.maxLayoutMs,"
                " rebuild: window.swarmscope.transcript.stats.lastRebuildMs})"
            )
            scroll = page.evaluate(SCROLL_SCRIPT, [args.frames, 7])
            middle = page.evaluate(
                "window.swarmscope.model.timeOrder[Math.floor(window.swarmscope.model.timeOrder.length / 2)]"
            )
            jump_ms = page.evaluate(
                """(id) => { const t0 = performance.now(); window.swarmscope.selectEvent(id);
                   return new Promise(r => requestAnimationFrame(() => r(performance.now() - t0))); }""",
                middle,
            )
            jumped = page.evaluate(
                """(id) => {
                   const s = document.querySelector('[data-testid=transcript-scroll]').getBoundingClientRect();
                   const el = document.querySelector(`.tx-row[data-event-id="${id}"]`);
                   if (!el) return false; const r = el.getBoundingClientRect();
                   return r.top >= s.top && r.top < s.bottom; }""",
                middle,
            )
            search = page.get_by_test_id("transcript-search")
            search_ms = page.evaluate(
                """() => { const t = window.swarmscope.transcript; const t0 = performance.now();
                   t.setQuery('e0'); return [performance.now() - t0, t.hits.length]; }"""
            )
            search.fill("e0")
            search.press("Enter")
            page.wait_for_function("() => document.body.dataset.selected !== undefined")
            errors = list(page.errors)
            context.close()
    iv, lay = scroll["intervals"], scroll["layouts"]
    print(f"transcript on synthetic_trace({args.agents}, {args.events}): {first['count']}")
    print(
        f"  page ready + 1 frame: {ready_ms:.0f} ms; rows in the DOM: {first['rows']}; "
        f"first layout: {first['layout']:.1f} ms; "
        f"rows built in {first['rebuild']:.1f} ms"
    )
    print(
        f"  scroll, {len(iv)} frames: interval p95 {percentile(iv, 0.95):.1f} ms, max {max(iv):.1f} ms, "
        f"median {statistics.median(iv):.1f} ms; layout p95 {percentile(lay, 0.95):.1f} ms, max {max(lay):.1f} ms; "
        f"max rows in the DOM {scroll['maxRows']}"
    )
    print(f"  jump to the middle event: {jump_ms:.1f} ms, in view: {jumped}")
    print(f"  search 'e0': {search_ms[0]:.1f} ms, {search_ms[1]} hits")
    if errors:
        print(f"  console errors: {errors}")


if __name__ == "__main__":
    main()
