"""A trace streamed over OTLP/HTTP is the trace `import_traces` makes of the same spans in one go,
however the spans are batched, ordered, re-sent and encoded (protobuf or JSON), and whatever
their ids look like. Property tests (Hypothesis) over generated multi-agent GenAI traces and over
every shared and fixture OpenTelemetry trace."""

import base64
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarmscope.importers import SourceFile, decode, detect, otlp
from swarmscope.importers.otel import Span
from tests.swarmscope.test_otlp_export import same_trace
from webapp.accounts.services import do_get_or_create_project
from webapp.traces.ingest import do_import_sources
from webapp.traces.models import Trace
from webapp.traces.services import EVENT_DATA_COLUMNS, to_core_trace

EPOCH_NS = 1_767_225_600_000_000_000
MS = 1_000_000
#: Span ids whose base64 text starts with "0x" (the protobuf batches once refused): 0xd3 0x1?...
OX_PREFIX = bytes.fromhex("d31c")
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --- generated multi-agent traces -----------------------------------------------------------------


def _attrs(**values):
    return {key.replace("__", "."): value for key, value in values.items()}


@st.composite
def multi_agent_traces(draw) -> list[Span]:
    """An orchestrator (under a workflow span or as the root) calling sub-agents as tools, handing
    off through `transfer_to_*` tools, invoking them directly, or a round-robin group chat; sub-agents
    chat and call tools and may invoke their own workers. Times in ms, overlapping at random."""
    trace_id = draw(st.binary(min_size=16, max_size=16).filter(any)).hex()
    spans: list[Span] = []

    def add(parent, name, start, end, service="swarm", **attributes):
        span = Span(
            trace_id=trace_id,
            span_id=f"{len(spans) + 1:016x}",
            parent_id=parent.span_id if parent else None,
            name=name,
            start_ns=EPOCH_NS + start * MS,
            end_ns=EPOCH_NS + max(end, start) * MS,
            attributes=_attrs(**attributes),
            service=service,
        )
        spans.append(span)
        return span

    def chat(parent, agent, start, text):
        return add(
            parent,
            "chat gpt-4o",
            start,
            start + draw(st.integers(1, 30)),
            gen_ai__operation__name="chat",
            gen_ai__agent__name=agent,
            gen_ai__usage__input_tokens=draw(st.integers(1, 500)),
            gen_ai__usage__output_tokens=draw(st.integers(1, 200)),
            gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}]),
        )

    def agent_run(parent, agent, start, depth):
        """An `invoke_agent` span of `agent` with its turns; returns its end time."""
        root = add(
            parent,
            f"invoke_agent {agent}",
            start,
            start,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name=agent,
        )
        t = start + draw(st.integers(0, 3))
        for turn in range(draw(st.integers(1, 3))):
            chat(root, agent, t, f"{agent} turn {turn}")
            t += draw(st.integers(0, 40))
            if draw(st.booleans()):
                tool = add(
                    root,
                    "execute_tool search",
                    t,
                    t + draw(st.integers(1, 20)),
                    gen_ai__operation__name="execute_tool",
                    gen_ai__tool__name="search",
                    gen_ai__tool__call__arguments='{"q": "x"}',
                    gen_ai__tool__call__result="found",
                )
                t = (tool.end_ns - EPOCH_NS) // MS + draw(st.integers(0, 5))
            if depth < 2 and draw(st.integers(0, 4)) == 0:
                t = agent_run(root, f"{agent}_worker{turn}", t, depth + 1) + 1
        root.end_ns = EPOCH_NS + (t + draw(st.integers(0, 5))) * MS
        return t

    workflow = add(None, "workflow", 0, 0, service="app") if draw(st.booleans()) else None
    shape = draw(st.sampled_from(["tools", "handoffs", "nested", "round_robin"]))
    n = draw(st.integers(1, 4))
    if shape == "round_robin":
        workflow = workflow or add(None, "RoundRobinGroupChat", 0, 0, service="app")
        t, agents = 0, [f"agent{i}" for i in range(max(n, 2))]
        for turn in range(draw(st.integers(2, 6))):
            t = agent_run(workflow, agents[turn % len(agents)], t, 2) + draw(st.integers(0, 3))
        workflow.end_ns = EPOCH_NS + t * MS
        return spans
    orchestrator = add(
        workflow,
        "invoke_agent orchestrator",
        0,
        0,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name="orchestrator",
    )
    t = 0
    chat(orchestrator, "orchestrator", t, "plan")
    ends = [t + 1]
    for i in range(n):
        agent = f"expert{i}"
        start = t + draw(st.integers(0, 10))  # overlapping calls run in parallel
        if shape == "tools":
            tool = add(
                orchestrator,
                f"execute_tool ask_{agent}",
                start,
                start,
                gen_ai__operation__name="execute_tool",
                gen_ai__tool__name=f"ask_{agent}",
                gen_ai__tool__call__arguments='{"task": "part"}',
            )
            end = agent_run(tool, agent, start + 1, 1) + 1
            tool.end_ns = EPOCH_NS + end * MS
        elif shape == "handoffs":
            add(
                orchestrator,
                f"execute_tool transfer_to_{agent}",
                start,
                start + 1,
                gen_ai__operation__name="execute_tool",
                gen_ai__tool__name=f"transfer_to_{agent}",
            )
            end = agent_run(workflow or orchestrator, agent, start + 2, 1)
        else:
            end = agent_run(orchestrator, agent, start, 1)
        ends.append(end)
        t = start if draw(st.booleans()) else end
    t = max(ends) + 1
    chat(orchestrator, "orchestrator", t, "final answer")
    orchestrator.end_ns = EPOCH_NS + (t + 31) * MS
    if workflow is not None:
        workflow.end_ns = orchestrator.end_ns
    return spans


