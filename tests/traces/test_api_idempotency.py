"""Half-written and dropped data (issue 18 item 9): `Idempotency-Key` on trace creation, batches of
rewards/costs/metrics/attributes without events, a re-sent batch, an OTLP request all or nothing."""

import json
from datetime import timedelta

import pytest
from django.db.models import QuerySet

from swarmscope.importers import otlp
from tests.traces.test_otlp_input import status
from webapp.accounts.services import do_add_member, do_create_token
from webapp.traces import idempotency, ingest, span_ingest, tasks
from webapp.traces.models import Event, IdempotencyKey, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def post_json(client, url, body, **extra):
    return client.post(url, data=json.dumps(body), content_type="application/json", **extra)


def event(i, **fields):
    return {"id": f"e{i}", "t": float(i), "type": "message", "agent": f"agent-{i % 3}", **fields}


def create(client, body, key):
    return post_json(client, "/api/traces/", body, HTTP_IDEMPOTENCY_KEY=key)


# --- (a) Idempotency-Key on POST /api/traces/ -------------------------------------------------


def test_a_retried_creation_with_its_key_answers_the_first_trace(api_client):
    body = {"name": "run", "system": "tests", "events": [event(0), event(1)]}
    first = create(api_client, body, '"5f1c-aa"')
    assert first.status_code == 201 and first.json()["events_added"] == 2
    assert "Idempotent-Replayed" not in first
    again = create(api_client, body, "5f1c-aa")  # the bare token is the same key as the sf-string
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["trace"]["id"] == first.json()["trace"]["id"] and again.json()["events_added"] == 0
    assert Trace.objects.count() == 1 and Event.objects.count() == 2
    other = create(api_client, body, "another-key")  # another logical call: another trace
    assert other.status_code == 201 and Trace.objects.count() == 2
    assert post_json(api_client, "/api/traces/", body).status_code == 201  # no key: as before
    assert Trace.objects.count() == 3


def test_the_same_key_with_another_body_answers_422_naming_the_header(api_client):
    assert create(api_client, {"name": "run"}, "k1").status_code == 201
    reused = create(api_client, {"name": "another run"}, "k1")
    assert reused.status_code == 422 and reused.json()["field"] == "Idempotency-Key"
    assert Trace.objects.count() == 1


def test_the_same_document_serialised_anew_is_the_same_request(api_client):
    """Bodies are compared as parsed JSON: another key order, spacing or escaping of the same
    document replays the first trace; another value is still a 422."""
    body = {"name": "run é", "system": "tests", "events": [event(0)], "attributes": {"b": 1, "a": [1.5, None]}}
    first = create(api_client, body, "k-json")
    assert first.status_code == 201
    anew = json.dumps(dict(reversed(list(body.items()))), indent=2, ensure_ascii=True)
    again = api_client.post("/api/traces/", data=anew, content_type="application/json", HTTP_IDEMPOTENCY_KEY="k-json")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["trace"]["id"] == first.json()["trace"]["id"] and Trace.objects.count() == 1
    changed = create(api_client, {**body, "attributes": {"b": 1, "a": [1.5, 0]}}, "k-json")
    assert changed.status_code == 422 and changed.json()["field"] == "Idempotency-Key"


def test_the_same_key_from_another_user_of_the_project_is_another_request(api_client, client, project, member):
    from django.contrib.auth import get_user_model

    bob = get_user_model().objects.create_user("bob", password="bob-password-1")
    do_add_member(project, bob, "reviewer")
    bobs_token = do_create_token(bob, project, "bob")[1]
    assert create(api_client, {"name": "run"}, "k1").status_code == 201
    response = post_json(
        client, "/api/traces/", {"name": "run"}, HTTP_IDEMPOTENCY_KEY="k1", HTTP_AUTHORIZATION=f"Bearer {bobs_token}"
    )
    assert response.status_code == 422 and Trace.objects.count() == 1


