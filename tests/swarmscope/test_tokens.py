"""Token usage: measured totals only, estimates apart (swarmscope.tokens, docs/metrics.md "Tokens"),
reasoning tokens counted as Langfuse counts them; on hand-written traces and on every shared file."""

import json
import math

import swarmscope
from swarmscope.importers import SourceFile, read_files
from swarmscope.importers.langfuse import langfuse_total
from swarmscope.metrics import compute_metrics
from swarmscope.model import Event, Trace
from swarmscope.otlp_export import to_otlp_json
from swarmscope.tokens import TOKENS_ESTIMATED, TokenUsage, event_usage, trace_usage
from tests.swarmscope.importers.spans import make_span
from tests.token_usage import langfuse_call_totals, shared_groups

TRACE_ID = "ab" * 16


def event(eid, tokens=None, content=None, estimated=False):
    return Event(
        eid,
        0.0,
        "message",
        "a",
        tokens=tokens,
        content=content,
        attributes={TOKENS_ESTIMATED: True} if estimated else {},
    )


def test_measured_and_estimated_events_are_kept_apart():
    assert event_usage(event("m", tokens=40)) == TokenUsage(40, 0)
    assert event_usage(event("z", tokens=0)) == TokenUsage(0, 0)  # a measured zero is a measurement
    assert event_usage(event("f", tokens=7, content="x" * 28, estimated=True)) == TokenUsage(None, 7)
    assert event_usage(event("c", content="x" * 9)) == TokenUsage(None, 3)  # ceil(9 / 4)
    assert event_usage(event("n")) == TokenUsage(None, 0)
    trace = Trace(
        "native", "t", events=[event("m", tokens=40), event("f", tokens=7, estimated=True), event("c", content="abcde")]
    )
    assert trace_usage(trace) == TokenUsage(40, 7 + 2)


def test_nothing_measured_is_none_not_zero_and_a_reported_total_wins():
    chat = Trace("whowhen", "t", events=[event("a", tokens=5, estimated=True), event("b", content="hello")])
    assert trace_usage(chat) == TokenUsage(None, 5 + 2)
    # The survey schema reports the trace's usage in costs; its events carry none.
    survey = Trace("survey", "s", events=[event("a", content="abcd")], costs={"tokens": 12000, "wall_clock_s": 4})
    assert trace_usage(survey) == TokenUsage(12000, 1)
    for bad in (True, -1, float("nan"), "12"):
        assert trace_usage(Trace("native", "x", events=[event("a", tokens=3)], costs={"tokens": bad})).measured == 3


def test_metrics_report_the_measured_total_and_the_estimate_apart():
    trace = Trace("native", "t", events=[event("m", tokens=40), event("f", tokens=7, estimated=True)])
    metrics = compute_metrics(trace)
    assert (metrics["tokens"], metrics["estimated_tokens"]) == (40, 7)
    assert "tokens" not in metrics["unavailable"]
    # An importer's flagged estimate is an estimate for the flag too (it was missed before).
    assert metrics["flags"]["tokens_estimated"]
    assert not compute_metrics(Trace("native", "u", events=[event("m", tokens=40)]))["flags"]["tokens_estimated"]


def test_langfuse_total_is_langfuse_rule():
    assert langfuse_total({"input": 120, "output": 30, "output_reasoning": 64, "total": 214}) == 214
    assert langfuse_total({"input": 80, "output": 12, "output_reasoning": 40}) == 80 + 12 + 40
    assert langfuse_total({"input": 1, "note": "x", "flag": True}) == 1
    assert langfuse_total({}) is None


def test_reasoning_tokens_count_as_langfuse_counts_them(fixtures):
    """Usage only in Langfuse's `usageDetails`, reasoning split off the output (its SDKs' shape):
    each call counts Langfuse's total for it, not input + output (150 and 92 before)."""
    (trace,) = swarmscope.read_traces(fixtures / "langfuse_reasoning_tokens.json")
    calls = {e.attributes["span_name"]: e.tokens for e in trace.events if event_usage(e).measured is not None}
    assert calls == {"chat o3-mini": 214, "chat gemini-2.5-flash": 80 + 12 + 40}
    assert trace.costs["tokens"] == 346 and trace.costs["reasoning_tokens"] == 64 + 40
    # The agent's roll-up (520) is not a call; the calculator's text is estimated, apart.
    usage = trace_usage(trace)
    assert usage.measured == 346 and usage.estimated == math.ceil(len('{"expression": "9.9 - 9.11"}') / 4) + 1
    assert compute_metrics(trace)["tokens"] == 346


