"""Take the screenshots of issue 32's later pages: the compare page's small multiples, light and
dark, the runs list in the dark theme, and the trace page of a Claude Code session (its cost in the
header, the live bell), light and dark.

    .venv/bin/python docs/make_screenshots_runs.py

Starts `manage.py up --no-worker` (Daphne, embedded Redis, SQLite) on a free port with a temporary
data folder, stores bench/credit_diffusion.py's measured sweep (bench/figures/credit_diffusion.json)
with `manage.py import_credit_sweep` into the default project, and saves PNGs (1600x1000 viewport,
Debian's Chromium) under docs/screenshots/:

* runs-compare.png: the sweep's "all n" compare page: the summary vs n, then one chart per metric
  (light theme);
* runs-compare-dark.png: the same page with `prefers-color-scheme: dark`;
* runs-list-dark.png: the runs list, dark;
* trace-workspace.png, trace-workspace-dark.png: the Claude Code session
  ../shared/data/claude-code/4d5611e5-...jsonl with its subagents' folder, at 1440x900 (skipped
  when the shared data is not there).

Every input is fixed, so a rerun shows the same screens (only relative times differ).
"""

import re
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.servers import REPO, app_env, first_start_password, free_port, manage, start, stop, wait_http  # noqa: E402

OUT = REPO / "docs" / "screenshots"
CLAUDE_SESSION = REPO.parent / "shared" / "data" / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
TRACE_VIEWPORT = {"width": 1440, "height": 900}
VIEWPORT = {"width": 1600, "height": 1000}
#: The project a fresh install's admin is a member of (webapp.accounts.services.DEFAULT_PROJECT).
DEFAULT_PROJECT = "Default"
CHARTS_DRAWN = "() => Number(document.querySelector('[data-testid=compare-charts]')?.dataset.charts) > 0"


def log_in(browser, url: str, password: str, scheme: str, viewport=VIEWPORT):
    context = browser.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    page.goto(url + "/accounts/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", password)
    page.click("form.stack button")
    page.wait_for_url(url + "/")
    return context, page


def main() -> None:
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="swarmscope-shots-runs-") as tmp:
        root = Path(tmp)
        env = app_env(root / "data", SWARMSCOPE_LOG_LEVEL="WARNING")
        port = free_port()
        log = root / "up.log"
        server = start([sys.executable, "manage.py", "up", "--port", str(port), "--no-worker"], env, log)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_http(url + "/", server, log)
            password = first_start_password(env)
            result = manage("import_credit_sweep", "--project", DEFAULT_PROJECT, env=env, timeout=600)
            if result.returncode != 0:
                raise RuntimeError(result.stderr[-2000:])
            compare = re.search(r"all n \(summary vs n\): (\S+)", result.stdout).group(1)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for scheme, suffix in (("light", ""), ("dark", "-dark")):
                    context, page = log_in(browser, url, password, scheme)
                    page.goto(url + compare)
                    page.wait_for_function(CHARTS_DRAWN, timeout=30_000)
                    page.screenshot(path=OUT / f"runs-compare{suffix}.png", full_page=True)
                    if scheme == "dark":
                        page.goto(url + "/runs/")
                        page.wait_for_selector("table")
                        page.screenshot(path=OUT / "runs-list-dark.png")
                    context.close()
                if CLAUDE_SESSION.exists():
                    imported = manage(
                        "import_traces", str(CLAUDE_SESSION), str(CLAUDE_SESSION.with_suffix("")), env=env, timeout=600
                    )
                    trace_id = int(re.search(r"imported as trace (\d+)", imported.stdout).group(1))
                    for scheme, suffix in (("light", ""), ("dark", "-dark")):
                        context, page = log_in(browser, url, password, scheme, TRACE_VIEWPORT)
                        page.goto(f"{url}/traces/{trace_id}/")
                        page.wait_for_function("() => window.swarmscope && document.body.dataset.seq !== undefined")
                        page.evaluate("() => window.swarmscope.ready.then(() => true)")
                        page.wait_for_selector('[data-testid="notification-bell"][data-live="live"]')
                        page.wait_for_timeout(500)  # the graph's layout settles
                        page.screenshot(path=OUT / f"trace-workspace{suffix}.png")
                        context.close()
                browser.close()
        finally:
            stop(server, signal.SIGINT)
    print("saved", ", ".join(sorted(p.name for p in OUT.glob("*.png") if p.stat().st_mtime > started)))


if __name__ == "__main__":
    main()
