"""Two reviewers in two browser contexts on the real app (Daphne + embedded Redis channel layer):
one comments on an attribution, @mentioning the other, who sees it appear live and votes on that
attribution's row (by keyboard), then withdraws the vote; the first sees both live. The mention is
on the other's notifications page, linking back. Then a mistake label, seen live too."""

import json

import pytest
from playwright.sync_api import expect

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
other = Attribution.objects.create(trace=trace, target="event:e3", intervention={"kind": "remove"}, method="shapley",
    estimate=-0.5, ci_low=-0.9, ci_high=-0.1, n_rollouts=64, backend="trainer.rollout.sim.SimRollout", seed=7,
    environment={}, code_version="test")
print("other", other.pk)
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
    other_id = int(result.stdout.split("other")[-1].split()[0])

    ada_context, ada, ada_errors = login(browser, app.url, "ada")
    ben_context, ben, ben_errors = login(browser, app.url, "ben")
    try:
        url = f"{app.url}/traces/{trace_id}/?attribution={attribution_id}"
        row = f'[data-testid="vote-row"][data-attribution="{attribution_id}"]'
        other_row = f'[data-testid="vote-row"][data-attribution="{other_id}"]'
        for page in (ada, ben):
            page.goto(url)
            page.wait_for_selector('[data-testid="review-panel"] [data-field="live"][data-state="live"]')
            assert page.input_value('[data-testid="review-target"]') == f"attribution:{attribution_id}"
            # Two groups (loo, shapley), one row each; the discussed attribution's row is marked.
            assert page.locator('[data-testid="vote-group"]').count() == 2
            page.wait_for_selector(f"{other_row}", state="attached")
            assert page.text_content(f'{row} [data-testid="vote-tally"]') == "No votes yet"
            assert page.get_attribute(row, "aria-current") == "true"

        ada.fill('[data-testid="review-form"] textarea', "Credit for **e5** looks too high, @ben")
        ada.click('[data-testid="review-submit"]')
        # Ben's page was not reloaded: the comment arrives over /ws/projects/<id>/.
        ben.wait_for_selector('[data-testid="review-comments"] li strong:text("ada")')
        comment = ben.locator('[data-testid="review-comments"] li .review-body')
        assert comment.inner_html() == "<p>Credit for <strong>e5</strong> looks too high, @ben</p>"

        # Ben votes on the row itself, from the keyboard: the reason field, then Tab to the row's buttons.
        ben.fill('[data-testid="vote-reason"]', "the interval is wide")
        ben.focus(f'{row} [data-testid="vote-disagree"]')
        ben.keyboard.press("Enter")
        tally = f'{row} [data-testid="vote-tally"]'
        # (expect, not wait_for_function: the pages' CSP forbids the eval that a string predicate needs)
        expect(ada.locator(tally)).to_have_text("0 agree · 1 disagree")
        assert ada.text_content(f'{other_row} [data-testid="vote-tally"]') == "No votes yet"  # not the other row
        expect(ben.locator(f'{row} [data-testid="vote-disagree"]')).to_have_attribute("aria-pressed", "true")
        expect(ben.locator(f'{row} [data-testid="vote-disagree"]')).to_be_focused()  # focus stayed on the row
        # Pressing it again withdraws the vote; Ada sees that live too.
        ben.keyboard.press("Enter")
        expect(ada.locator(tally)).to_have_text("No votes yet")
        ben.click(f'{other_row} [data-testid="vote-agree"]')
        expect(ada.locator(f'{other_row} [data-testid="vote-tally"]')).to_have_text("1 agree · 0 disagree")
        # The shareable link opens the same attribution in the panel.
        assert ada.get_attribute('[data-testid="review-share"]', "href") == (
            f"/traces/{trace_id}/?attribution={attribution_id}"
        )
        # Ben's mention: the bell counts it, the notifications page links to the attribution.
        ben.goto(app.url + "/notifications/")
        assert int(ben.text_content('[data-testid="notification-count"]')) >= 1
        # The excerpt is the comment's text, not its Markdown source.
        mention = ben.locator('[data-testid="notification"]', has_text="Credit for e5 looks too high").first
        assert mention.locator("strong").text_content() == "ada"
        mention.locator('button[name="open"]').click()
        ben.wait_for_url(f"{url}")
        ben.wait_for_selector('[data-testid="review-panel"] [data-field="live"][data-state="live"]')
        assert ben.input_value('[data-testid="review-target"]') == f"attribution:{attribution_id}"
        ben.goto(url)
        ben.wait_for_selector('[data-testid="review-panel"] [data-field="live"][data-state="live"]')

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


