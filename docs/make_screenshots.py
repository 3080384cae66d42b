"""Take the README's screenshots from the running app on real traces (../shared/data).

    .venv/bin/python docs/make_screenshots.py

Starts `manage.py up` (Daphne, Celery workers, embedded Redis) on a free port with a temporary
data folder and saves PNGs (1600x1000 viewport) under docs/screenshots/ with Debian's Chromium, in
this order:

* first-start.png: the empty trace list of the fresh install, with its "Load sample data" action;
  first-start-live.png: the list right after pressing it (the bundled samples imported, three
  SwarmSim pivot-12 traces streaming live).
* Then it imports the shared traces, a SwarmSim pivot-12 trace (for What if removed? and
  Attribute this trace, run by the app's own Celery worker) and bench_render's 33k-event, 301-agent
  case (`synthetic_trace(301, 33000, 0)`) with `manage.py import_traces`.
* trace-whowhen, trace-groupchat, trace-handoff, trace-claude-code, transcript (the Who&When
  trace at its labelled mistake), timeline-33k (the timeline panel of the 33k case, every lane
  expanded, Fit, the event at 40 % of the time order selected; the transcript at its narrowest
  and a 1300 px tall viewport, so the timeline is large), counterfactual (What if removed? with
  32 paired re-rollouts; it stores a branch trace), attribution, compare.
* trace-list.png last: a training run started from the "New run" form (level tiny, 1,500 env
  steps, seed 0; the app's training worker) adds training episodes, and the list shows every kind
  (imported, streamed, branch, training episode) with the facet panel's counts.

Every input is fixed (seeds, files, choices), so a rerun shows the same screens; only the live
list's event counts and the relative times depend on timing. Takes a few minutes on 2 cores.
The header's notification bell is an emoji (U+1F514): without an emoji font (Debian:
fonts-noto-color-emoji) Chromium draws it as a box.
"""

import json
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.servers import REPO, app_env, first_start_password, free_port, manage, start, stop, wait_http  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402
from trainer.sim.suites import pivot12_case  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
OUT = REPO / "docs" / "screenshots"
VIEWPORT = {"width": 1600, "height": 1000}
#: The training run of the trace list's screenshot: small enough for a minute of CPU.
RUN_FORM = {"name": "screenshot run", "level": "tiny", "budget_steps": 1500, "seed": 0}
#: The 33k timeline's own viewport: taller, so more of the 301 lanes show.
TALL_VIEWPORT = {"width": 1600, "height": 1300}
#: Bounds on the waits for the app's background work, in ms.
JOB_TIMEOUT_MS = 300_000
TRACE_READY = "() => window.swarmscope && document.body.dataset.seq !== undefined"


def open_trace(page, url: str, timeout: float = 30_000) -> None:
    """Open a trace page and wait until its snapshot has been drawn."""
    page.goto(url)
    page.wait_for_function(TRACE_READY, timeout=timeout)
    page.evaluate("window.swarmscope.ready")


def first_start(page, url: str) -> None:
    """The empty list of the fresh install, then the list right after "Load sample data"."""
    page.goto(url + "/")
    page.get_by_test_id("empty-state").wait_for()
    page.screenshot(path=OUT / "first-start.png")
    page.get_by_test_id("load-samples").locator("button[type=submit]").click()
    page.get_by_test_id("trace-table").wait_for(timeout=120_000)
    # The live rows move: wait until every streamed sample trace has events on the page.
    page.wait_for_function(
        """() => {
          const rows = [...document.querySelectorAll("tr[data-kind=streamed]")];
          return rows.length === 3 && rows.every((r) => r.querySelector("[data-testid=row-live]")
            && Number(r.querySelector("[data-col=event_count]").textContent) >= 10);
        }""",
        timeout=120_000,
    )
    page.screenshot(path=OUT / "first-start-live.png")


