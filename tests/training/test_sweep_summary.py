"""The compare page's summary vs episode length (webapp/training/sweeps.get_sweep_summary): on a
hand-written sweep stored by do_import_sweep, each arm's final held-out E[R] and env steps to the
target are the mean over seeds with the 95 % t band computed here with scipy; on the real sweep
(bench/figures/credit_diffusion.json) they are bench/credit_diffusion.py's numbers."""

from __future__ import annotations

import json
import math
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from scipy import stats

from tests.training.sweep_fixture import HELD_OUT, small_sweep
from webapp.training.sweeps import do_import_sweep

pytestmark = pytest.mark.django_db(transaction=True)
REAL_SWEEP = Path(__file__).resolve().parents[2] / "bench" / "figures" / "credit_diffusion.json"


def band(values):
    k = len(values)
    mean = sum(values) / k
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (k - 1))
    half = stats.t.ppf(0.975, k - 1) * sd / math.sqrt(k)
    return [mean, mean - half, mean + half]


def page_summary(client, url):
    response = client.get(url)
    assert response.status_code == 200
    html = response.content.decode()
    found = re.search(r'id="sweep-summary" type="application/json">(.*?)</script>', html, re.S)
    assert found, "the compare page of a sweep has no summary"
    return json.loads(found.group(1)), html


def test_the_summary_is_the_mean_and_t_band_over_seeds(project, member, client):
    imported = do_import_sweep(project, small_sweep())
    assert len(imported.compare_all_url.split("groups=")) - 1 == 4  # 2 arms x 2 n, past MAX_COMPARE's n pages
    client.force_login(member)
    summary, html = page_summary(client, imported.compare_all_url)
    assert "held-out E[R]" in html and summary["final"] == "held_out"
    assert summary["n"] == [4, 16]
    assert summary["targets"][0] == pytest.approx(0.5 + 0.5 * ((0.5 + 0.8 + 0.9) / 3 - 0.5))
    assert summary["targets"][1] is None
    arms = {a["arm"]: a for a in summary["arms"]}
    assert set(arms) == {"shared", "oracle"}
    for arm in ("shared", "oracle"):
        for j, n in enumerate((4, 16)):
            assert arms[arm]["final"][j] == pytest.approx(band(HELD_OUT[(n, arm)]))
            assert arms[arm]["seeds"][j] == 3
    # oracle reaches the target at its second iteration (200 (seed + 1) env steps); shared never does
    # and is censored at its env steps in all, 300 (seed + 1).
    assert arms["oracle"]["steps"][0] == pytest.approx(band([200, 400, 600])) and arms["oracle"]["censored"][0] == 0
    assert arms["shared"]["steps"][0] == pytest.approx(band([300, 600, 900])) and arms["shared"]["censored"][0] == 3
    assert arms["shared"]["steps"][1] is None and arms["oracle"]["steps"][1] is None


def test_without_held_out_results_the_last_iteration_is_used_and_one_n_has_no_summary(project, member, client):
    sweep = small_sweep()
    for run in sweep["runs"]:
        del run["held_out"]
    imported = do_import_sweep(project, sweep)
    client.force_login(member)
    summary, html = page_summary(client, imported.compare_all_url)
    assert summary["final"] == "last_iteration" and "last iteration" in html
    oracle = next(a for a in summary["arms"] if a["arm"] == "oracle")
    assert oracle["final"][0] == pytest.approx([0.9, 0.9, 0.9])  # every seed ends at 0.9: a zero-width band
    one_n = client.get(imported.compare_urls[4]).content.decode()
    assert 'id="compare-data"' in one_n and 'id="sweep-summary"' not in one_n


def test_the_command_prints_one_link_to_every_group(project, tmp_path):
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(small_sweep()))
    out = StringIO()
    call_command("import_credit_sweep", str(path), "--project", project.name, stdout=out)
    link = re.search(r"all n \(summary vs n\): (\S+)", out.getvalue())
    assert link and link.group(1).count("groups=") == 4


def test_the_real_sweep_gives_bench_credit_diffusion_numbers(project, member, client):
    if not REAL_SWEEP.exists():
        pytest.skip(f"{REAL_SWEEP} is absent: run bench/credit_diffusion.py")
    sweep = json.loads(REAL_SWEEP.read_text())
    imported = do_import_sweep(project, sweep)
    client.force_login(member)
    summary, _ = page_summary(client, imported.compare_all_url)
    for j, n in enumerate(summary["n"]):
        bench = sweep["summary"][str(n)]
        # Targets and steps to them are the issue-16 sweep's; the issue-30 redesign compares arms at
        # equal updates and reports neither: there the final held-out E[R] is what both must agree on.
        if "target" in bench:
            assert summary["targets"][j] == pytest.approx(bench["target"])
        for arm in summary["arms"]:
            if arm["final"][j] is None:
                assert arm["arm"] not in bench["arms"]
                continue
            mine, half = bench["arms"][arm["arm"]]["final_held_out"]
            assert arm["final"][j] == pytest.approx([mine, mine - half, mine + half])
            if "steps_to_target" in bench["arms"][arm["arm"]]:
                mean, half = bench["arms"][arm["arm"]]["steps_to_target"]
                assert arm["steps"][j] == pytest.approx([mean, mean - half, mean + half])
                assert arm["censored"][j] == bench["arms"][arm["arm"]]["censored"]
