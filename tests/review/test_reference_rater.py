"""The dataset's own mistake label (Who&When's mistake agent and step) as a reference rater in the
agreement view, marked as the dataset's: kappa_against on hand-computed input, then on a real
Who&When trace from ../shared/data."""

import json
import math

import pytest

from swarmscope.agreement import cohen_kappa, kappa_against
from webapp.traces.models import Label, Trace


def test_kappa_against_a_reference_by_hand():
    labels = {"rev": {1: "a", 2: "b", 3: "a", 4: "b"}, "bob": {1: "a", 9: "b"}}
    reference = {1: "a", 2: "b", 3: "b", 4: "b"}
    bob, rev = kappa_against(labels, reference, "dataset:x")  # sorted by name
    # rev vs the reference on items 1-4: p_o = 3/4, p_e = (2*1 + 2*3) / 16 = 1/2, kappa = 1/2.
    assert (rev.rater_a, rev.rater_b, rev.n_items, rev.observed) == ("rev", "dataset:x", 4, 0.75)
    assert rev.kappa == pytest.approx(0.5) == pytest.approx(cohen_kappa("abab", "abbb"))
    # bob shares item 1 only: both said "a", p_e = 1, kappa undefined.
    assert (bob.n_items, bob.observed, bob.kappa) == (1, 1.0, None)
    with pytest.raises(ValueError, match="also a rater"):
        kappa_against({"dataset:x": {}}, reference, "dataset:x")
    assert math.isnan(cohen_kappa("aa", "aa"))


@pytest.mark.django_db
@pytest.mark.services
def test_who_and_when_label_is_the_reference_on_a_real_trace(team, shared_data):
    path = shared_data / "who-and-when" / "Hand-Crafted" / "1.json"
    response = team.client("ann").post(
        f"/api/traces/upload/?filename={path.name}", data=path.read_bytes(), content_type="application/octet-stream"
    )
    assert response.status_code == 200, response.content
    trace = Trace.objects.get(pk=response.json()["files"][0]["traces"][0]["id"])
    record = json.loads(path.read_text())
    step = Label.objects.get(trace=trace, key="mistake_step")
    agent = Label.objects.get(trace=trace, key="mistake_agent")
    assert step.value == record["mistake_step"] and step.event_id  # as the importer resolved them
    wrong_agent = trace.agents.exclude(name=agent.agent).values_list("name", flat=True).first()
    wrong_step = trace.events.exclude(event_id=step.event_id).values_list("event_id", flat=True).first()
    url = f"/api/review/traces/{trace.pk}/mistake-labels/"
    for name, doc in (
        ("rev", {"agent": agent.agent, "event_id": step.event_id}),
        ("bob", {"agent": wrong_agent, "event_id": wrong_step}),
    ):
        put = team.client(name).put(url, data=json.dumps(doc), content_type="application/json")
        assert put.status_code == 200, put.content

    labels = team.client("vic").get(url).json()
    assert labels["reference"] == [
        {"source": "who&when", "reference": True, "agent": agent.agent, "event_id": step.event_id}
    ]
    assert {lb["reviewer"] for lb in labels["results"]} == {"rev", "bob"}  # the dataset is not a reviewer

    agreement = team.client("vic").get(f"/api/review/projects/{team.a.pk}/agreement/").json()
    assert agreement["reviewers"] == ["bob", "rev"]
    (reference,) = agreement["references"]
    assert (reference["source"], reference["name"], reference["traces_labelled"]) == ("who&when", "dataset:who&when", 1)
    by_reviewer = {p["a"]: p for p in reference["pairs"]}
    assert by_reviewer["rev"]["agent"]["observed"] == 1.0 and by_reviewer["rev"]["step"]["observed"] == 1.0
    assert by_reviewer["bob"]["agent"]["observed"] == 0.0 and by_reviewer["bob"]["step"]["observed"] == 0.0
    assert all(p["b"] == "dataset:who&when" and p["n_traces"] == 1 for p in reference["pairs"])

    from django.test import Client

    client = Client()
    client.force_login(team.users["vic"])
    page = client.get(f"/projects/{team.a.pk}/review/").content.decode()
    assert "Against the dataset's own label: who&amp;when" in page
    assert page.count("dataset: who&amp;when</span>") == 2
