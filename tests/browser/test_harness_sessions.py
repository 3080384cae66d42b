"""Claude Code and Codex sessions in the browser: a whole folder in one upload (the upload page's
folder picker), then the trace page shows the lead agent, a lane per subagent and the delegations.

The shared-data tests use the real Claude Code project of ../shared/data; the fixture tests use the
hand-written Codex sessions folder (date folders, a spawned agent and a grandchild), so a fresh
clone covers the folder upload too.
"""

import pytest

from tests.browser.test_trace_page import lanes, open_trace

pytestmark = pytest.mark.timeout(300)


def upload_folder(page, app, folder):
    """Pick `folder` in the upload page's folder input and import it: {file name: trace id}."""
    page.goto(f"{app.url}/upload/")
    page.get_by_test_id("upload-folder").set_input_files(folder)
    page.get_by_test_id("upload-import").click()
    report = page.get_by_test_id("import-report")
    report.wait_for()
    assert "error" not in (report.get_attribute("class") or "")
    errors = page.locator("[data-testid=import-report] li.error").all_inner_texts()
    assert errors == [], errors
    links = page.locator("[data-testid=import-report] li.ok a").evaluate_all("els => els.map(a => a.href)")
    return sorted({int(href.rstrip("/").rsplit("/", 1)[1]) for href in links})


def delegations(snapshot):
    """(sender, receiver) of every delegate event."""
    return sorted((e["agent"], e.get("to")) for e in snapshot["events"] if e["type"] == "delegate")


def test_claude_code_project_folder_in_one_upload(app, page, shared_data):
    trace_ids = upload_folder(page, app, shared_data / "claude-code")
    snapshots = {tid: app.api(f"/api/traces/{tid}/snapshot/") for tid in trace_ids}
    sessions = {s["trace"]["session_id"]: tid for tid, s in snapshots.items()}
    # Five session files in the folder (README of ../shared/data); subagent files join their session.
    assert len(sessions) == 5 and "fa812bfe-b295-4cca-9c2f-fdf01028cb46" in sessions

    trace_id = sessions["fa812bfe-b295-4cca-9c2f-fdf01028cb46"]
    snapshot = snapshots[trace_id]
    subagents = sorted(a["name"] for a in snapshot["agents"] if a.get("parent") == "main")
    # Two Explore subagents and one compaction subagent (its files: subagents/agent-*.jsonl).
    assert [s.split(":")[0] for s in subagents] == ["Explore", "Explore", "compaction"]
    assert delegations(snapshot) == sorted(("main", s) for s in subagents if not s.startswith("compaction"))

    open_trace(page, app, trace_id)
    drawn = lanes(page)
    assert "main" in drawn and set(subagents) <= set(drawn)
    assert page.get_by_test_id("trace-session").is_visible()


def test_codex_sessions_folder_in_one_upload(app, page, fixtures):
    trace_ids = upload_folder(page, app, fixtures / "codex" / "sessions")
    snapshots = [app.api(f"/api/traces/{tid}/snapshot/") for tid in trace_ids]
    # Four rollouts in two date folders, one root thread: one trace.
    (snapshot,) = [s for s in snapshots if any(e["type"] == "spawn" for e in s["events"])]
    children = {a["name"]: a.get("parent") for a in snapshot["agents"] if a.get("parent")}
    assert len(children) == 3 and "codex" in children.values()
    grandchild = next(name for name, parent in children.items() if parent in children)
    open_trace(page, app, snapshot["trace"]["id"])
    assert {"codex", grandchild, *children} <= set(lanes(page))
    assert ("codex", children[grandchild]) in delegations(snapshot)
