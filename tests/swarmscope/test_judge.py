"""Who&When LLM-judge methods on the hand-crafted fixture, with scripted answers (no LLM)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmscope import judge
from swarmscope.importers import SourceFile, read_files
from swarmscope.model import Agent, Event, Trace
from tests.conftest import FIXTURES


@pytest.fixture
def trace():
    path = FIXTURES / "whowhen_hand_crafted.json"
    return read_files([SourceFile(str(path), path.read_bytes())]).traces[0]


def scripted(mistake: int):
    """A judge that knows the mistake is at step `mistake`; records its prompts."""
    prompts = []

    def complete(messages):
        prompt = messages[-1]["content"]
        prompts.append(prompt)
        if "which half" in prompt:
            mid = int(re.search(r"upper half \(steps \d+ - (\d+)\)", prompt).group(1))
            return "upper half" if mistake <= mid else "lower half"
        if "(Step " in prompt:
            return "Yes, this step is wrong." if f"(Step {mistake})" in prompt else "No. Fine."
        return f"Agent Name: websurfer\nStep Number: {mistake}\nReason for Mistake: misread."

    complete.prompts = prompts
    return complete


def test_labels(trace):
    assert judge.labels_of(trace) == ("websurfer", 3)


@pytest.mark.parametrize("method, calls", [("all_at_once", 1), ("step_by_step", 4), ("binary_search", 4)])
def test_each_method_finds_the_scripted_mistake(trace, method, calls):
    complete = scripted(3)
    prediction = judge.judge(trace, complete, method)
    assert prediction.step == 3 and prediction.calls == calls == len(complete.prompts)
    assert judge.agent_correct(prediction, "websurfer") and judge.step_correct(prediction, 3)
    assert "The Answer for the problem is: 42" in complete.prompts[0]


def test_prompts_show_the_log_with_0_based_steps(trace):
    prompt = judge.all_at_once_prompt(trace)
    assert "Step 0 - human: What is 6 times 7?" in prompt and "Step 10 - Orchestrator:" in prompt
    assert "The Answer" not in judge.all_at_once_prompt(trace, ground_truth=False)
    assert "steps 0 to 10" in judge.binary_prompt(trace, 0, 5, 10)


def test_step_by_step_without_a_yes_predicts_nothing(trace):
    prediction = judge.step_by_step(trace, lambda messages: "No")
    assert prediction.step is None and prediction.calls == 11 and not judge.step_correct(prediction, 3)


def constrained(mistake: int):
    """`scripted(mistake)` that also takes the `structured` keyword and records what it was given."""
    free = scripted(mistake)
    formats = []

    def complete(messages, *, structured=None):
        formats.append(structured)
        return free(messages)

    complete.prompts, complete.formats = free.prompts, formats
    return complete


@pytest.mark.parametrize(
    "method, answer_format",
    [("step_by_step", judge.YES_NO), ("binary_search", judge.HALVES), ("all_at_once", None)],
)
def test_each_method_asks_for_its_answer_format_where_the_model_takes_one(trace, method, answer_format):
    complete = constrained(3)
    prediction = judge.judge(trace, complete, method)
    assert prediction.step == 3 and judge.agent_correct(prediction, "websurfer")
    expected = answer_format or judge.all_at_once_format(trace)
    assert complete.formats == [expected] * prediction.calls
    kwargs_only = scripted(3)
    assert judge.judge(trace, lambda messages, **kwargs: kwargs_only(messages), method) == prediction


def test_the_all_at_once_format_lists_the_logs_speakers_and_steps(trace):
    regex = judge.all_at_once_format(trace)["regex"]
    assert regex == (
        "Agent Name: (human|Orchestrator|WebSurfer|ComputerTerminal)\\nStep Number: (0|1|2|3|4|5|6|7|8|9|10)"
        "\\nReason for Mistake: [^\\n]{0,400}"
    )
    assert re.fullmatch(regex, "Agent Name: WebSurfer\nStep Number: 10\nReason for Mistake: misread.")
    for answer in (
        "Agent Name: FileSurfer\nStep Number: 3\nReason for Mistake: x",
        "Agent Name: WebSurfer\nStep Number: 11\nReason for Mistake: x",
    ):
        assert not re.fullmatch(regex, answer)
    trace.events = []
    assert judge.all_at_once_format(trace) is None


@pytest.mark.parametrize("name", ["Orchestrator (thought)", "a.b*c+d?e", "[x]{1}|y^$\\z", "tab\there", "two\nlines"])
def test_regex_literal_matches_exactly_the_name(name):
    assert re.fullmatch(judge.regex_literal(name), name)
    assert not re.fullmatch(judge.regex_literal(name), name + "x") and not re.fullmatch(judge.regex_literal(name), "x")


SPEAKERS = ["human", "Orchestrator (thought)", "Data_Analysis_Expert", "Web Surfer 2", "a+b"]
TEN_STEPS = Trace(
    "native",
    "ten",
    events=[Event(f"e{k}", float(k), "message", SPEAKERS[k % 5], content=f"step {k}") for k in range(10)],
    agents=[Agent(name) for name in SPEAKERS],
)


@given(st.from_regex((judge.all_at_once_format(TEN_STEPS) or {})["regex"], fullmatch=True))
@settings(max_examples=200, deadline=None)
def test_every_answer_in_the_all_at_once_format_parses_to_a_listed_agent_and_step(answer):
    agent, step = judge.parse_all_at_once(answer)
    assert agent in SPEAKERS and 0 <= step < 10 and answer.startswith(f"Agent Name: {agent}\nStep Number: {step}\n")


@pytest.mark.parametrize("answer", judge.YES_NO["choice"] + judge.HALVES["choice"])
def test_every_choice_parses(answer):
    parse = judge.parse_half if "half" in answer else judge.parse_yes_no
    assert parse(answer) in (True, False, "upper", "lower")


@pytest.mark.parametrize(
    "answer, parsed",
    [
        ("Agent Name: WebSurfer\nStep Number: 3\nReason: x", ("WebSurfer", 3)),
        ("**Agent Name:** Orchestrator\n**Step Number:** 12", ("Orchestrator", 12)),
    ],
)
def test_parse_all_at_once(answer, parsed):
    assert judge.parse_all_at_once(answer) == parsed


@pytest.mark.parametrize(
    "parse, answer",
    [
        (judge.parse_all_at_once, "It was WebSurfer."),
        (judge.parse_yes_no, "Maybe."),
        (judge.parse_half, "upper half or lower half"),
        (judge.parse_half, "the middle"),
    ],
)
def test_unparseable_answers_raise(parse, answer):
    with pytest.raises(judge.JudgeParseError):
        parse(answer)


def test_scoring_is_exact_equality_not_substring():
    prediction = judge.Prediction("all_at_once", "WebSurfer", 1, 1)
    assert not judge.step_correct(prediction, 12) and judge.step_correct(prediction, 1)
    assert not judge.agent_correct(judge.Prediction("x", "Surfer", 1, 1), "WebSurfer")
    assert judge.agent_correct(prediction, "websurfer")
    assert judge.accuracy([(prediction, ("websurfer", 12)), (None, ("a", 1))]) == (0.0, 0.5)


def test_the_verifier_prompt_shows_the_task_the_reference_and_the_final_answer(trace):
    system, user = judge.verifier_messages(trace, "FINAL ANSWER: 42")
    assert system == {"role": "system", "content": judge.VERIFIER_SYSTEM}
    assert user["content"].startswith(
        "Task: What is 6 times 7?\nAnswer with a number.\nReference answer: 42\n"
        "Final answer of the system (its last turn):\nFINAL ANSWER: 42\n\n"
    )
    trace.attributes.pop("ground_truth")
    assert "Reference answer" not in judge.verifier_messages(trace, "42")[1]["content"]


@pytest.mark.parametrize(
    "answer, outcome",
    [
        ('{"correct": true}', 1.0),
        (' {"correct": false, "reason": "off by one"}\n', 0.0),
        ('```json\n{"score": 0.75}\n```', 0.75),
        ('{"score": 0}', 0.0),
        ('{"score": 1}', 1.0),
    ],
)
def test_parse_verdict(answer, outcome):
    assert judge.parse_verdict(answer) == outcome


@pytest.mark.parametrize(
    "answer",
    [
        "Correct.",
        '{"correct": "yes"}',
        '{"correct": 1}',
        '{"score": 1.01}',
        '{"score": -0.1}',
        '{"score": true}',
        '{"score": NaN}',
        '{"correct": true, "score": 1}',
        '{"reason": "fine"}',
        "[true]",
        'Verdict: {"correct": true}',
        '{"correct": true}\nI am sure.',
    ],
)
def test_malformed_verdicts_raise(answer):
    with pytest.raises(judge.JudgeParseError):
        judge.parse_verdict(answer)
