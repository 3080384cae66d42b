"""The New run form's stop decision (issue 16 item 4, issue 30 item 5): it offers the `anytime` stop
mode and SwarmSim's answer credit, each with a help text, and says what the default `learned` stop
cannot learn; the choice reaches the run's RunConfig (a run
started with them reports `stop_regret` over the offered stops); a value the recipe does not know
is an error at its field that starts nothing; a form without answer credit keeps the recipe's."""

from __future__ import annotations

import re

import pytest

from tests.training.test_pages import FORM, field_error
from webapp.training.forms import NewRunForm
from webapp.training.models import Run, RunIteration
from webapp.training.services import RunInputError, check_config
from webapp.training.views import _recipe_defaults

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def browser_client(client, member):
    client.force_login(member)
    return client


def test_the_form_offers_anytime_and_answer_credit_with_help(browser_client):
    html = browser_client.get("/runs/new/").content.decode()
    assert '<option value="anytime">' in html
    credit = re.search(r'<select name="answer_credit".*?</select>', html, re.S).group(0)
    assert '<option value="all_or_nothing" selected>' in credit and '<option value="partial">' in credit
    for name in ("stop", "answer_credit"):
        block = re.search(rf'data-field="{name}">(.*?)</div>', html, re.S).group(1)
        assert re.search(r'<p class="hint">[^<]{40,}</p>', block), f"{name} has no help text"


def test_the_form_says_what_the_default_stop_cannot_learn(browser_client):
    # the default stays `learned` (anytime loses to the rule stop at the benchmarks' budgets,
    # bench_stop), so the form says plainly that it is no real stop decision
    html = browser_client.get("/runs/new/").content.decode()
    stop = re.search(r'<select name="stop".*?</select>', html, re.S).group(0)
    assert re.search(r'<option value="learned" selected>[^<]*cannot stop before answering', stop)
    hint = re.search(r'data-field="stop">.*?<p class="hint">([^<]*)</p>', html, re.S).group(1)
    assert "cannot learn when to stop" in hint and "never stop before answering" in hint


def test_anytime_with_partial_credit_starts_a_run_that_reports_offered_stop_regret(
    browser_client, settings, tmp_path, monkeypatch
):
    from webapp.config.celery import app

    settings.DATA_DIR = tmp_path
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    response = browser_client.post("/runs/new/", {**FORM, "stop": "anytime", "answer_credit": "partial"})
    run = Run.objects.get()
    assert response.status_code == 302 and run.status == Run.FINISHED
    assert run.config["stop"] == "anytime" and run.config["answer_credit"] == "partial"
    stops = [it.stop for it in RunIteration.objects.filter(run=run)]
    assert stops and all(s["regret"] == "offered" and {"premature", "late", "stop_regret"} <= set(s) for s in stops)


def test_an_unknown_answer_credit_is_an_error_at_its_field_and_starts_nothing(browser_client):
    html = browser_client.post("/runs/new/", {**FORM, "answer_credit": "generous"}).content.decode()
    assert "generous" in field_error(html, "answer_credit") and not Run.objects.exists()


def test_the_recipes_check_of_answer_credit_lands_at_the_field_and_leaving_it_out_keeps_the_default(project):
    defaults, levels = _recipe_defaults()
    form = NewRunForm({**FORM, "project": project.pk}, defaults=defaults, levels=levels, projects=[project])
    assert form.is_valid(), form.errors
    assert form.config()["answer_credit"] == defaults["answer_credit"] == "all_or_nothing"
    with pytest.raises(RunInputError) as raised:
        check_config({**form.config(), "answer_credit": "generous"})  # what RunConfig says of it
    form.add_config_error(raised.value.field, raised.value.message)
    assert form.errors["answer_credit"] == [raised.value.message] and "generous" in raised.value.message