def train_tiny_run(page, url: str) -> None:
    """Start RUN_FORM from the "New run" form and wait until the training worker has finished it."""
    page.goto(url + "/runs/new/")
    form = page.get_by_test_id("run-form")
    for name, value in RUN_FORM.items():
        field = form.locator(f"[name={name}]")
        if field.evaluate("e => e.tagName") == "SELECT":
            field.select_option(str(value))
        else:
            field.fill(str(value))
    page.get_by_test_id("start-run").click()
    page.wait_for_url(url + "/runs/*/")
    page.wait_for_function(
        "() => document.getElementById('run-app').dataset.status === 'finished'", timeout=JOB_TIMEOUT_MS
    )


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="swarmscope-shots-"))
    env = app_env(root / "data")
    port = free_port()
    log = root / "up.log"
    server = start([sys.executable, "manage.py", "up", "--port", str(port)], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", server, log)
        password = first_start_password(env)
        url = f"http://127.0.0.1:{port}"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(url + "/accounts/login/")
            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", password)
            page.click("form.stack button")
            page.wait_for_url(url + "/")
            first_start(page, url)

            case = pivot12_case(0)
            swarmsim = root / "swarmsim-pivot-12-0.json"
            swarmsim.write_text(json.dumps(case.episode.trace.to_dict()))
            pivotal = next(
                f"message:{case.episode.actions[c].item}" for c, k in zip(case.candidates, case.kinds) if k == "pivotal"
            )
            # The timeline on the 33k-event, 301-agent synthetic case (bench_render's).
            big = root / "synthetic-301a-33000e.json"
            big.write_text(json.dumps(synthetic_trace(301, 33000, 0).to_dict()))
            imported = manage("import_traces", str(SHARED), str(swarmsim), str(big), env=env, timeout=900).stdout
            ids = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(.+): imported as trace (\d+)", imported, re.M)}
            whowhen = ids[str(SHARED / "who-and-when" / "Hand-Crafted" / "1.json")]
            whowhen_other = ids[str(SHARED / "who-and-when" / "Hand-Crafted" / "2.json")]
            groupchat = next(v for k, v in ids.items() if "groupchat" in k)
            handoff = next(v for k, v in ids.items() if "handoff" in k)
            claude_code = ids[str(SHARED / "claude-code" / "fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl")]

            for name, trace_id, select in (
                ("trace-whowhen", whowhen, "mistake"),
                ("trace-groupchat", groupchat, None),
                ("trace-handoff", handoff, None),
                ("trace-claude-code", claude_code, "delegate"),
            ):
                open_trace(page, f"{url}/traces/{trace_id}/")
                if select == "mistake":
                    event_id = page.evaluate(
                        "window.swarmscope.model.labels.find(l => l.key === 'mistake_step')?.event_id"
                    )
                    page.evaluate("(id) => window.swarmscope.selectEvent(id)", event_id)
                elif select == "delegate":  # the lead's first delegation to a subagent
                    event_id = page.evaluate(
                        "() => { const { model } = window.swarmscope;"
                        " return model.sequence().find((id) => model.events.get(id).type === 'delegate'); }"
                    )
                    page.evaluate("(id) => window.swarmscope.selectEvent(id)", event_id)
                page.wait_for_timeout(500)
                page.screenshot(path=OUT / f"{name}.png")
                if select == "mistake":
                    # The transcript at the labelled mistake: one click on "Go to labelled mistake".
                    page.get_by_test_id("transcript-mistake").click()
                    page.wait_for_timeout(500)
                    page.screenshot(path=OUT / "transcript.png")

            # The 33k case in its own context: the transcript dragged to its narrowest (the resizer
            # keeps that width in localStorage), every lane expanded and Fit: time fills the width,
            # the 301 lanes scroll; event 12,000 of the sequence selected.
            wide = browser.new_context(viewport=TALL_VIEWPORT, storage_state=page.context.storage_state())
            wide.add_init_script("localStorage.setItem('swarmscope.transcript-w', '280')")
            big_page = wide.new_page()
            open_trace(big_page, f"{url}/traces/{ids[str(big)]}/", timeout=120_000)
            big_page.locator("[data-filter=expand-all]").click()
            big_page.get_by_test_id("fit-timeline").click()
            picked = big_page.evaluate(
                """() => { const { model } = window.swarmscope, seq = model.sequence();
                  const e = model.events.get(seq[Math.floor(seq.length * 0.4)]);  // sequence(): ids in time order
                  window.swarmscope.selectEvent(e.id);
                  return `${e.id} (${e.type} by ${e.agent}), ${seq.length} events in the page's model`; }"""
            )
            print(f"timeline-33k: selected event {picked}")
            big_page.wait_for_timeout(500)
            big_page.locator(".timeline-panel").screenshot(path=OUT / "timeline-33k.png")
            wide.close()

            open_trace(page, f"{url}/traces/{ids[str(swarmsim)]}/")
            page.evaluate("(id) => window.swarmscope.selectEvent(id)", pivotal)
            page.get_by_test_id("what-if").click()
            page.get_by_test_id("what-if-dialog").locator("input[name=n]").fill("32")
            page.get_by_test_id("what-if-dialog").locator("input[name=n]").press("Enter")
            page.get_by_test_id("job-delta").wait_for(timeout=JOB_TIMEOUT_MS)
            page.screenshot(path=OUT / "counterfactual.png")
            page.get_by_test_id("attribute").click()
            budget = page.get_by_test_id("attribution-form").locator("input[name=budget]")
            budget.fill(str(13 * 32))
            budget.press("Enter")
            page.get_by_test_id("attribution-table").wait_for(timeout=JOB_TIMEOUT_MS)
            page.wait_for_timeout(500)
            page.screenshot(path=OUT / "attribution.png")
            page.goto(f"{url}/traces/compare/?left={whowhen}&right={whowhen_other}")
            page.wait_for_timeout(1500)
            page.screenshot(path=OUT / "compare.png")

            # The list with every kind: branches (the What-if job's), training episodes (a tiny run).
            train_tiny_run(page, url)
            page.goto(url + "/?kind=imported&kind=streamed&kind=branch&kind=episode")
            page.get_by_test_id("facet-kind").wait_for()
            page.screenshot(path=OUT / "trace-list.png")
            browser.close()
    finally:
        stop(server, signal.SIGINT)
        shutil.rmtree(root, ignore_errors=True)  # its data folder and the 33k trace file


if __name__ == "__main__":
    main()
