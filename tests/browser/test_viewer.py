"""A viewer on the real app (Daphne, Chromium): the trace page's "What if removed?" (event and agent)
and "Attribute this trace" are disabled with a tooltip naming the role needed, and the runs pages'
New run is too; the server refuses the same writes (tests/review/test_roles.py)."""

import json

import pytest

from tests.browser.test_review import login
from tests.browser.test_trace_page import click_event, open_trace
from tests.servers import manage

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
from django.contrib.auth import get_user_model
from webapp.accounts.services import do_add_member, do_get_or_create_project
User = get_user_model()
user = User.objects.filter(username="vera").first() or User.objects.create_user("vera", password="vera-password-1")
do_add_member(do_get_or_create_project(), user, "viewer")
"""


def test_a_viewer_sees_the_write_controls_disabled_with_the_reason(app, browser, fixtures, tmp_path):
    doc = json.loads((fixtures / "native_small.json").read_text())
    doc["source_id"], doc["name"] = "viewer-browser-test", "Viewer test trace"
    path = tmp_path / "viewer_trace.json"
    path.write_text(json.dumps(doc))
    trace_id = app.import_files(path)[path.name]
    result = manage("shell", "-c", SETUP, env=app.env)
    assert result.returncode == 0, result.stderr
    context, page, errors = login(browser, app.url, "vera")
    try:
        open_trace(page, app, trace_id)
        attribute = page.get_by_test_id("attribute")
        assert attribute.is_disabled() and "reviewer or admin" in attribute.get_attribute("title")
        click_event(page, "e8")  # a message: the inspector offers "What if removed?"
        what_if = page.get_by_test_id("what-if")
        what_if.wait_for()
        assert what_if.is_disabled() and "reviewer or admin" in what_if.get_attribute("title")
        page.evaluate("window.swarmscope.selectAgent('adder')")
        what_if_agent = page.get_by_test_id("what-if-agent")
        what_if_agent.wait_for()
        assert what_if_agent.is_disabled() and "reviewer or admin" in what_if_agent.get_attribute("title")
        assert page.get_by_test_id("what-if-dialog").is_hidden()

        page.goto(f"{app.url}/runs/")
        new_run = page.get_by_test_id("new-run")
        assert new_run.is_disabled() and "reviewer or admin" in new_run.get_attribute("title")
        assert errors == [], errors
    finally:
        context.close()
