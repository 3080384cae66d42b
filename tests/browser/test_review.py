"""Two reviewers in two browser contexts on the real app (Daphne + embedded Redis channel layer):
one comments on an attribution, the other sees it appear live and votes; the first sees the vote,
then labels the mistake step, which the other sees live too."""

import json

import pytest

from tests.servers import manage

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
from django.contrib.auth import get_user_model
from webapp.accounts.services import do_add_member, do_get_or_create_project
from webapp.counterfactuals.models import Attribution
from webapp.traces.models import Trace
project = do_get_or_create_project()
for name in ("ada", "ben"):
    users = get_user_model().objects
    user = users.filter(username=name).first() or users.create_user(name, password=name + "-password-1")
    do_add_member(project, user, "reviewer")
trace = Trace.objects.get(pk=%d)
attribution = Attribution.objects.create(trace=trace, target="event:e5", intervention={"kind": "remove"}, method="loo",
    estimate=0.25, ci_low=0.1, ci_high=0.4, n_rollouts=64, backend="trainer.rollout.sim.SimRollout", seed=7,
    environment={}, code_version="test")
print("attribution", attribution.pk)
"""


def login(browser, url, name):
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url + "/accounts/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", f"{name}-password-1")
    page.click("form.stack button")
    page.wait_for_url(url + "/")
    return context, page, errors


def test_a_comment_on_an_attribution_appears_live_and_the_other_reviewer_votes(app, browser, fixtures, tmp_path):
    doc = json.loads((fixtures / "native_small.json").read_text())
    doc["source_id"], doc["name"] = "review-browser-test", "Review panel test trace"  # a name no other test searches
    path = tmp_path / "review_trace.json"
    path.write_text(json.dumps(doc))
    trace_id = app.import_files(path)[path.name]
    result = manage("shell", "-c", SETUP % trace_id, env=app.env)
    assert result.returncode == 0, result.stderr
    attribution_id = int(result.stdout.split("attribution")[-1])

    ada_context, ada, ada_errors = login(browser, app.url, "ada")
    ben_context, ben, ben_errors = login(browser, app.url, "ben")
    try:
        url = f"{app.url}/traces/{trace_id}/?attribution={attribution_id}"
        for page in (ada, ben):
            page.goto(url)
            page.wait_for_selector('[data-testid="review-panel"] [data-field="live"][data-state="live"]')
            assert page.input_value('[data-testid="review-target"]') == f"attribution:{attribution_id}"
            assert page.text_content('[data-testid="review-tally"]') == "No votes yet"

        ada.fill('[data-testid="review-form"] textarea', "Credit for **e5** looks too high, @ben")
        ada.click('[data-testid="review-submit"]')
        # Ben's page was not reloaded: the comment arrives over /ws/projects/<id>/.
        ben.wait_for_selector('[data-testid="review-comments"] li strong:text("ada")')
        comment = ben.locator('[data-testid="review-comments"] li .review-body')
        assert comment.inner_html() == "<p>Credit for <strong>e5</strong> looks too high, @ben</p>"

        ben.fill('[data-testid="review-votes"] input', "the interval is wide")
        ben.click('[data-testid="vote-disagree"]')
        ada.wait_for_function(
            "document.querySelector('[data-testid=\"review-tally\"]').textContent === '0 agree · 1 disagree'"
        )
        assert ben.get_attribute('[data-testid="vote-disagree"]', "aria-pressed") == "true"
        # The shareable link opens the same attribution in the panel.
        assert ada.get_attribute('[data-testid="review-share"]', "href") == (
            f"/traces/{trace_id}/?attribution={attribution_id}"
        )
        # Labelling the mistake step: select the event on the timeline, the panel follows; Ben sees the label live.
        ada.evaluate("window.swarmscope.selectEvent('e5')")
        assert ada.input_value('[data-testid="review-target"]') == "event:e5"
        ada.click('[data-testid="review-mistake"] summary')
        assert ada.input_value('[data-testid="mistake-agent"]') == ada.evaluate(
            "window.swarmscope.model.events.get('e5').agent"
        )
        ada.click('[data-testid="mistake-save"]')
        ben.click('[data-testid="review-mistake"] summary')
        ben.wait_for_selector('[data-field="mistake-labels"] li:text("ada:")')
        assert "at step e5" in ben.text_content('[data-field="mistake-labels"]')
        assert ada_errors == [] and ben_errors == []
    finally:
        ada_context.close()
        ben_context.close()