# --- the spans of the shared and fixture OpenTelemetry files ----------------------------------------


def _file_traces(paths: list[Path]) -> list[list[Span]]:
    """The spans of each trace in `paths`, as their importer decodes them (chunks of one id merged)."""
    chunks: dict[tuple[str, str], list[Span]] = {}
    for path in paths:
        doc = decode(SourceFile(path.name, path.read_bytes()))
        module = detect(doc)
        for trace_id, records in module.split(doc).items():
            chunks.setdefault((module.FORMAT, trace_id), []).extend(module.to_spans(trace_id, records))
    return list(chunks.values())


#: The OpenTelemetry encodings (Langfuse and LangSmith also decode into spans, but carry trace
#: fields of their own, such as scores, that an OTLP re-encoding of the spans cannot).
OTEL_FORMATS = ("otlp", "jaeger", "otel_sdk")


def _otel_files(root: Path) -> list[Path]:
    """Every OpenTelemetry file below `root` that imports (the handoff chunk cut off upstream does not)."""
    files = []
    for path in sorted(root.rglob("*.json")):
        try:
            doc = decode(SourceFile(path.name, path.read_bytes()))
        except ValueError:
            continue
        module = detect(doc) if doc is not None else None
        if module is not None and module.FORMAT in OTEL_FORMATS:
            files.append(path)
    return files


# --- streaming and comparing --------------------------------------------------------------------------


def stored_form(trace: Trace) -> dict:
    """What a viewer sees of a stored trace, order of arrival left out (but the agents' order, the
    order of their lanes)."""
    events = {e.pop("event_id"): e for e in trace.events.values(*EVENT_DATA_COLUMNS)}
    agents = {
        a.pop("name"): a
        for a in trace.agents.values(
            "name", "role", "parent", "spawned_at", "despawned_at", "system_prompt", "attributes"
        )
    }
    attributes = {k: v for k, v in trace.attributes.items() if k != "sources"}
    return {
        "name": trace.name,
        "system": trace.system,
        "costs": trace.costs,
        "attributes": attributes,
        "counts": (trace.event_count, trace.agent_count, trace.total_tokens, trace.duration_s),
        "labels": sorted(map(repr, trace.labels.values("key", "value", "event_id", "agent", "source"))),
        "events": events,
        "agents": agents,
        "agent_order": list(trace.agents.order_by("id").values_list("name", flat=True)),
        "edges": sorted(trace.edges.values_list("src", "dst", "type")),
    }


def import_once(spans: list[Span], name: str = "one-shot") -> dict:
    """The stored form of `import_traces` of one OTLP/JSON file holding all `spans`."""
    project = do_get_or_create_project(f"{name} {spans[0].trace_id}")
    data = json.dumps(otlp.encode_json(spans)).encode()
    (outcome,) = do_import_sources(project, [SourceFile(f"{name}.json", data)])
    assert outcome.error is None, outcome.error
    (trace,) = outcome.traces
    return stored_form(trace)


def stream(client, batches: list[list[Span]], encodings: list[str]) -> dict:
    """POST each batch to /v1/traces in its encoding (gzip for protobuf, as exporters send it) with
    the token of `api_client` (project "Test project"); the stored form of the trace."""
    for batch, encoding in zip(batches, encodings):
        if encoding == "protobuf":
            response = client.post(
                "/v1/traces",
                data=gzip.compress(otlp.encode_protobuf(batch)),
                content_type="application/x-protobuf",
                HTTP_CONTENT_ENCODING="gzip",
            )
        else:
            response = client.post(
                "/v1/traces", data=json.dumps(otlp.encode_json(batch)), content_type="application/json"
            )
        assert response.status_code == 200, response.content
    trace = Trace.objects.get(identity_key=f"otlp:{batches[0][0].trace_id}", project__name="Test project")
    return stored_form(trace)


