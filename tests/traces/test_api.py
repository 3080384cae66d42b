"""REST API and OTLP endpoint: tokens, batches, errors that name the bad field, exports, uploads."""

import gzip
import json

import pytest

from swarmscope import model as core
from swarmscope.importers import SourceFile, otlp, read_files
from webapp.accounts.models import ApiToken
from webapp.accounts.services import (
    do_add_member,
    do_create_token,
    do_get_or_create_project,
    do_revoke_token,
)
from webapp.traces import ingest
from webapp.traces.models import Event, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def post_json(client, url, body, **extra):
    return client.post(url, data=json.dumps(body), content_type="application/json", **extra)


def new_trace(api_client, name="run"):
    response = post_json(api_client, "/api/traces/", {"name": name, "system": "tests"})
    assert response.status_code == 201, response.content
    return response.json()["trace"]["id"]


def event(i, **fields):
    return {"id": f"e{i}", "t": float(i), "type": "message", "agent": f"agent-{i % 3}", **fields}


def test_requests_without_a_valid_token_are_refused(client, api_client, api_token):
    assert client.get("/api/traces/", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    client.defaults.pop("HTTP_AUTHORIZATION")
    assert client.get("/api/traces/").status_code == 401
    assert ApiToken.objects.get().token_hash != api_token  # stored hashed, never raw


def test_revoked_token_stops_working_at_once(api_client, api_token):
    assert api_client.get("/api/traces/").status_code == 200
    do_revoke_token(ApiToken.objects.get())
    assert api_client.get("/api/traces/").status_code == 401


def test_batches_append_and_a_malformed_batch_names_index_and_field(api_client):
    trace_id = new_trace(api_client)
    url = f"/api/traces/{trace_id}/events/"
    ok = post_json(api_client, url, [event(i) for i in range(5)])
    assert ok.status_code == 200 and ok.json()["events_added"] == 5
    bad = [event(i) for i in range(5, 10)]
    bad[3]["type"] = "telepathy"
    refused = post_json(api_client, url, bad)
    assert refused.status_code == 400
    assert (refused.json()["index"], refused.json()["field"], refused.json()["event_id"]) == (3, "type", "e8")
    missing_t = post_json(api_client, url, [event(20), {"id": "x", "type": "message", "agent": "a"}])
    assert (missing_t.json()["index"], missing_t.json()["field"]) == (1, "t")
    assert Event.objects.filter(trace_id=trace_id).count() == 5  # earlier good batches stay, bad ones add nothing


def test_ndjson_batches_and_conflicts(api_client):
    trace_id = new_trace(api_client)
    url = f"/api/traces/{trace_id}/events/"
    body = "\n".join(json.dumps(event(i)) for i in range(3))
    assert api_client.post(url, data=body, content_type="application/x-ndjson").status_code == 200
    broken = api_client.post(url, data=body + "\n{not json", content_type="application/x-ndjson")
    assert broken.status_code == 400 and broken.json()["line"] == 4
    conflict = post_json(api_client, url, [event(1, agent="someone-else")])
    assert conflict.status_code == 409 and conflict.json()["field"] == "agent"


def test_other_projects_traces_answer_404(api_client, member):
    other = do_get_or_create_project("Other")
    do_add_member(other, member, "reviewer")  # a token writes with its user's role in its project
    _, foreign_token = do_create_token(member, other)
    foreign = post_json(api_client, "/api/traces/", {"name": "mine"}, HTTP_AUTHORIZATION=f"Bearer {foreign_token}")
    foreign_id = foreign.json()["trace"]["id"]
    assert api_client.get(f"/api/traces/{foreign_id}/").status_code == 404
    assert post_json(api_client, f"/api/traces/{foreign_id}/events/", [event(1)]).status_code == 404
    assert api_client.get("/api/traces/999999/").status_code == 404
    assert api_client.get("/api/traces/").json()["count"] == 0


def test_the_list_filters_by_project_and_refuses_a_malformed_one(client, member, project):
    other = do_get_or_create_project("Other")
    do_add_member(other, member, "viewer")
    foreign = do_get_or_create_project("Foreign")  # member does not read it
    for owner, name in ((project, "mine"), (other, "other"), (foreign, "foreign")):
        ingest.do_ingest(owner, core.Trace(source_format="api", source_id=name, name=name))
    client.force_login(member)

    def names(query):
        response = client.get(f"/api/traces/{query}")
        assert response.status_code == 200, response.content
        return {t["name"] for t in response.json()["results"]}

    assert names("") == {"mine", "other"}
    assert names(f"?project={other.pk}") == {"other"}
    assert names(f"?project={project.pk}&project={other.pk}") == {"mine", "other"}
    assert names(f"?project={foreign.pk}") == names("?project=987654") == set()  # unreadable or unknown: alike
    for malformed in ("x", "0", "-1", "1.5"):
        refused = client.get(f"/api/traces/?project={malformed}")
        assert refused.status_code == 400 and refused.json()["field"] == "project", malformed


def test_upload_export_round_trip(api_client, fixtures):
    data = (fixtures / "native_small.json").read_bytes()
    uploaded = api_client.post(
        "/api/traces/upload/?filename=native_small.json", data=data, content_type="application/octet-stream"
    )
    assert uploaded.status_code == 200, uploaded.content
    trace_id = uploaded.json()["files"][0]["traces"][0]["id"]
    exported = api_client.get(f"/api/traces/{trace_id}/export/?format=native")
    original = read_files([SourceFile("a", data)]).traces[0]
    again = read_files([SourceFile("b", exported.content)]).traces[0]
    assert again.to_dict() == original.to_dict()
    survey = api_client.get(f"/api/traces/{trace_id}/export/?format=survey")
    assert survey.status_code == 200 and "X-Swarmscope-Not-Carried" in survey.headers
    jsonl = api_client.get(f"/api/traces/export.jsonl?ids={trace_id}")
    lines = b"".join(jsonl.streaming_content).decode().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["source_id"] == "hand-written-native-1"


def test_export_jsonl_of_unknown_ids_answers_404_naming_them(api_client):
    known = new_trace(api_client)
    missing = api_client.get(f"/api/traces/export.jsonl?ids={known},987654,987653")
    assert missing.status_code == 404
    assert missing.json()["missing"] == [987653, 987654] and "987653, 987654" in missing.json()["error"]
    for malformed in ("", ",", "1,x"):
        refused = api_client.get(f"/api/traces/export.jsonl?ids={malformed}")
        assert refused.status_code == 400 and refused.json()["field"] == "ids", malformed
    found = api_client.get(f"/api/traces/export.jsonl?ids={known}")
    assert found.status_code == 200 and len(b"".join(found.streaming_content).splitlines()) == 1


def test_upload_of_non_trace_and_broken_files(api_client):
    readme = api_client.post(
        "/api/traces/upload/?filename=README.md", data=b"# hello", content_type="application/octet-stream"
    )
    assert readme.status_code == 200 and readme.json()["files"][0]["skipped"].startswith("not a trace: text, not JSON")
    broken = api_client.post(
        "/api/traces/upload/?filename=cut.json", data=b'[{"a": 1},\n{"b": ', content_type="application/octet-stream"
    )
    assert broken.status_code == 400 and "line 2" in broken.json()["files"][0]["error"]
    assert Trace.objects.count() == 0


def otlp_request():
    span = lambda sid, parent, name, attrs, start: {  # noqa: E731
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": sid,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 500_000_000),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            span(
                                "0000000000000002",
                                "0000000000000001",
                                "invoke_agent worker",
                                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "worker"},
                                1_700_000_001_000_000_000,
                            ),
                            span(
                                "0000000000000001",
                                "",
                                "invoke_agent boss",
                                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "boss"},
                                1_700_000_000_000_000_000,
                            ),
                        ]
                    }
                ],
            }
        ]
    }


