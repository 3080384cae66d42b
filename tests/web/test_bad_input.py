"""Input that the database (or Python) cannot take answers 400 naming the field, and stores nothing
(issue 18 item 7): 401-digit integers for times, strings for `spawned_at`, bodies nested 50,000
deep, a lone surrogate (`\\ud800`) in any text field, `?limit=²` / `?seq=²` (digits that
`str.isdigit` or `int` take and the database does not), over-long ids and names (PostgreSQL's
varchar refuses what SQLite would store), NUL characters in form fields, ids beyond 64 bits in
query parameters (SQLite's integers overflow).

Every class runs on whichever database the run uses: CI runs this file on SQLite and again on
PostgreSQL (`DATABASE_URL=postgres://...`). `CLASSES` names the 25 classes (and where the trial
saw each fail); the Hypothesis test then puts generated bad values (surrogates, huge integers,
deep nesting, over-long strings, NUL) at any leaf of a valid body of every JSON write endpoint.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.review import conftest as review_fixtures
from webapp.accounts.models import ApiToken, Invitation, Project
from webapp.counterfactuals.models import CounterfactualJob
from webapp.review.models import Activity, Comment, MistakeLabel, TraceReview, Vote
from webapp.traces.models import Agent, Edge, Event, Label, StoredSpan, Trace
from webapp.training.models import Run, RunIteration
from webapp.web.validation import MAX_JSON_DEPTH, InputError, json_problem, parse_int, query_int

pytestmark = [pytest.mark.django_db, pytest.mark.services, pytest.mark.timeout(600)]
team = review_fixtures.team  # two projects with members of every role, a trace and an attribution in each

SURROGATE = "\ud800"
BIG = 10**400
DEEP = 50_000
MODELS = (
    Trace,
    Event,
    Agent,
    Edge,
    Label,
    StoredSpan,
    Run,
    RunIteration,
    CounterfactualJob,
    Comment,
    Vote,
    TraceReview,
    MistakeLabel,
    Activity,
    Project,
    ApiToken,
    Invitation,
)


def deep(depth: int, leaf: Any = 1) -> str:
    """A JSON value nested `depth` arrays deep, as text (json.dumps itself cannot write one)."""
    return "[" * depth + json.dumps(leaf) + "]" * depth


def dumps(doc: Any) -> str:
    """JSON text of `doc`; `"<DEEP>"` strings become a value nested DEEP levels, surrogates stay escaped."""
    return json.dumps(doc).replace('"<DEEP>"', deep(DEEP))


def counts() -> dict[str, Any]:
    rows: dict[str, Any] = {m.__name__: m.objects.count() for m in MODELS}
    rows["seqs"] = sorted(Trace.objects.values_list("pk", "seq"))
    return rows


EVENT = {"id": "bad-1", "t": 1.0, "type": "message", "agent": "orchestrator"}


@dataclass
class Case:
    """One input class: `method` `url` (formatted with the team's ids) with `body`; the answer is
    400 naming `field` (None: a page or file report, where a 4xx is the answer)."""

    name: str
    url: str
    body: Any = None
    field: str | None = "body"
    method: str = "post"
    content_type: str = "application/json"
    failed_on: str = "both"  # where the trial saw a 500
    session: bool = False  # a logged-in browser instead of a token
    status: int = 400


CLASSES = [
    # both databases
    Case("t: a 401-digit integer", "/api/traces/{trace}/events/", [{**EVENT, "t": BIG}], "t"),
    Case("t_end: a 401-digit integer", "/api/traces/{trace}/events/", [{**EVENT, "t_end": BIG}], "t_end"),
    Case(
        "spawned_at: a 401-digit integer",
        "/api/traces/{trace}/events/",
        {"events": [], "agents": [{"name": "x", "spawned_at": BIG}]},
        "spawned_at",
    ),
    Case(
        "spawned_at: a string",
        "/api/traces/",
        {"name": "t", "agents": [{"name": "x", "spawned_at": "yesterday"}]},
        "spawned_at",
    ),
    Case(
        "events: an attribute nested 50,000 deep",
        "/api/traces/{trace}/events/",
        [{**EVENT, "attributes": {"x": "<DEEP>"}}],
    ),
    Case("a trace nested 50,000 deep", "/api/traces/", {"name": "t", "attributes": {"x": "<DEEP>"}}),
    Case("a run config nested 50,000 deep", "/api/runs/", {"config": {"x": "<DEEP>"}}),
    Case(
        "a comment nested 50,000 deep",
        "/api/review/comments/",
        {"kind": "trace", "id": "{trace}", "body": "<DEEP>"},
    ),
    Case("content: a lone surrogate", "/api/traces/{trace}/events/", [{**EVENT, "content": SURROGATE}], "content"),
    Case("agent: a lone surrogate", "/api/traces/{trace}/events/", [{**EVENT, "agent": "a" + SURROGATE}], "agent"),
    Case(
        "an attribute key: a lone surrogate",
        "/api/traces/{trace}/events/",
        [{**EVENT, "attributes": {SURROGATE: 1}}],
        "attributes",
    ),
    Case("name: a lone surrogate", "/api/traces/", {"name": SURROGATE}, "name"),
    Case(
        "comment body: a lone surrogate",
        "/api/review/comments/",
        {"kind": "trace", "id": "{trace}", "body": SURROGATE},
        "body",
    ),
    Case("run name: a lone surrogate", "/api/runs/", {"name": SURROGATE, "config": {}}, "name"),
    Case("?limit=² (jobs)", "/api/traces/{trace}/jobs/?limit=²", method="get", field="limit"),
    Case("?limit=² (activity)", "/api/review/projects/{project}/activity/?limit=²", method="get", field="limit"),
    # PostgreSQL only: over-long text (varchar max_length), NUL in form fields
    Case("event id over max_length", "/api/traces/{trace}/events/", [{**EVENT, "id": "e" * 301}], "id", failed_on="pg"),
    Case(
        "event agent over max_length",
        "/api/traces/{trace}/events/",
        [{**EVENT, "agent": "a" * 301}],
        "agent",
        failed_on="pg",
    ),
    Case(
        "tool over max_length",
        "/api/traces/{trace}/events/",
        [{**EVENT, "type": "tool_call", "tool": "t" * 301}],
        "tool",
        failed_on="pg",
    ),
    Case(
        "label key over max_length",
        "/api/traces/{trace}/events/",
        {"labels": [{"key": "k" * 201, "value": 1}]},
        "key",
        failed_on="pg",
    ),
    Case("trace name over max_length", "/api/traces/", {"name": "n" * 501}, "name", failed_on="pg"),
    Case("source_id over max_length", "/api/traces/", {"source_id": "s" * 301}, "source_id", failed_on="pg"),
    Case(
        "project name: NUL (form)",
        "/projects/",
        {"name": "a\x00b"},
        None,
        content_type="form",
        failed_on="pg",
        session=True,
    ),
    Case(
        "token name: NUL (form)",
        "/tokens/",
        {"project": "{project}", "name": "a\x00b"},
        None,
        content_type="form",
        failed_on="pg",
        session=True,
    ),
    # SQLite only: an id beyond 64 bits reaches a query
    Case(
        "?left= beyond 64 bits (compare page)",
        "/traces/compare/?left=99999999999999999999&right={trace}",
        method="get",
        field=None,
        failed_on="sqlite",
        session=True,
        status=404,
    ),
]


def _format(value: Any, ids: dict[str, int]) -> Any:
    if isinstance(value, str):
        for key, pk in ids.items():
            value = value.replace("{" + key + "}", str(pk))
        return value
    if isinstance(value, list):
        return [_format(v, ids) for v in value]
    if isinstance(value, dict):
        return {_format(k, ids): _format(v, ids) for k, v in value.items()}
    return value


def send(team, case: Case):
    ids = {"trace": team.trace_a.pk, "project": team.a.pk}
    url = _format(case.url, ids)
    if case.session:
        from django.test import Client

        client = Client()
        client.force_login(team.users["ann"])
    else:
        client = team.client("ann")
    if case.method == "get":
        return client.get(url)
    body = _format(case.body, ids)
    if case.content_type == "form":
        return client.post(url, body)
    return client.generic(case.method.upper(), url, dumps(body).encode(), content_type=case.content_type)


@pytest.mark.parametrize("case", CLASSES, ids=[c.name for c in CLASSES])
def test_each_input_class_answers_400_naming_the_field_and_stores_nothing(team, case):
    before = counts()
    answer = send(team, case)
    assert answer.status_code == case.status, (answer.status_code, answer.content[:300])
    if case.field is not None:
        doc = answer.json()
        assert doc["error"] and doc.get("field") == case.field, doc
    assert counts() == before


def test_there_are_25_classes():
    assert len(CLASSES) == 25
    assert [c.failed_on for c in CLASSES].count("pg") == 8 and [c.failed_on for c in CLASSES].count("sqlite") == 1


@pytest.mark.parametrize(
    "data",
    [
        json.dumps({"format": "swarmscope", "events": [{**EVENT, "content": SURROGATE}]}),
        '{"format": "swarmscope", "events": [{"id": "x", "t": 0, "type": "message", "agent": "a", "attributes": '
        + deep(DEEP)
        + "}]}",
        '{"format": "swarmscope", "events": [{"id": "x", "t": 0, "type": "message", "agent": "a", "attributes": '
        + deep(500)
        + "}]}",
        json.dumps({"format": "swarmscope", "events": [{**EVENT, "id": "i" * 301}]}),
    ],
    ids=["surrogate", "deep-50000", "deep-500", "over-long-id"],
)
def test_uploads_refuse_what_cannot_be_stored(team, data):
    """The upload API and page: a 400 (the API, with the file's error) or the page's report, no 500, nothing stored."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    before = counts()
    answer = team.client("ann").post(
        "/api/traces/upload/", {"file": SimpleUploadedFile("bad.json", data.encode(), "application/json")}
    )
    assert answer.status_code == 400, answer.content[:300]
    assert answer.json()["files"][0]["error"]
    page = Client()
    page.force_login(team.users["ann"])
    answer = page.post("/upload/", {"file": SimpleUploadedFile("bad.json", data.encode(), "application/json")})
    assert answer.status_code == 200 and b"failed" in answer.content
    assert counts() == before


def test_otlp_refuses_a_lone_surrogate(team):
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "chat " + SURROGATE,
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
    }
    body = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    before = counts()
    answer = team.client("ann").post("/v1/traces", json.dumps(body), content_type="application/json")
    assert answer.status_code == 400, answer.content[:300]
    assert counts() == before


@pytest.mark.django_db(transaction=True)
async def test_a_websocket_with_seq_superscript_gets_a_snapshot(team):
    """`?seq=²` passes str.isdigit but not int(): the socket answers with a snapshot, not a crash."""
    from tests.live_socket import CheckedCommunicator

    ws = CheckedCommunicator("trace", f"/ws/traces/{team.trace_a.pk}/?token={team.tokens['ann']}&seq=²")
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_json_from(timeout=10))["type"] == "snapshot"
    await ws.disconnect()


