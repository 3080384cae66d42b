"""The span mapping is a function of the set of spans: the spans of a trace, arriving in any
batches and order, some batches sent twice, and with their GenAI log records joined before or after,
map to the trace of all of them at once. OTLP ingest stores a trace's spans as they come and maps
the set (webapp.traces.span_ingest); this is what lets it do so, on every shared, fixture and sample
OpenTelemetry trace, in seeded random batch splits."""

import json
import random
from pathlib import Path

import pytest

from swarmscope.importers import SourceFile, decode, detect, otlp
from swarmscope.importers.otel import Span

REPO = Path(__file__).resolve().parents[3]
SPLITS = 5  # seeded batch splits per trace
OTEL_FORMATS = ("otlp", "jaeger", "otel_sdk")


def otel_traces(root: Path) -> dict[str, list[Span]]:
    """`format:trace id` -> spans, for every OpenTelemetry file below `root` that imports (the
    chunks of one trace id that an exporter rolled into several files merged, as an import of
    them all merges them)."""
    traces: dict[str, list[Span]] = {}
    for path in sorted(root.rglob("*.json")):
        try:
            doc = decode(SourceFile(path.name, path.read_bytes()))
        except ValueError:
            continue  # the Monocle chunk cut off upstream
        module = detect(doc) if doc is not None else None
        if module is None or module.FORMAT not in OTEL_FORMATS:
            continue
        for trace_id, records in module.split(doc).items():
            traces.setdefault(f"{module.FORMAT}:{trace_id}", []).extend(module.to_spans(trace_id, records))
    return traces


def arrivals(spans: list, rng: random.Random) -> list[list]:
    """`spans` as an exporter may deliver them: in end-time order or shuffled, cut into 1 to 6
    batches, the batches shuffled, one of them sent twice."""
    order = sorted(spans, key=lambda s: s.end_ns) if rng.random() < 0.5 else rng.sample(spans, len(spans))
    cuts = sorted(rng.sample(range(1, len(order)), min(rng.randint(0, 5), len(order) - 1)))
    batches = [order[a:b] for a, b in zip([0, *cuts], [*cuts, len(order)])]
    rng.shuffle(batches)
    return [*batches, rng.choice(batches)]


def map_spans(trace_id: str, batches: list[list[Span]]) -> object:
    """The trace of the spans of `batches`, as they arrived (duplicates and all)."""
    return otlp.build(trace_id, [span for batch in batches for span in batch], ["batches"])


def check_batches(name: str, spans: list[Span]) -> None:
    trace_id = spans[0].trace_id
    whole = otlp.build(trace_id, spans, ["batches"])
    for seed in range(SPLITS):
        batches = arrivals(spans, random.Random(f"{name}:{seed}"))
        assert map_spans(trace_id, batches) == whole, (name, seed)


def test_shared_traces_map_the_same_in_any_batches(shared_data):
    traces = otel_traces(shared_data)
    assert len(traces) >= 5, sorted(traces)
    for name, spans in traces.items():
        check_batches(name, spans)


@pytest.mark.parametrize("root", ["tests/fixtures", "samples"])
def test_fixture_and_sample_traces_map_the_same_in_any_batches(root):
    traces = otel_traces(REPO / root)
    assert traces, root
    for name, spans in traces.items():
        check_batches(name, spans)


def test_log_records_join_their_spans_whichever_batch_brings_them(fixtures):
    """GenAI content on the logs signal: attached to the spans of any subset that holds their span,
    the spans of the other batches untouched, the trace is the one of all spans and records at once."""
    (spans,) = otlp.split(json.loads((fixtures / "otlp_multi_agent_spans.json").read_text())).values()
    records = otlp.split_logs(json.loads((fixtures / "otlp_multi_agent_logs.json").read_text()))
    trace_id = spans[0].trace_id
    whole = otlp.build(trace_id, otlp.attach_logs(spans, records), ["batches"])
    assert any(e.content for e in whole.events) and not any(
        e.content for e in otlp.build(trace_id, spans, ["batches"]).events if e.type == "message"
    )
    for seed in range(SPLITS):
        rng = random.Random(f"logs:{seed}")
        batches = arrivals(spans, rng)
        shuffled = rng.sample(records, len(records))
        joined = [otlp.attach_logs(batch, shuffled) for batch in batches]
        assert map_spans(trace_id, joined) == whole, seed
