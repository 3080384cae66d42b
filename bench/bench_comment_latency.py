"""Benchmark: how long a comment on an event takes to show on another reader's open page (issue 32:
"a comment on an event shows a marker to another user's open page within a second; the mention
bell updates live").

Serves the app as the browser tests do (`manage.py up --no-worker`: Daphne, embedded Redis as the
channel layer, SQLite), imports tests/fixtures/native_small.json, makes two reviewers (ada, ben)
and logs each into headless Chromium. Ben has the trace page open and, in a second tab, the runs
list (a page with only the header's bell). Ada comments `--comments` times through the review
panel, each time on the next event and @mentioning ben. For each comment:

* marker: ms from the form's submit in ada's page (a capturing `submit` listener's `Date.now()`;
  the panel sends the POST in the same task) to the `comment-mark` of that event's transcript row
  existing in ben's trace page (a MutationObserver's `Date.now()`). Both pages run in one browser
  on one machine, so the clocks are the same.
* bell: ms from the same submit to the bell of ben's runs tab showing the new unread count.

Reported: median and max of each, with the machine and the load average.

    .venv/bin/python bench/bench_comment_latency.py [--comments 10]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_render import load, machine, running_app  # noqa: E402

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.browser.page_waits import wait_until  # noqa: E402
from tests.browser.test_review import login  # noqa: E402
from tests.browser.test_trace_workspace import USERS  # noqa: E402 - the two users the browser test makes
from tests.servers import manage  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
#: Installed in ben's pages before each comment: the time each watched thing first holds.
WATCH = """([selector, unread]) => {
  window.__markAt = null; window.__bellAt = null;
  const check = () => {
    if (window.__markAt === null && selector && document.querySelector(selector)) window.__markAt = Date.now();
    const bell = document.querySelector('[data-testid="notification-bell"]');
    if (window.__bellAt === null && bell && Number(bell.dataset.unread) >= unread) window.__bellAt = Date.now();
  };
  check();
  new MutationObserver(check).observe(document.body, { subtree: true, childList: true, characterData: true,
    attributes: true, attributeFilter: ["data-unread"] });
}"""
WATCH_SUBMIT = """() => {
  window.__postedAt = null;
  document.addEventListener("submit", () => { window.__postedAt = Date.now(); }, { capture: true, once: true });
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=10)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"{machine()}; {load()} at start", flush=True)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="swarmscope-bench-comments-") as tmp:
        work = Path(tmp)
        with running_app(work) as app, sync_playwright() as playwright:
            doc = json.loads((REPO / "tests" / "fixtures" / "native_small.json").read_text())
            path = work / "comments.json"
            path.write_text(json.dumps(doc))
            trace_id = app.import_file(path)
            result = manage("shell", "-c", USERS, env=app.env)
            if result.returncode != 0:
                raise RuntimeError(result.stderr[-2000:])
            events = [e["id"] for e in doc["events"]]
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                _, ada, _ = login(browser, app.url, "ada")
                ben_context, ben, _ = login(browser, app.url, "ben")
                runs = ben_context.new_page()
                runs.goto(app.url + "/runs/")
                for page in (ada, ben):
                    page.goto(f"{app.url}/traces/{trace_id}/")
                    wait_until(page, "() => Boolean(window.swarmscope)")
                    page.evaluate("() => window.swarmscope.ready.then(() => true)")
                    page.wait_for_selector('[data-testid="review-panel"] [data-field="live"][data-state="live"]')
                runs.wait_for_selector('[data-testid="notification-bell"][data-live="live"]')
                marker, bell = [], []
                for i in range(min(args.comments, len(events))):
                    event = events[i]
                    row = f'[data-testid="transcript-row"][data-event-id="{event}"] [data-testid=comment-mark]'
                    ben.evaluate(WATCH, [row, i + 1])
                    runs.evaluate(WATCH, [None, i + 1])
                    ada.evaluate("(id) => window.swarmscope.selectEvent(id)", event)
                    ada.get_by_test_id("inspector-discuss").click()
                    ada.fill('[data-testid="review-form"] textarea', f"Comment {i} on this step, @ben")
                    ada.evaluate(WATCH_SUBMIT)
                    ada.click('[data-testid="review-submit"]')
                    marked = wait_until(ben, "() => window.__markAt", timeout_s=60)
                    rang = wait_until(runs, "() => window.__bellAt", timeout_s=60)
                    posted = ada.evaluate("() => window.__postedAt")
                    marker.append(marked - posted)
                    bell.append(rang - posted)
                    print(f"comment {i}: marker {marked - posted} ms, bell (other tab) {rang - posted} ms", flush=True)
            finally:
                browser.close()
    print(
        f"{len(marker)} comments, submit -> marker on the other reader's trace page: median "
        f"{statistics.median(marker):.0f} ms, max {max(marker)} ms; -> bell on their runs tab: median "
        f"{statistics.median(bell):.0f} ms, max {max(bell)} ms; {load()} at end",
        flush=True,
    )


if __name__ == "__main__":
    main()