# --- NUL in page query strings and form fields (webapp.web.middleware.RefuseNulMiddleware) -------

FORM = "application/x-www-form-urlencoded"  # what a browser sends for a form without enctype
NUL_PAGES = [
    ("get", "/?q=a%00b", None, "q"),  # the trace list's search
    ("get", "/?system=x&q%00=1", None, "q\\x00"),  # a field name with a NUL, shown escaped
    ("get", "/runs/?group=a%00b", None, "group"),
    ("get", "/runs/compare/?groups=a%00b&groups=c", None, "groups"),
    ("post", "/runs/new/", {"name": "run\x00", "level": "tiny"}, "name"),
    ("post", "/projects/", {"name": "a\x00b"}, "name"),
    ("post", "/tokens/", {"project": "{project}", "name": "a\x00b"}, "name"),
]


@pytest.mark.parametrize(("method", "url", "form", "field"), NUL_PAGES, ids=[f"{m} {u}" for m, u, _, _ in NUL_PAGES])
def test_a_nul_in_a_page_query_or_form_answers_400_naming_the_field(team, method, url, form, field):
    """On PostgreSQL these were 500s (psycopg refuses NUL in any parameter); on SQLite a NUL name
    was stored. Now a 400 that names the field, on both, with nothing stored."""
    from django.test import Client

    page = Client()
    page.force_login(team.users["ann"])
    before = counts()
    if method == "get":
        answer = page.get(url)
    else:
        answer = page.post(url, urlencode(_format(form, {"project": team.a.pk})), content_type=FORM)
    assert answer.status_code == 400, answer.content[:300]
    html = answer.content.decode()
    assert f"{field}: must not contain a NUL character (U+0000)" in html, html[-800:]
    assert counts() == before