@st.composite
def deliveries(draw, spans: list[Span]):
    """New random ids (some base64 text starting with "0x"), then the spans in export order (by end,
    children first) or shuffled, split into batches, the batches shuffled, some sent twice, each in
    a random encoding."""

    def new_id(size):
        raw = draw(st.binary(min_size=size, max_size=size).filter(lambda b: any(b)))
        return (OX_PREFIX + raw[2:] if size == 8 and draw(st.booleans()) else raw).hex()

    trace_id = new_id(16)
    ids = {}
    for span in spans:
        while span.span_id not in ids:
            candidate = new_id(8)
            ids[span.span_id] = candidate if candidate not in ids.values() else None
            if ids[span.span_id] is None:
                del ids[span.span_id]
    renamed = [
        Span.from_dict(
            {
                **span.to_dict(),
                "trace_id": trace_id,
                "span_id": ids[span.span_id],
                "parent_id": ids.get(span.parent_id, span.parent_id),
            }
        )
        for span in spans
    ]
    if draw(st.booleans()):
        order = sorted(renamed, key=lambda s: s.end_ns)
    else:
        order = draw(st.permutations(renamed))
    cuts = sorted(draw(st.lists(st.integers(1, max(len(order) - 1, 1)), max_size=6, unique=True)))
    batches = [order[a:b] for a, b in zip([0] + cuts, cuts + [len(order)]) if order[a:b]]
    batches = draw(st.permutations(batches))
    batches += draw(st.lists(st.sampled_from(batches), max_size=2))  # re-sent batches
    encodings = draw(st.lists(st.sampled_from(["protobuf", "json"]), min_size=len(batches), max_size=len(batches)))
    return renamed, batches, encodings


def check_streaming(client, spans, data):
    Trace.objects.all().delete()  # examples share the database: none may see another's trace
    renamed, batches, encodings = data.draw(deliveries(spans))
    assert stream(client, batches, encodings) == import_once(renamed)


@SETTINGS
@given(spans=multi_agent_traces(), data=st.data())
def test_generated_traces_stream_as_they_import(api_client, spans, data):
    check_streaming(api_client, spans, data)


@pytest.mark.parametrize(
    "name", ["jaeger_small.json", "monocle_small.json", "otlp_genai_small.json", "otlp_autogen_round_robin.json"]
)
@SETTINGS
@given(data=st.data())
def test_fixture_traces_stream_as_they_import(api_client, fixtures, name, data):
    (spans,) = _file_traces([fixtures / name])
    check_streaming(api_client, spans, data)


def test_shared_traces_stream_as_they_import(api_client, shared_data):
    files = _otel_files(shared_data)
    traces = _file_traces(files)
    assert len(files) >= 6 and len(traces) >= 5, files

    @SETTINGS
    @given(index=st.sampled_from(range(len(traces))), data=st.data())
    def check(index, data):
        check_streaming(api_client, traces[index], data)

    check()


def test_otlp_encoding_of_a_file_imports_as_the_file(db, shared_data, fixtures):
    """Re-encoded as OTLP, every OpenTelemetry file gives the trace its own importer gives."""
    for path in _otel_files(shared_data) + _otel_files(fixtures):
        for spans in _file_traces([path]):
            Trace.objects.all().delete()
            project = do_get_or_create_project("direct")
            outcomes = do_import_sources(project, [SourceFile(path.name, path.read_bytes())])
            direct = next(stored_form(t) for o in outcomes for t in o.traces if t.source_id == spans[0].trace_id)
            assert import_once(spans, "encoded") == direct, path.name


def test_base64_ids_that_look_like_hex_prefixes(api_client):
    """The refused protobuf batches: span ids whose base64 text starts with "0x"."""
    (spans,) = _file_traces([Path(__file__).resolve().parent.parent / "fixtures" / "otlp_genai_small.json"])
    ids = {s.span_id: (OX_PREFIX + bytes([i]) * 6).hex() for i, s in enumerate(spans, start=1)}
    assert all(base64.b64encode(bytes.fromhex(i)).decode().startswith("0x") for i in ids.values())
    renamed = [
        Span.from_dict({**s.to_dict(), "span_id": ids[s.span_id], "parent_id": ids.get(s.parent_id)}) for s in spans
    ]
    assert stream(api_client, [renamed], ["protobuf"]) == import_once(renamed)


def test_an_exported_trace_posted_back_is_stored_as_it_was(api_client, project, fixtures):
    """The trace page's "Export OTLP" posted to /v1/traces is stored as the exported trace: every
    field with its value types (the native fixture has a task, nested attributes and metrics)."""
    path = fixtures / "native_small.json"
    (outcome,) = do_import_sources(project, [SourceFile(path.name, path.read_bytes())])
    (original,) = outcome.traces
    exported = api_client.get(f"/api/traces/{original.pk}/export/otlp/")
    assert exported.status_code == 200
    body = b"".join(exported.streaming_content)  # a streamed download
    posted = api_client.post("/v1/traces", data=body, content_type="application/json")
    assert posted.status_code == 200, posted.content
    (stored,) = Trace.objects.filter(project=project).exclude(pk=original.pk)
    same_trace(to_core_trace(original), to_core_trace(stored))