@pytest.mark.parametrize("key", ["", '""', "x" * 256, "naïve"])
def test_a_malformed_key_is_a_400_naming_the_header(api_client, key):
    response = create(api_client, {"name": "run"}, key)
    assert response.status_code == 400 and response.json()["field"] == "Idempotency-Key"
    assert not Trace.objects.exists()


def test_a_refused_creation_leaves_its_key_free(api_client):
    bad = {"name": "run", "events": [event(0, type="telepathy")]}
    assert create(api_client, bad, "k1").status_code == 400
    assert not IdempotencyKey.objects.exists() and not Trace.objects.exists()
    good = create(api_client, {"name": "run", "events": [event(0)]}, "k1")
    assert good.status_code == 201 and "Idempotent-Replayed" not in good


def test_a_concurrent_retry_that_loses_the_insert_answers_the_winners_trace(api_client, monkeypatch):
    """Two requests with one key at once: the loser's look-up missed the winner's uncommitted row,
    its insert then fails on the unique constraint, and it answers the winner's trace."""
    winner = create(api_client, {"name": "run"}, "k1").json()["trace"]["id"]
    real_first, calls = QuerySet.first, []

    def first_misses_once(self):
        if self.model is IdempotencyKey:
            calls.append(1)
            if len(calls) == 1:
                return None  # the winner had not committed when the loser looked
        return real_first(self)

    monkeypatch.setattr(QuerySet, "first", first_misses_once)
    loser = create(api_client, {"name": "run"}, "k1")
    assert loser.status_code == 201 and loser.json()["trace"]["id"] == winner
    assert Trace.objects.count() == 1 and IdempotencyKey.objects.count() == 1 and len(calls) == 2


def test_keys_expire_and_the_hourly_task_deletes_them(api_client):
    first = create(api_client, {"name": "run"}, "k1").json()["trace"]["id"]
    IdempotencyKey.objects.update(created_at=IdempotencyKey.objects.get().created_at - timedelta(hours=25))
    again = create(api_client, {"name": "run"}, "k1")  # a day later: a new call
    assert again.status_code == 201 and again.json()["trace"]["id"] != first
    assert IdempotencyKey.objects.count() == 1
    IdempotencyKey.objects.update(created_at=IdempotencyKey.objects.get().created_at - idempotency.IDEMPOTENCY_KEY_TTL)
    create(api_client, {"name": "fresh"}, "k2")
    tasks.delete_expired_traces()
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["k2"]


# --- (b), (c) batches -------------------------------------------------------------------------


def new_trace(api_client):
    response = post_json(api_client, "/api/traces/", {"name": "episode", "system": "tests"})
    assert response.status_code == 201
    return response.json()["trace"]["id"]


@pytest.mark.parametrize(
    "batch",
    [
        {"rewards": {"team": 1.0}},
        {"events": [], "rewards": {"team": 1.0}},
        {"events": [], "costs": {"usd": 0.25}},
        {"metrics": {"success": True}},
        {"attributes": {"outcome": "solved"}},
    ],
)
def test_a_batch_of_trace_fields_without_events_is_stored(api_client, batch):
    trace_id = new_trace(api_client)
    url = f"/api/traces/{trace_id}/events/"
    seq = post_json(api_client, url, [event(0)]).json()["seq"]
    response = post_json(api_client, url, batch)
    assert response.status_code == 200 and response.json()["seq"] == seq + 1
    (name, value), *_ = ((k, v) for k, v in batch.items() if k != "events")
    shown = api_client.get(f"/api/traces/{trace_id}/").json()
    # the resource shows the source's metrics as `source_metrics` (`metrics` are the computed ones)
    shown_as = "source_metrics" if name == "metrics" else name
    assert shown["seq"] == seq + 1 and {k: shown[shown_as][k] for k in value} == value
    assert post_json(api_client, url, batch).json()["seq"] == seq + 1  # the same values again change nothing