def test_the_review_panels_head_fits_its_column_at_1280_by_800(app, browser, storage_state, fixtures, tmp_path):
    """At 1280×800 the side column is narrow: the head's title, status, live badge and Open/Close
    stay inside the panel (wrapping if they must), none clipped past its edge."""
    doc = json.loads((fixtures / "native_small.json").read_text())
    doc["source_id"], doc["name"] = "review-head-test", "Review head test trace"
    path = tmp_path / "review_head.json"
    path.write_text(json.dumps(doc))
    trace_id = app.import_files(path)[path.name]
    context = browser.new_context(storage_state=storage_state, viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(f"{app.url}/traces/{trace_id}/")
        page.wait_for_selector('[data-testid="review-panel"] [data-field="live"][data-state="live"]')
        for opened in (False, True):
            if opened:
                page.click('[data-testid="review-toggle"]')
                expect(page.get_by_test_id("review-toggle")).to_have_attribute("aria-expanded", "true")
            outside = page.evaluate(
                """() => {
                  const panel = document.querySelector('[data-testid="review-panel"]').getBoundingClientRect();
                  const head = document.querySelector('[data-testid="review-panel"] .panel-head');
                  return [...head.children].filter((c) => {
                    const r = c.getBoundingClientRect();
                    return r.width > 0 && (r.left < panel.left || r.right > panel.right || r.bottom > panel.bottom);
                  }).map((c) => c.textContent.trim());
                }"""
            )
            assert outside == [], f"outside the review panel (open: {opened}): {outside}"
    finally:
        context.close()


def test_typing_at_in_a_comment_offers_the_projects_members_by_keyboard(app, browser, fixtures, tmp_path):
    """@ in the comment box lists the project's members (GET /api/review/projects/<id>/members/);
    typing narrows the list, ↓/↑ move, Enter puts the mention in, Escape closes only the list."""
    doc = json.loads((fixtures / "native_small.json").read_text())
    doc["source_id"], doc["name"] = "review-mention-test", "Review mention test trace"
    path = tmp_path / "review_mention.json"
    path.write_text(json.dumps(doc))
    trace_id = app.import_files(path)[path.name]
    result = manage("shell", "-c", SETUP % trace_id, env=app.env)  # ada and ben, reviewers of its project
    assert result.returncode == 0, result.stderr
    context, page, errors = login(browser, app.url, "ada")
    try:
        page.goto(f"{app.url}/traces/{trace_id}/")
        page.wait_for_selector('[data-testid="review-panel"] [data-field="live"][data-state="live"]')
        page.click('[data-testid="review-toggle"]')
        box = page.locator('[data-testid="review-form"] textarea')
        options = page.get_by_test_id("mention-list").get_by_role("option")
        box.click()
        box.press_sequentially("Have a look, @")
        expect(page.get_by_test_id("mention-list")).to_be_visible()
        names = options.locator("strong").all_inner_texts()
        assert "@ada" in names and "@ben" in names and names == sorted(names)
        expect(options.first).to_have_attribute("aria-selected", "true")
        box.press("ArrowDown")
        expect(options.nth(1)).to_have_attribute("aria-selected", "true")
        assert box.get_attribute("aria-activedescendant") == options.nth(1).get_attribute("id")
        box.press("ArrowUp")
        expect(options.first).to_have_attribute("aria-selected", "true")
        box.press_sequentially("b")
        expect(options).to_have_count(1)
        assert options.first.locator("strong").inner_text() == "@ben"
        box.press("Enter")  # picks: no new line, no submit
        expect(page.get_by_test_id("mention-list")).to_be_hidden()
        assert box.input_value() == "Have a look, @ben "
        box.press_sequentially("and @")
        expect(page.get_by_test_id("mention-list")).to_be_visible()
        box.press("Escape")
        expect(page.get_by_test_id("mention-list")).to_be_hidden()
        assert box.input_value() == "Have a look, @ben and @"
        box.press("Backspace")
        page.click('[data-testid="review-submit"]')
        posted = page.locator('[data-testid="review-comments"] li .review-body').last
        expect(posted).to_have_text("Have a look, @ben and")
        assert errors == []
    finally:
        context.close()