def test_otlp_json_and_gzip(api_client):
    body = json.dumps(otlp_request()).encode()
    plain = api_client.post("/v1/traces", data=body, content_type="application/json")
    assert plain.status_code == 200, plain.content
    zipped = api_client.post(
        "/v1/traces", data=gzip.compress(body), content_type="application/json", HTTP_CONTENT_ENCODING="gzip"
    )
    assert zipped.status_code == 200
    trace = Trace.objects.get()
    assert trace.source_id == "5b8efff798038103d269b633813fc60c"
    assert set(trace.agents.values_list("name", flat=True)) >= {"boss", "worker"}
    assert api_client.post("/v1/traces", data=b'{"nope": 1}', content_type="application/json").status_code == 400


def test_otlp_spans_spread_over_requests_form_one_trace(api_client):
    """Exporters send finished spans in batches: the root, which ends last, arrives last."""
    whole = otlp_request()
    spans = whole["resourceSpans"][0]["scopeSpans"][0]["spans"]
    child_only = json.loads(json.dumps(whole))
    child_only["resourceSpans"][0]["scopeSpans"][0]["spans"] = [spans[0]]
    root_only = json.loads(json.dumps(whole))
    root_only["resourceSpans"][0]["scopeSpans"][0]["spans"] = [spans[1]]
    for request in (child_only, root_only, root_only):
        response = post_json(api_client, "/v1/traces", request)
        assert response.status_code == 200, response.content
    trace = Trace.objects.get()
    assert dict(trace.agents.values_list("name", "parent")) == {"boss": None, "worker": "boss"}
    assert min(trace.events.values_list("t", flat=True)) == 0.0
    assert trace.spans.count() == 2  # the re-sent root span is stored once


