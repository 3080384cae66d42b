"""Take the README's screenshots from the running app on real traces (../shared/data).

    .venv/bin/python docs/make_screenshots.py

Starts `manage.py up` on a free port with a temporary data folder, imports the shared traces,
and saves PNGs under docs/screenshots/ with Debian's Chromium. A SwarmSim pivot-12 trace is
added for the counterfactual and attribution views (the app's own Celery worker runs them).
"""

import json
import re
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.servers import REPO, app_env, free_port, manage, start, stop, wait_http  # noqa: E402
from tests.synthetic import synthetic_trace  # noqa: E402
from trainer.sim.suites import pivot12_case  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
OUT = REPO / "docs" / "screenshots"


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="swarmscope-shots-"))
    env = app_env(root / "data")
    port = free_port()
    log = root / "up.log"
    server = start([sys.executable, "manage.py", "up", "--port", str(port)], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", server, log)
        password = re.search(r"password: (\S+)", log.read_text()).group(1)
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
        url = f"http://127.0.0.1:{port}"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(url + "/accounts/login/")
            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", password)
            page.click("form.stack button")
            page.wait_for_url(url + "/")
            page.screenshot(path=OUT / "trace-list.png")
            for name, trace_id, select in (
                ("trace-whowhen", whowhen, "mistake"),
                ("trace-groupchat", groupchat, None),
                ("trace-handoff", handoff, None),
                ("trace-claude-code", claude_code, "delegate"),
            ):
                page.goto(f"{url}/traces/{trace_id}/")
                page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined")
                page.evaluate("window.swarmscope.ready")
                if select == "mistake":
                    event_id = page.evaluate(
                        "window.swarmscope.model.labels.find(l => l.key === 'mistake_step')?.event_id"
                    )
                    page.evaluate("(id) => window.swarmscope.selectEvent(id)", event_id)
                elif select == "delegate":  # the lead's first delegation to a subagent
                    event_id = page.evaluate("window.swarmscope.model.sequence().find(e => e.type === 'delegate')?.id")
                    page.evaluate("(id) => window.swarmscope.selectEvent(id)", event_id)
                page.wait_for_timeout(500)
                page.screenshot(path=OUT / f"{name}.png")
                if select == "mistake":
                    # The transcript at the labelled mistake: one click on "Go to labelled mistake".
                    page.get_by_test_id("transcript-mistake").click()
                    page.wait_for_timeout(500)
                    page.screenshot(path=OUT / "transcript.png")
            # Every lane expanded and Fit: time fills the width, the 301 lanes scroll; one event selected.
            page.goto(f"{url}/traces/{ids[str(big)]}/")
            page.wait_for_function(
                "() => window.swarmscope && document.body.dataset.seq !== undefined", timeout=120_000
            )
            page.evaluate("window.swarmscope.ready")
            page.locator("[data-filter=expand-all]").click()
            page.get_by_test_id("fit-timeline").click()
            page.evaluate("window.swarmscope.selectEvent(window.swarmscope.model.sequence()[12000])")
            page.wait_for_timeout(500)
            page.locator(".timeline-panel").screenshot(path=OUT / "timeline-33k.png")
            page.goto(f"{url}/traces/{ids[str(swarmsim)]}/")
            page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined")
            page.evaluate("window.swarmscope.ready")
            page.evaluate("(id) => window.swarmscope.selectEvent(id)", pivotal)
            page.get_by_test_id("what-if").click()
            page.get_by_test_id("what-if-dialog").locator("input[name=n]").fill("32")
            page.get_by_test_id("what-if-dialog").locator("input[name=n]").press("Enter")
            page.get_by_test_id("job-delta").wait_for(timeout=120_000)
            page.screenshot(path=OUT / "counterfactual.png")
            page.get_by_test_id("attribute").click()
            budget = page.get_by_test_id("attribution-form").locator("input[name=budget]")
            budget.fill(str(13 * 32))
            budget.press("Enter")
            page.get_by_test_id("attribution-table").wait_for(timeout=120_000)
            page.wait_for_timeout(500)
            page.screenshot(path=OUT / "attribution.png")
            page.goto(f"{url}/traces/compare/?left={whowhen}&right={whowhen_other}")
            page.wait_for_timeout(1500)
            page.screenshot(path=OUT / "compare.png")
            browser.close()
    finally:
        stop(server, signal.SIGINT)


if __name__ == "__main__":
    main()
