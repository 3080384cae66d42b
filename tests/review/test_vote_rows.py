"""Votes on the attribution rows of a trace: every attribution grouped by job and estimator with its
tally (one request for the review panel), a vote goes to the attribution it names, and the caller's
vote is changeable and withdrawable (a `voted` activity with `value: null`)."""

import json

import pytest

from webapp.counterfactuals.models import CounterfactualJob
from webapp.review.models import Activity, Vote

from .conftest import make_attribution

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def put(client, url, doc):
    return client.put(url, data=json.dumps(doc), content_type="application/json")


def job(trace, method):
    return CounterfactualJob.objects.create(
        trace=trace,
        intervention={},
        backend="sim",
        backend_path="x",
        n_samples=1,
        kind="attribution",
        method=method,
        heartbeat_at="2026-01-01T00:00:00Z",
    )


def test_rows_grouped_by_job_and_estimator_with_each_ones_votes(team):
    trace = team.trace_a
    loo, shapley = job(trace, "loo"), job(trace, "shapley")
    low, high = make_attribution(trace, "event:e3"), make_attribution(trace, "event:e7")
    for a, j, method, estimate in ((low, loo, "loo", -0.1), (high, loo, "loo", 0.5)):
        a.job, a.method, a.estimate = j, method, estimate
        a.save()
    other = make_attribution(trace, "event:e3")
    other.job, other.method = shapley, "shapley"
    other.save()
    put(team.client("rev"), f"/api/review/attributions/{low.pk}/votes/", {"value": "disagree"})
    put(team.client("bob"), f"/api/review/attributions/{other.pk}/votes/", {"value": "agree"})

    doc = team.client("rev").get(f"/api/review/traces/{trace.pk}/attribution-votes/").json()
    assert doc["user"] == "rev" and doc["can_review"] is True
    groups = {(g["job"], g["method"]): g for g in doc["groups"]}
    # team.attribution_a (no job, loo) is its own group.
    assert set(groups) == {(loo.pk, "loo"), (shapley.pk, "shapley"), (None, "loo")}
    loo_rows = groups[(loo.pk, "loo")]["rows"]
    assert [r["attribution"]["id"] for r in loo_rows] == [high.pk, low.pk]  # highest credit first
    assert [(r["agree"], r["disagree"]) for r in loo_rows] == [(0, 0), (0, 1)]
    assert loo_rows[1]["votes"][0]["user"] == "rev"
    (shapley_row,) = groups[(shapley.pk, "shapley")]["rows"]
    assert (shapley_row["attribution"]["target"], shapley_row["agree"]) == ("event:e3", 1)
    assert team.client("vic").get(f"/api/review/traces/{trace.pk}/attribution-votes/").json()["can_review"] is False
    assert team.client("zed").get(f"/api/review/traces/{trace.pk}/attribution-votes/").status_code == 404


def test_withdraw_a_vote(team):
    url = f"/api/review/attributions/{team.attribution_a.pk}/votes/"
    rev = team.client("rev")
    put(rev, url, {"value": "agree"})
    put(team.client("bob"), url, {"value": "agree"})
    assert team.client("vic").delete(url).status_code == 403
    left = rev.delete(url).json()
    assert (left["agree"], [v["user"] for v in left["votes"]]) == (1, ["bob"])
    assert not Vote.objects.filter(user=team.users["rev"]).exists()
    withdrawn = Activity.objects.filter(verb="voted", actor=team.users["rev"]).order_by("-id").first()
    assert withdrawn.data["value"] is None and withdrawn.data["votes"]["agree"] == 1
    # Withdrawing again records nothing.
    count = Activity.objects.count()
    assert rev.delete(url).status_code == 200 and Activity.objects.count() == count
    assert team.client("zed").delete(url).status_code == 404