def test_otlp_protobuf_gzip_as_exporters_send_by_default(api_client):
    (spans,) = otlp.split(otlp_request()).values()
    body = gzip.compress(otlp.encode_protobuf(spans))
    response = api_client.post(
        "/v1/traces", data=body, content_type="application/x-protobuf", HTTP_CONTENT_ENCODING="gzip"
    )
    assert response.status_code == 200 and response["Content-Type"] == "application/x-protobuf"
    trace = Trace.objects.get()
    assert dict(trace.agents.values_list("name", "parent")) == {"boss": None, "worker": "boss"}
    garbage = api_client.post("/v1/traces", data=b"\x0a\x05ab", content_type="application/x-protobuf")
    assert garbage.status_code == 400
    assert (
        api_client.post(
            "/v1/traces", data=body, content_type="application/x-protobuf", HTTP_AUTHORIZATION="Bearer revoked-or-wrong"
        ).status_code
        == 401
    )


@pytest.mark.parametrize(
    "method, url, body, headers",
    [
        ("post", "/api/traces/", "[" * 100000 + "]" * 100000, {}),
        ("post", "/api/traces/", '{"name": {"a": 1}}', {}),
        ("post", "/api/traces/", '{"name": "x", "attributes": "str"}', {}),
        (
            "post",
            "/api/traces/",
            '{"name": "x", "events": [{"id": "a", "t": 0, "type": "message", "agent": "a", '
            '"tokens": 99999999999999999999999}]}',
            {},
        ),
        (
            "post",
            "/api/traces/",
            '{"name": "x", "events": [{"id": "a", "t": 0, "type": "message", "agent": "a", '
            '"attributes": {"x": 1e999}}]}',
            {},
        ),
        (
            "post",
            "/api/traces/",
            '{"name": "x", "events": [{"id": "a", "t": NaN, "type": "message", "agent": "a"}]}',
            {},
        ),
        ("post", "/api/traces/upload/?filename=x.json", "not gzip", {"HTTP_CONTENT_ENCODING": "gzip"}),
        ("post", "/api/traces/upload/?filename=deep.json", "[" * 100000 + "]" * 100000, {}),
        ("post", "/v1/traces", '{"resourceSpans": [1, 2]}', {}),
        ("post", "/v1/traces", "[" * 100000 + "]" * 100000, {}),
        ("get", "/api/traces/?page_size=abc", None, {}),
        ("get", "/api/traces/export.jsonl?ids=99999999999999999999999", None, {}),
    ],
)
def test_bad_input_gets_a_400_and_stores_nothing(api_client, method, url, body, headers):
    send = getattr(api_client, method)
    response = send(url, data=body, content_type="application/json", **headers) if body is not None else send(url)
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body.get("error") or body.get("files") or body.get("message")  # OTLP: a google.rpc.Status
    assert Trace.objects.count() == 0


def test_page_size_is_clamped(api_client):
    new_trace(api_client)
    for size in ("0", "-3", "100000"):
        assert api_client.get(f"/api/traces/?page_size={size}").status_code == 200
