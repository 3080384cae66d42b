"""The credit-diffusion sweep in the app (webapp/training/sweeps.py, `manage.py import_credit_sweep`):
its runs stored once as finished runs, one seed group per (arm, n), and the compare page's data is
the sweep's curves. The sweep is built from iterations the real recipe reported (tests/training/conftest.py)."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.training.conftest import TINY
from webapp.training.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sweep(iterations, tmp_path):
    """Two arms x two seeds of n = 4 in bench/credit_diffusion.py's JSON layout."""
    runs = []
    for arm in ("shared", "oracle"):
        for seed in (0, 1):
            curve = [
                {
                    "iteration": it["iteration"],
                    "env_steps": it["env_steps"] * (seed + 1),
                    "wall_s": it["wall_s"],
                    "metrics": {k: it["metrics"][k] for k in ("reward", "expected_success", "credit_env_steps")},
                }
                for it in iterations
            ]
            runs.append(
                {
                    "arm": arm,
                    "n": 4,
                    "seed": seed,
                    "config": {**TINY, "credit": arm, "seed": seed},
                    "iterations": curve,
                    "env_steps": curve[-1]["env_steps"],
                    "held_out": {"expected_success": 0.5},
                }
            )
    path = tmp_path / "credit_diffusion.json"
    path.write_text(json.dumps({"runs": runs}))
    return path, runs


def test_the_sweep_is_stored_once_and_the_compare_page_draws_its_seed_groups(sweep, member, client):
    path, runs = sweep
    out = StringIO()
    call_command("import_credit_sweep", str(path), "--project", "Test project", stdout=out)
    text = out.getvalue()
    assert "4 runs stored, 0 already there" in text
    stored = Run.objects.filter(name__startswith="credit sweep n=4")
    assert stored.count() == 4 and {r.status for r in stored} == {Run.FINISHED}
    assert len({r.seed_group for r in stored}) == 2  # one group per arm: the configs differ only in seed
    url = re.search(r"n = 4: (\S+)", text).group(1)
    assert "metric=expected_success" in url

    client.force_login(member)
    html = client.get(url).content.decode()
    data = json.loads(re.search(r'id="compare-data" type="application/json">(.*?)</script>', html, re.S).group(1))
    assert [s["kind"] for s in data] == ["group", "group"]
    for series, arm in zip(data, ("shared", "oracle")):
        assert series["label"].startswith(f"credit sweep n=4 {arm}") and len(series["runs"]) == 2
        for snapshot in series["runs"]:
            seed = snapshot["run"]["name"].rsplit(" ", 1)[1]
            mine = next(r for r in runs if r["arm"] == arm and str(r["seed"]) == seed)
            assert [(it["env_steps"], it["metrics"]["expected_success"]) for it in snapshot["iterations"]] == [
                (it["env_steps"], it["metrics"]["expected_success"]) for it in mine["iterations"]
            ]

    again = StringIO()
    call_command("import_credit_sweep", str(path), "--project", "Test project", stdout=again)
    assert "0 runs stored, 4 already there" in again.getvalue() and Run.objects.count() == 4


def test_a_malformed_sweep_is_refused_naming_the_entry(sweep, tmp_path):
    path, runs = sweep
    runs[1]["iterations"][0]["metrics"]["reward"] = "high"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"runs": runs}))
    with pytest.raises(CommandError, match=r"runs\[1\]\.iterations\[0\]\.metrics\.reward: must be a number"):
        call_command("import_credit_sweep", str(bad), stdout=StringIO())
    assert Run.objects.get(name="credit sweep n=4 shared seed 1").status == Run.FAILED
    (tmp_path / "not.json").write_text("{")
    with pytest.raises(CommandError, match="not.json"):
        call_command("import_credit_sweep", str(tmp_path / "not.json"), stdout=StringIO())
