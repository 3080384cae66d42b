"""The runs pages: empty state, the New run form (its defaults from the recipe, errors next to the
field, a valid run started), the run page, compare (2–4 runs or seed groups), access."""

from __future__ import annotations

import json
import re
from html import unescape as html_unescape

import pytest

from tests.training.conftest import TINY
from webapp.training import services
from webapp.training.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

FORM = {
    "name": "",
    "level": "tiny",
    "algorithm": "ppo",
    "credit": "shared",
    "stop": "learned",
    "w_success": 1,
    "w_parallelism": 0.1,
    "w_finish": 0.1,
    "w_critical_steps": 0.001,
    "budget_steps": 300,
    "seed": 0,
}


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
    hints = re.findall(r'<p class="hint">(.*?)</p>', html, re.S)
    assert "a SwarmSim level (long: at least 200 decisions per episode)" in hints
    assert not [h for h in hints if "`" in h]  # help texts are plain text, not markdown


def test_form_errors_are_shown_next_to_their_field_and_start_nothing(browser_client):
    html = browser_client.post("/runs/new/", {**FORM, "level": "enormous"}).content.decode()
    assert "enormous" in field_error(html, "level") and 'aria-invalid="true"' in html
    html = browser_client.post("/runs/new/", {**FORM, "w_finish": -0.5}).content.decode()
    assert "in [0, 1e+06]" in field_error(html, "w_finish")  # the recipe's own check, shown at its field
    html = browser_client.post("/runs/new/", {**FORM, "w_success": -1}).content.decode()
    assert "in [0, 1e+06]" in field_error(html, "w_success")
    html = browser_client.post("/runs/new/", {**FORM, "budget_steps": "lots"}).content.decode()
    assert field_error(html, "budget_steps")
    assert not Run.objects.exists()


# One real iteration of the recipe's defaults (16 episodes, the held-out report) trained inline:
# ~50 s on a quiet 2-core machine, over the default 300 s beside a loaded test run.
@pytest.mark.timeout(900)
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


def test_an_ended_run_page_shows_how_it_ended_not_a_red_ended_badge(browser_client, project):
    finished, failed, running = (services.do_create_run(project, {**TINY, "seed": s}, external=True) for s in (0, 1, 2))
    services.do_finish(finished)
    services.do_finish(failed, status=Run.FAILED, error="diverged")
    badge = re.compile(r'<span class="badge" data-testid="live-badge"[^>]*data-state="([^"]+)"[^>]*>([^<]+)</span>')

    def shown(run):
        return badge.search(browser_client.get(f"/runs/{run.pk}/").content.decode()).groups()

    assert shown(finished) == ("finished", "Finished") and shown(failed) == ("failed", "Failed")
    assert shown(running) == ("connecting", "Connecting…")  # an active run: the socket's first state


def test_compare_runs_and_seed_groups(browser_client, project):
    a, b, c = (services.do_create_run(project, {**TINY, "seed": s}, external=True) for s in (0, 1, 2))
    other = services.do_create_run(project, {**TINY, "credit": "counterfactual"}, external=True)
    response = browser_client.get(f"/runs/compare/?groups={a.seed_group}&groups={a.seed_group}&runs={other.pk}")
    assert response.status_code == 200
    data = json.loads(
        re.search(r'id="compare-data" type="application/json">(.*?)</script>', response.content.decode(), re.S).group(1)
    )
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


@pytest.fixture
def three_projects(django_user_model):
    """A user who is a viewer in Alpha, admin in Beta and reviewer in Gamma (names sort that way)."""
    from webapp.accounts.services import do_add_member, do_get_or_create_project

    user = django_user_model.objects.create_user("bob", password="bob-password-1")
    alpha, beta, gamma = (do_get_or_create_project(name) for name in ("Alpha", "Beta", "Gamma"))
    for project, role in ((alpha, "viewer"), (beta, "admin"), (gamma, "reviewer")):
        do_add_member(project, user, role)
    return user, alpha, beta, gamma


def project_options(html: str) -> list[tuple[str, bool]]:
    select = re.search(r'<select name="project"[^>]*>(.*?)</select>', html, re.S)
    return (
        [
            (html_unescape(name), bool(sel))
            for sel, name in re.findall(r'<option value="\d+"( selected)?>([^<]*)</option>', select.group(1))
        ]
        if select
        else []
    )