def test_an_otel_span_total_counts_thinking_tokens_left_out_of_the_output():
    """A Gemini call whose output count leaves its thoughts out: the reported total holds them."""
    spans = [
        make_span(
            TRACE_ID,
            "1",
            name="invoke_agent planner",
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="planner",
        ),
        make_span(
            TRACE_ID,
            "2",
            "1",
            name="chat gemini-2.5-pro",
            gen_ai__operation__name="chat",
            gen_ai__usage__input_tokens=100,
            gen_ai__usage__output_tokens=20,
            gen_ai__usage__total_tokens=100 + 20 + 300,
        ),
        make_span(
            TRACE_ID,
            "3",
            "1",
            name="chat gpt-4o",
            gen_ai__operation__name="chat",
            gen_ai__usage__input_tokens=7,
            gen_ai__usage__output_tokens=5,
        ),
    ]
    trace = swarmscope.importers.otel.build_trace(spans, source_format="otlp", trace_id=TRACE_ID, sources=["x"])
    assert sorted(e.tokens for e in trace.events if event_usage(e).measured is not None) == [12, 420]
    assert trace.costs["tokens"] == 432


def test_spans_without_usage_give_no_measured_cost():
    spans = [
        make_span(
            TRACE_ID,
            "1",
            name="invoke_agent a",
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="a",
            input__value="hello there",
        )
    ]
    trace = swarmscope.importers.otel.build_trace(spans, source_format="otlp", trace_id=TRACE_ID, sources=["x"])
    assert "tokens" not in trace.costs and trace.attributes[TOKENS_ESTIMATED] is True
    assert trace_usage(trace).measured is None and trace_usage(trace).estimated > 0


def _read(files):
    result = read_files(SourceFile(str(p), p.read_bytes()) for p in files)
    assert not result.failed, [f.error for f in result.failed]
    return result.traces


def test_every_shared_file_totals_its_measured_usage(shared_data):
    """Library totals and metrics equal the usage summed by hand from the raw files; estimates are
    apart: a trace without measurement has none (None), never its estimate."""
    groups = shared_groups(shared_data)
    assert len(groups) == 10 + 1 + 4 + 1 + 5 + 2 + 45 + 1
    for label, files, expected in groups:
        for trace in _read(files):
            usage = trace_usage(trace)
            metrics = compute_metrics(trace)
            assert (usage.measured, metrics["tokens"]) == (expected, expected), label
            assert metrics["estimated_tokens"] == usage.estimated, label
            assert metrics["flags"]["tokens_estimated"] or not usage.estimated, label
            if expected is None:
                assert usage.estimated > 0 and "tokens" in metrics["unavailable"], label
            elif trace.source_format != "survey":
                assert trace.costs["tokens"] == expected, label


def test_langfuse_exports_count_langfuse_total_per_call(shared_data):
    """Each call's tokens are the total Langfuse shows for its observation."""
    for path in sorted((shared_data / "langfuse-exports").glob("*.json")):
        (trace,) = _read([path])
        measured = sorted(u.measured for e in trace.events if (u := event_usage(e)).measured is not None)
        assert measured == langfuse_call_totals(path), path.name


def test_hand_computed_totals_of_two_exports(shared_data):
    """Two files by hand. agno: the `chat gpt-4o-mini` generations 663 + 225 = 888 and 163 + 20 = 183
    (the `OpenAIChat.invoke` generations wrapping them, 1991 and 777, are the same two calls);
    microsoft-agent: `chat gpt-5-mini` 77 + 86 = 163 and 216 + 20 = 236 (the `invoke_agent` AGENT
    observation's 224 is no call)."""
    exports = shared_data / "langfuse-exports"
    for name, expected in (
        ("agno-2025-06-11.trace.json", 888 + 183),
        ("microsoft-agent-2025-12-17.trace.json", 163 + 236),
    ):
        (trace,) = _read([exports / name])
        assert trace_usage(trace).measured == expected, name
        # what the trace list showed before: estimates added to the measurement
        assert sum(e.tokens or 0 for e in trace.events) > expected, name


def test_who_and_when_estimates_are_characters_over_four(shared_data):
    for path in sorted((shared_data / "who-and-when").rglob("*.json")):
        (trace,) = _read([path])
        history = json.loads(path.read_text())["history"]
        expected = sum(math.ceil(len(h.get("content") or "") / 4) for h in history)
        assert trace_usage(trace) == TokenUsage(None, expected), path.name


def test_an_otlp_export_never_writes_an_estimate_as_usage(fixtures):
    """A backend reading the export (Langfuse, Phoenix) would count `gen_ai.usage.*` as measured:
    estimates go under Swarmscope's own key, and come back as estimates."""
    (chat,) = swarmscope.read_traces(fixtures / "whowhen_hand_crafted.json")
    (calls,) = swarmscope.read_traces(fixtures / "langfuse_reasoning_tokens.json")
    for trace, measured_calls in ((chat, 0), (calls, 2)):
        doc = to_otlp_json(trace)
        spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        usage = [a for s in spans for a in s["attributes"] if a["key"].startswith("gen_ai.usage.")]
        assert len(usage) == measured_calls, trace.name
        (back,) = read_files([SourceFile("export.json", json.dumps(doc).encode())]).traces
        assert trace_usage(back) == trace_usage(trace), trace.name
