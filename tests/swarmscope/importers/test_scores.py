"""Scores are not rewards unless the user says so (`swarmscope.importers.scores`): Langfuse scores
and OpenTelemetry evaluation results stay labels with their names; `read_files(reward_score=...)`
makes the named score the reward, else a score named `reward`; rewards that are not scores stay.

The real Langfuse export `claude-agent-2025-12-22.trace.json` is scored correctness 0,
hallucination 1, toxicity 0 (three EVAL trace scores, read from the raw file).
"""

import json

import pytest

from swarmscope.importers import SourceFile, otlp, read_files
from swarmscope.importers.otel import SpanEvent, build_trace
from swarmscope.importers.scores import reward_score_name, select_reward
from tests.swarmscope.importers.spans import make_span

CLAUDE_AGENT = "langfuse-exports/claude-agent-2025-12-22.trace.json"
TRACE = "0" * 31 + "7"


def read_one(name: str, data: bytes, reward_score: str | None = None):
    result = read_files([SourceFile(name, data)], reward_score=reward_score)
    assert [f.error for f in result.files] == [None], result.files
    (trace,) = result.traces
    return trace


def evaluated_spans(*results: tuple[str, float]) -> list:
    """An agent span with one LLM call, evaluated by a `gen_ai.evaluation.result` event per result."""
    agent = make_span(
        TRACE, "1", None, "invoke_agent a", 1.0, 2.0, gen_ai__operation__name="invoke_agent", gen_ai__agent__name="a"
    )
    chat = make_span(TRACE, "2", "1", "chat", 1.1, 1.5, gen_ai__operation__name="chat", gen_ai__usage__input_tokens=3)
    chat.events = [
        SpanEvent(
            "gen_ai.evaluation.result",
            None,
            {"gen_ai.evaluation.name": name, "gen_ai.evaluation.score.value": score},
        )
        for name, score in results
    ]
    return [agent, chat]


def otlp_file(spans) -> bytes:
    return json.dumps(otlp.encode_json(spans)).encode()


def test_langfuse_scores_are_labels_not_rewards(shared_data):
    data = (shared_data / CLAUDE_AGENT).read_bytes()
    trace = read_one("claude.json", data)
    assert trace.rewards == {}  # hallucination = 1 is no success
    assert "reward_score" not in trace.attributes
    assert {(lb.key, lb.value) for lb in trace.labels} == {("correctness", 0), ("hallucination", 1), ("toxicity", 0)}
    assert trace.attributes["score_values"] == {"correctness": 0.0, "hallucination": 1.0, "toxicity": 0.0}


def test_a_score_is_the_reward_when_named(shared_data):
    data = (shared_data / CLAUDE_AGENT).read_bytes()
    trace = read_one("claude.json", data, reward_score="correctness")
    assert trace.rewards == {"correctness": 0.0}
    assert trace.attributes["reward_score"] == "correctness"
    # the other scores stay labels with their names
    assert {lb.key for lb in trace.labels} == {"correctness", "hallucination", "toxicity"}
    # a name the trace has no score of: no reward (no score is named `reward` either)
    assert read_one("claude.json", data, reward_score="helpfulness").rewards == {}


def test_a_langfuse_score_named_reward_is_the_reward(fixtures):
    doc = json.loads((fixtures / "langfuse_openinference_handoff.json").read_text())
    head = doc["trace"]
    head["scores"] = [*head["scores"], {**head["scores"][0], "id": "s-9", "name": "reward", "value": 0.25}]
    trace = read_one("handoff.json", json.dumps(doc).encode())
    assert trace.rewards == {"reward": 0.25}
    # a named score wins over `reward`; `reward` then stays a label only
    named = read_one("handoff.json", json.dumps(doc).encode(), reward_score="helpfulness")
    assert named.rewards == {"helpfulness": 0.75}
    assert {lb.key for lb in named.labels} >= {"reward", "helpfulness"}


def test_otel_evaluations_reward_only_by_name():
    spans = evaluated_spans(("relevance", 0.9), ("reward", 0.4), ("relevance", 0.5))
    data = otlp_file(spans)
    trace = read_one("eval.json", data)
    assert trace.rewards == {"reward": 0.4}
    assert trace.attributes["score_values"] == {"relevance": pytest.approx(0.7), "reward": 0.4}
    named = read_one("eval.json", data, reward_score="relevance")
    assert named.rewards == {"relevance": pytest.approx(0.7)}  # per-turn results: their mean
    assert named.attributes["reward_score"] == "relevance"
    # the mapping alone makes no reward of any score
    assert build_trace(spans, source_format="otlp", trace_id=TRACE).rewards == {}
    # without a score named `reward`, and none named: no reward
    assert read_one("eval.json", otlp_file(evaluated_spans(("relevance", 1.0)))).rewards == {}


def test_rewards_that_are_not_scores_stay(fixtures):
    native = (fixtures / "native_small.json").read_bytes()
    before = read_one("native.json", native)
    after = read_one("native.json", native, reward_score="accuracy")
    assert after.rewards == before.rewards and after.rewards  # the fixture's own rewards
    trace = before
    trace.attributes["score_values"] = {"team": 0.0}
    assert select_reward(trace, "team").rewards == after.rewards  # a stored reward is not overwritten


def test_a_chosen_reward_is_kept_when_read_back():
    """Swarmscope's own export keeps `reward_score`: reading it back chooses nothing again."""
    trace = build_trace(evaluated_spans(("a", 1.0), ("b", 0.0)), source_format="otlp", trace_id=TRACE)
    select_reward(trace, "a")
    assert trace.rewards == {"a": 1.0}
    select_reward(trace, "b")
    assert trace.rewards == {"a": 1.0}


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", None), ("  ", None), (" correctness ", "correctness"), ("x" * 200, "x" * 200)],
)
def test_reward_score_names(value, expected):
    assert reward_score_name(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [("x" * 201, "at most 200 characters"), ("a\x00b", "NUL"), (3, "not int")],
)
def test_bad_reward_score_names_name_the_field(value, message):
    with pytest.raises(ValueError, match=f"^reward_score: .*{message}"):
        reward_score_name(value)