def test_the_form_asks_which_project_and_starts_the_run_there(client, three_projects, monkeypatch):
    user, alpha, beta, gamma = three_projects
    monkeypatch.setattr(services, "request_training", lambda run: None)  # no worker: the run stays queued
    client.force_login(user)
    html = client.get("/runs/new/").content.decode()
    assert project_options(html) == [("Beta", True), ("Gamma", False)]  # not Alpha: a viewer there
    assert project_options(client.get(f"/runs/new/?project={gamma.pk}").content.decode()) == [
        ("Beta", False),
        ("Gamma", True),
    ]
    html = client.post("/runs/new/", {**FORM, "project": alpha.pk}).content.decode()
    assert "reviewer or admin" in field_error(html, "project") and not Run.objects.exists()
    html = client.post("/runs/new/", {**FORM, "project": 987654}).content.decode()
    assert field_error(html, "project") and not Run.objects.exists()
    response = client.post("/runs/new/", {**FORM, "project": gamma.pk})
    run = Run.objects.get()
    assert response.status_code == 302 and run.project_id == gamma.pk


def test_with_one_project_to_start_runs_in_the_form_names_it(browser_client, project, monkeypatch):
    monkeypatch.setattr(services, "request_training", lambda run: None)
    html = browser_client.get("/runs/new/").content.decode()
    shown = re.search(r'data-testid="run-project">(.*?)</p>', html, re.S).group(1)
    assert "Test project" in shown and f'name="project" value="{project.pk}"' in shown
    assert browser_client.post("/runs/new/", {**FORM, "project": project.pk}).status_code == 302
    assert Run.objects.get().project_id == project.pk


def test_a_seed_group_counts_each_seed_once_and_says_what_it_left_out(browser_client, project):
    def run(seed, env_steps, status=Run.RUNNING):
        made = services.do_create_run(project, {**TINY, "seed": seed}, external=True)
        Run.objects.filter(pk=made.pk).update(env_steps=env_steps, status=status)
        return made

    done = Run.FINISHED
    s0_old, s1, s2 = run(0, 300, done), run(1, 300, done), run(2, 300, done)
    s0_new, s0_empty = run(0, 500), run(0, 0)  # a newer run of seed 0 whose CLI was killed, and one never reported
    other = services.do_create_run(project, {**TINY, "credit": "counterfactual"}, external=True)
    html = browser_client.get(f"/runs/compare/?groups={s1.seed_group}&runs={other.pk}").content.decode()
    data = json.loads(re.search(r'id="compare-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    group = data[1]
    # seed 0: the finished run stands for it, not the newer ones that never finished
    assert sorted(snap["run"]["id"] for snap in group["runs"]) == sorted([s0_old.pk, s1.pk, s2.pk])
    assert group["label"].endswith("(3 seeds)") and group["description"] == "3 seeds (2 repeated runs left out)"
    assert sorted((r["id"], r["kept"]) for r in group["left_out"]) == sorted(
        [(s0_new.pk, s0_old.pk), (s0_empty.pk, s0_old.pk)]
    )
    notice = re.search(r'data-testid="compare-repeats">(.*?)</p>', html, re.S).group(1)
    assert "3 seeds (2 repeated runs left out)" in notice and f"#{s0_new.pk}</a> repeats seed 0" in notice
    listing = browser_client.get("/runs/").content.decode()
    assert "3 seeds (2 repeated runs left out)" in listing
    assert listing.count('data-testid="repeat-run"') == 2


def test_a_seed_run_twice_is_one_seed(browser_client, project):
    first, again = (services.do_create_run(project, TINY, external=True) for _ in range(2))
    listing = browser_client.get("/runs/").content.decode()
    assert "1 seed (1 repeated run left out)" in listing and 'name="groups"' not in listing  # no band from 1 seed


def test_the_runs_list_leaves_the_eta_to_the_shared_formatter(browser_client, project):
    run = services.do_create_run(project, TINY, external=True)
    Run.objects.filter(pk=run.pk).update(env_steps=100, budget_steps=10**9, wall_s=30.0)
    listing = browser_client.get("/runs/").content.decode()
    cell = re.search(r'<td class="num" data-testid="run-eta" data-eta="([\d.]+)" title="(\d+) s left"></td>', listing)
    assert cell and abs(float(cell.group(1)) - (10**9 - 100) * 0.3) < 1  # formatted by runs_list.js
    assert "runs_list.js" in listing


def test_a_run_past_its_budget_shows_its_steps_and_the_budget_not_a_fraction(browser_client, project):
    # The budget is checked between iterations: the trial's run did 6480 env steps on a budget of 600.
    run = services.do_create_run(project, TINY, external=True)
    Run.objects.filter(pk=run.pk).update(env_steps=6480, budget_steps=600, status=Run.FINISHED)
    page = browser_client.get(f"/runs/{run.pk}/").content.decode()
    assert re.search(r'data-testid="run-steps"[^>]*>6480 env steps \(budget 600\)</span>', page)
    listing = browser_client.get("/runs/").content.decode()
    assert re.search(r'data-col="steps"[^>]*>6480 \(budget 600\)</span>', listing) and "6480 / 600" not in listing