def test_a_reward_at_the_end_sets_the_headline_reward_and_reaches_viewers(
    api_client, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr(ingest, "broadcast_trace_delta", lambda trace_id, delta: sent.append(delta))
    trace_id = new_trace(api_client)
    seq = post_json(api_client, f"/api/traces/{trace_id}/events/", [event(0)]).json()["seq"]
    with django_capture_on_commit_callbacks(execute=True):
        post_json(api_client, f"/api/traces/{trace_id}/events/", {"rewards": {"team": 0.5}})
    assert Trace.objects.get(pk=trace_id).reward == 0.5
    assert sent[-1]["seq"] == seq + 1 and sent[-1]["events"] == [] and sent[-1]["trace"]["rewards"] == {"team": 0.5}


def test_a_single_event_with_attributes_is_still_an_event(api_client):
    trace_id = new_trace(api_client)
    response = post_json(api_client, f"/api/traces/{trace_id}/events/", event(0, attributes={"k": "v"}))
    assert response.status_code == 200 and response.json()["events_added"] == 1
    assert Trace.objects.get(pk=trace_id).attributes == {}


def test_a_batch_sent_again_after_its_answer_was_lost_stores_nothing_twice(api_client):
    trace_id = new_trace(api_client)
    url = f"/api/traces/{trace_id}/events/"
    batch = {"events": [event(0), event(1)], "edges": [{"src": "e0", "dst": "e1", "type": "causal"}]}
    seq = post_json(api_client, url, batch).json()["seq"]
    again = post_json(api_client, url, batch)
    assert again.status_code == 200 and again.json()["events_added"] == 0 and again.json()["seq"] == seq
    trace = Trace.objects.get(pk=trace_id)
    assert (trace.events.count(), trace.edges.count(), trace.event_count) == (2, 1, 2)


# --- (d) an OTLP request is all or nothing ----------------------------------------------------


def span(trace_id, span_id, name, start):
    return {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 500_000_000),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": name}},
        ],
    }


def test_an_otlp_request_whose_second_trace_fails_stores_neither(api_client, monkeypatch):
    """The first trace's spans are written before the second's fail (a failure while storing,
    not while decoding): the request's one transaction takes the first back."""
    first, second = "11" * 16, "22" * 16
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            span(first, "0000000000000001", "boss", 1_700_000_000_000_000_000),
                            span(second, "0000000000000002", "worker", 1_700_000_001_000_000_000),
                        ]
                    }
                ]
            }
        ]
    }
    assert list(otlp.split(doc)) == [first, second]  # stored in this order
    real, stored = span_ingest.do_ingest_spans, []

    def second_fails(project, importer, trace_id, spans, **kwargs):
        if trace_id == second:
            assert Trace.objects.filter(source_id=first).exists()  # the first is written by now
            raise ValueError("span 0000000000000002 has no id")
        stored.append(trace_id)
        return real(project, importer, trace_id, spans, **kwargs)

    monkeypatch.setattr(span_ingest, "do_ingest_spans", second_fails)
    response = post_json(api_client, "/v1/traces", doc)
    assert response.status_code == 400 and "no id" in status(response).message
    assert stored == [first] and not Trace.objects.exists()


def test_an_otlp_request_with_a_span_without_id_in_its_second_trace_stores_nothing(api_client):
    doc = {
        "resourceSpans": [
            {"scopeSpans": [{"spans": [span("11" * 16, "0000000000000001", "boss", 1_700_000_000_000_000_000)]}]},
            {"scopeSpans": [{"spans": [span("22" * 16, "", "worker", 1_700_000_001_000_000_000)]}]},
        ]
    }
    response = post_json(api_client, "/v1/traces", doc)
    assert response.status_code == 400 and "has no span id" in status(response).message
    assert not Trace.objects.exists()  # the first trace, stored before the second failed, is taken back