def test_a_nul_in_the_login_form_is_refused_and_logs_nobody_in(team):
    from django.test import Client

    page = Client()
    answer = page.post("/accounts/login/", urlencode({"username": "ann\x00", "password": "x"}), content_type=FORM)
    assert answer.status_code == 400 and b"username: must not contain" in answer.content
    assert "_auth_user_id" not in page.session


def test_a_nul_free_form_and_an_upload_with_nul_bytes_pass_through(team):
    """The middleware looks only at query strings and url-encoded forms: a file holding NUL bytes
    reaches its view (which reports it), and ordinary input is untouched."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    page = Client()
    page.force_login(team.users["ann"])
    assert page.get("/?q=plain%20text").status_code == 200
    answer = page.post("/upload/", {"file": SimpleUploadedFile("nul.json", b'{"a": "\x00"}', "application/json")})
    assert answer.status_code == 200 and b"must not contain a NUL" not in answer.content


# --- the shared parsers --------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["²", "٣", "+1", "-1", " 1", "1 ", "1.0", "", "1e3", "9" * 20, "0x1f", "١٢"])
def test_parse_int_takes_ascii_digits_only_within_bounds(text):
    with pytest.raises(InputError) as refused:
        parse_int(text, field="limit", low=1)
    assert refused.value.field == "limit"


def test_parse_int_and_query_int():
    assert parse_int("42", field="x") == 42 and parse_int(str(2**63 - 1), field="x") == 2**63 - 1
    assert query_int({}, "limit", 50) == 50 and query_int({"limit": ""}, "limit", 50) == 50
    assert query_int({"page_size": "-3"}, "page_size", low=1, high=200, clamp=True) == 1
    assert query_int({"page_size": "9" * 30}, "page_size", low=1, high=200, clamp=True) == 200
    with pytest.raises(InputError):
        query_int({"page_size": "²"}, "page_size", low=1, high=200, clamp=True)


def test_json_problem_is_iterative_and_names_the_top_level_field():
    nested: Any = 1
    for _ in range(200_000):
        nested = [nested]
    assert json_problem({"a": nested}) == ("body", f"nested deeper than {MAX_JSON_DEPTH} levels")
    assert json_problem({"name": "x" + SURROGATE})[0] == "name"
    assert json_problem({"name": {"k\x00": 1}})[0] == "name"
    assert json_problem({"ok": [[{"a": "b"}]]}) is None


# --- property: any leaf of a valid body, replaced by a bad value -----------------------------------

BAD_TEXT = st.builds(
    lambda a, bad, b: a + bad + b,
    st.text(max_size=3),
    st.sampled_from([SURROGATE, "\udfff", "\x00", "\udbff\u0041"]),
    st.text(max_size=3),
)
BAD_VALUES = st.one_of(
    BAD_TEXT,
    st.integers(min_value=10**310, max_value=10**400) | st.integers(max_value=-(10**310), min_value=-(10**400)),
    st.integers(min_value=MAX_JSON_DEPTH + 1, max_value=DEEP).map(lambda d: ("<NEST>", d)),
    st.integers(min_value=501, max_value=3000).map(lambda n: "x" * n),
)


def bodies(team) -> list[tuple[str, Any]]:
    """A valid body for each JSON write endpoint (as the API documents them)."""
    run = Run.objects.create(project=team.a, name="ext", config={}, external=True, status=Run.RUNNING)
    return [
        ("/api/traces/", {"name": "p", "system": "s", "events": [EVENT], "attributes": {"k": "v"}}),
        (
            f"/api/traces/{team.trace_a.pk}/events/",
            {
                "events": [{**EVENT, "content": "hi", "tool": "t", "attributes": {"k": [1, "v"]}}],
                "agents": [{"name": "n", "role": "r", "spawned_at": 0.5}],
                "labels": [{"key": "k", "value": "v"}],
            },
        ),
        ("/api/runs/", {"name": "r", "config": {"level": "tiny", "seed": 1}}),
        (f"/api/runs/{run.pk}/finish/", {"status": "finished", "error": "", "summary": {"k": 1}}),
        ("/api/review/comments/", {"kind": "trace", "id": str(team.trace_a.pk), "body": "looks right"}),
        (
            f"/api/traces/{team.trace_a.pk}/counterfactuals/",
            {"intervention": {"kind": "remove", "events": ["e5"]}, "n": 4, "seed": 0},
        ),
        (f"/api/traces/{team.trace_a.pk}/attributions/run/", {"method": "loo", "budget": 200, "seed": 0}),
    ]


def leaves(doc: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in leaves(v, (*path, k))] or [path]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in leaves(v, (*path, i))] or [path]
    return [path]


def replaced(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[path[0]] = replaced(doc[path[0]], path[1:], value)
    return copy


@settings(
    max_examples=int(os.environ.get("SWARMSCOPE_FUZZ_EXAMPLES", 25)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_a_bad_value_at_any_leaf_never_answers_500_nor_half_writes(team, data):
    """Property: put a generated bad value at any leaf (or key) of a valid body of any JSON write
    endpoint. The answer is a 2xx (a value the field may hold: long free text, a huge integer in
    free-form JSON) or a 4xx naming a field with nothing stored; never a 5xx."""
    url, body = data.draw(st.sampled_from(bodies(team)))
    path = data.draw(st.sampled_from(leaves(body)))
    bad = data.draw(BAD_VALUES)
    as_key = data.draw(st.booleans()) and isinstance(bad, str) and len(path) > 1
    if as_key:  # the bad text as the key of the leaf's object
        parent = path[:-1]
        holder = body
        for step in parent:
            holder = holder[step]
        if isinstance(holder, dict):
            body = replaced(body, parent, {**{k: v for k, v in holder.items() if k != path[-1]}, bad: 1})
    nest = None
    if isinstance(bad, tuple):
        bad, nest = "<NEST>", bad[1]
    if not as_key:
        body = replaced(body, path, bad)
    text = json.dumps(body)
    if nest is not None:
        text = text.replace('"<NEST>"', deep(nest))
    note(f"{url} {path} {text[:300]}")
    before = counts()
    answer = team.client("ann").post(url, text.encode(), content_type="application/json")
    assert answer.status_code < 500, answer.content[:300]
    if answer.status_code >= 400:
        assert answer.json().get("field"), answer.content[:300]
        assert counts() == before
