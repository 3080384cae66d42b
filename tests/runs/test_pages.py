"""The runs pages: empty state, the New run form (its defaults from the recipe, errors next to the
field, a valid run started), the run page, compare (2–4 runs or seed groups), access."""

from __future__ import annotations

import json
import re
from html import unescape as html_unescape

import pytest

from tests.runs.conftest import TINY
from webapp.runs import services
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

FORM = {"name": "", "level": "tiny", "algorithm": "ppo", "credit": "shared", "stop": "learned", "w_success": 1,
        "w_parallelism": 0.1, "w_finish": 0.1, "w_critical_steps": 0.001, "budget_steps": 300, "seed": 0}


@pytest.fixture
def browser_client(client, member):
    client.force_login(member)
    return client


def field_error(html: str, name: str) -> str:
    match = re.search(rf'data-testid="error-{name}">([^<]*)<', html)
    return html_unescape(match.group(1)) if match else ""


def test_empty_state_and_the_form_defaults(browser_client):
    html = browser_client.get("/runs/").content.decode()
    assert 'data-testid="empty-state"' in html and "/runs/new/" in html
    html = browser_client.get("/runs/new/").content.decode()
    assert 'name="budget_steps"' in html and 'value="200000"' in html  # the recipe's default budget
    assert '<option value="long" selected>' in html and '<option value="tiny">' in html  # the recipe's levels


def test_form_errors_are_shown_next_to_their_field_and_start_nothing(browser_client):
    html = browser_client.post("/runs/new/", {**FORM, "level": "enormous"}).content.decode()
    assert "enormous" in field_error(html, "level") and 'aria-invalid="true"' in html
    html = browser_client.post("/runs/new/", {**FORM, "w_finish": -0.5}).content.decode()
    assert ">= 0" in field_error(html, "w_finish")  # the recipe's own check, shown at its field
    html = browser_client.post("/runs/new/", {**FORM, "w_success": -1}).content.decode()
    assert ">= 0" in field_error(html, "w_success")
    html = browser_client.post("/runs/new/", {**FORM, "budget_steps": "lots"}).content.decode()
    assert field_error(html, "budget_steps")
    assert not Run.objects.exists()


def test_a_valid_form_starts_the_run(browser_client, settings, tmp_path, monkeypatch):
    from webapp.config.celery import app

    settings.DATA_DIR = tmp_path
    monkeypatch.setitem(app.conf, "task_always_eager", True)  # inline even where a broker is configured
    response = browser_client.post("/runs/new/", FORM)
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert run.status == Run.FINISHED and run.iterations_done >= 1 and run.config["level"] == "tiny"
    html = browser_client.get(f"/runs/{run.pk}/").content.decode()
    assert f'data-ws-url="/ws/runs/{run.pk}/"' in html and 'data-testid="stop-panel"' in html
    assert 'data-testid="attribution-panel"' in html and "uPlot.iife.min.js" in html
    listing = browser_client.get("/runs/").content.decode()
    assert 'data-status="finished"' in listing and f"/runs/{run.pk}/" in listing


def test_compare_runs_and_seed_groups(browser_client, project):
    a, b, c = (services.do_create_run(project, {**TINY, "seed": s}, external=True) for s in (0, 1, 2))
    other = services.do_create_run(project, {**TINY, "credit": "counterfactual"}, external=True)
    response = browser_client.get(f"/runs/compare/?groups={a.seed_group}&groups={a.seed_group}&runs={other.pk}")
    assert response.status_code == 200
    data = json.loads(re.search(r'id="compare-data" type="application/json">(.*?)</script>',
                                response.content.decode(), re.S).group(1))
    assert [s["kind"] for s in data] == ["run", "group"]
    assert sorted(snap["run"]["id"] for snap in data[1]["runs"]) == sorted([a.pk, b.pk, c.pk])
    assert browser_client.get(f"/runs/compare/?runs={a.pk}").status_code == 400  # one is not a comparison
    many = "&".join(f"runs={r.pk}" for r in (a, b, c, other)) + f"&groups={a.seed_group}"
    assert browser_client.get(f"/runs/compare/?{many}").status_code == 400
    listing = browser_client.get(f"/runs/?group={a.seed_group}").content.decode()
    assert listing.count('name="runs"') == 3 and "show all runs" in listing


def test_other_projects_runs_are_404(browser_client, django_user_model):
    from webapp.accounts.services import do_get_or_create_project

    run = services.do_create_run(do_get_or_create_project("Elsewhere"), TINY, external=True)
    assert browser_client.get(f"/runs/{run.pk}/").status_code == 404
    assert browser_client.post(f"/runs/{run.pk}/cancel/").status_code == 404
    assert browser_client.get(f"/runs/compare/?runs={run.pk}&runs={run.pk}").status_code == 404
