"""SwarmSim with language-model workers (trainer.sim.llm_workers): the arithmetic chain, error
propagation through the reported answers, missing inputs, the answer cache and the trace's texts.

The model is the boundary here: `calculator` and `off_by_one_on` are stand-ins for it that answer
in the constrained form `<sum> = <number>` (one right, one wrong where told), so the environment's
own rules are checked exactly; the live test at the end asks the real model."""

import re

import pytest

from swarmscope.model import trace_from_dict, validate_trace
from trainer.rollout.chat import ChatClient
from trainer.sim import actions as act
from trainer.sim.env import SimConfig, replay_trace
from trainer.sim.llm_workers import (
    EXPERT_SAMPLES,
    LLMWorkerEnv,
    Worker,
    chat_worker,
    operands,
    parse_answer,
    true_values,
)
from trainer.sim.tasks import Subtask, Task

#: A three-subtask task: 0 and 1 from start values (1 two-digit), 2 adds both.
DIAMOND = Task("diamond", (Subtask(0, 0.2), Subtask(1, 0.8), Subtask(2, 0.3, (0, 1))))


def terms(messages) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", messages[-1]["content"])]


def calculator(messages, regex, seed, n):
    """The model's stand-in that always adds right, in the form the regex asks."""
    answer = f"{' + '.join(map(str, terms(messages)))} = {sum(terms(messages))}"
    assert re.fullmatch(regex, answer)
    return [answer] * n


def off_by_one_on(wrong: set[int]):
    """A stand-in that answers one too many on the sums that start with one of `wrong`'s values."""

    def ask(messages, regex, seed, n):
        numbers = terms(messages)
        return [f"{' + '.join(map(str, numbers))} = {sum(numbers) + (numbers[0] in wrong)}"] * n

    return ask


def play(task, worker, seed=0, order=None, verifier=False, role="solver"):
    env = LLMWorkerEnv(task, SimConfig(aggregate_base=1.0), seed, worker=worker)
    env.step(act.spawn(role))
    if verifier:
        env.step(act.spawn("verifier"))
    for i in order or range(len(task.subtasks)):
        env.step(act.delegate(i, f"{role}_1"))
    env.step(act.aggregate())
    env.step(act.stop())
    return env


def test_true_values_add_the_deps_results_to_the_operand():
    (a0, b0), (a1, b1), (_, b2) = (operands(DIAMOND, i) for i in range(3))
    assert true_values(DIAMOND) == [a0 + b0, a1 + b1, a0 + b0 + a1 + b1 + b2]
    assert 1 <= b0 <= 9 and 10 <= b1 <= 99 and 1 <= b2 <= 9  # difficulty 0.8 >= TWO_DIGITS: two digits
    assert operands(DIAMOND, 1) == operands(Task("diamond", DIAMOND.subtasks), 1)  # from the task's id


def test_right_answers_solve_the_task_and_the_trace_holds_the_questions_and_answers():
    env = play(DIAMOND, Worker(calculator))
    episode = env.episode()
    assert episode.reward == 1.0 and env.answers == dict(enumerate(true_values(DIAMOND)))
    calls = {e.id: e.content for e in episode.trace.events if e.type == "tool_call"}
    results = {e.id: e.content for e in episode.trace.events if e.type == "tool_result"}
    a1, b1 = operands(DIAMOND, 1)
    assert calls["solve:1:0"] == f"What is {a1} + {b1}?" and results["result:1:0"] == f"{a1} + {b1} = {a1 + b1}"
    v0, v1 = true_values(DIAMOND)[:2]
    assert calls["solve:2:0"] == f"What is {v0} + {v1} + {operands(DIAMOND, 2)[1]}?"


def test_a_wrong_answer_propagates_through_the_sums_that_use_it():
    a0, _ = operands(DIAMOND, 0)
    env = play(DIAMOND, Worker(off_by_one_on({a0})))
    truth = true_values(DIAMOND)
    assert env.answers[0] == truth[0] + 1 and env.answers[1] == truth[1]
    # subtask 2 adds the reported (wrong) value right, and is wrong by the same one
    assert env.answers[2] == truth[2] + 1
    correct = {e.id: e.attributes["correct"] for e in env.episode().trace.events if e.type == "tool_result"}
    assert correct == {"result:0:0": False, "result:1:0": True, "result:2:0": False}
    assert env.episode().reward == 0.0


def test_a_missing_input_is_wrong_without_a_request():
    worker = Worker(calculator)
    env = play(DIAMOND, worker, order=[2, 0, 1])
    assert env.answers[2] is None and worker.requests == 2 and env.episode().reward == 0.0


def test_a_replayed_episode_answers_from_the_cache_and_its_trace_is_the_same():
    seen = []

    def ask(messages, regex, seed, n):
        seen.append(seed)
        return calculator(messages, regex, seed, n)

    worker = Worker(ask)
    first = play(DIAMOND, worker, seed=5).episode().trace
    again = play(DIAMOND, worker, seed=5).episode().trace
    assert first == again and worker.requests == 3 and len(seen) == 3
    play(DIAMOND, worker, seed=6)
    assert worker.requests == 6 and len(set(seen)) == 6  # each attempt's seed is the episode's draw


def test_forced_outcomes_are_refused():
    with pytest.raises(ValueError, match="no solve outcomes to force"):
        LLMWorkerEnv(DIAMOND, outcomes={"solve/0/0": True}, worker=Worker(calculator))


def test_an_expert_answers_with_the_most_common_of_its_samples():
    def noisy(messages, regex, seed, n):
        numbers = terms(messages)
        right, wrong = sum(numbers), sum(numbers) + 1
        prefix = " + ".join(map(str, numbers))
        return [f"{prefix} = {v}" for v in ([wrong, right, right, wrong, right] if n > 1 else [wrong])]

    single = play(DIAMOND, Worker(noisy), role="solver")
    assert single.answers[0] == true_values(DIAMOND)[0] + 1
    expert = play(DIAMOND, Worker(noisy), role="expert")
    assert expert.answers == dict(enumerate(true_values(DIAMOND)))
    a0, b0 = operands(DIAMOND, 0)
    [first] = [e for e in expert.episode().trace.events if e.id == "result:0:0"]
    v = a0 + b0
    assert (
        first.content
        == f"{a0} + {b0} = {v} (the most common of {EXPERT_SAMPLES} answers: {v + 1}, {v}, {v}, {v + 1}, {v})"
    )


@pytest.mark.parametrize(
    "text, value", [("3 + 4 = 7", 7), ("12 + 30 = 42.", 42), ("The value is 5", 5), ("no number", None)]
)
def test_parse_answer(text, value):
    assert parse_answer(text) == value


@pytest.mark.live_llm
def test_the_real_model_answers_every_sum_in_the_constrained_form_and_replays_from_the_cache(llm_endpoint):
    base_url, model = llm_endpoint
    worker = chat_worker(ChatClient(base_url.rstrip("/"), model or "SmolLM2-135M-Instruct", timeout_s=120))
    env = play(DIAMOND, worker, seed=1, verifier=True)
    results = [e for e in env.episode().trace.events if e.type == "tool_result"]
    assert results and all(re.fullmatch(r"[\d +]+ = \d{1,4}", e.content) for e in results)
    assert all(env.answers[i] is not None for i in range(3))
    sent = worker.requests
    assert play(DIAMOND, worker, seed=1, verifier=True).episode().trace == env.episode().trace
    assert worker.requests == sent


def test_the_trace_names_its_environment_and_is_not_offered_to_swarmsims_re_simulation():
    trace = play(DIAMOND, Worker(calculator)).episode().trace
    validate_trace(trace)
    assert trace_from_dict(trace.to_dict()) == trace
    assert trace.system == "swarmsim-llm-workers" and trace.attributes["environment"] == "llm_workers"
    assert "action_list" not in trace.attributes and "p_success" not in trace.attributes
    with pytest.raises(ValueError, match="not a re-runnable SwarmSim trace"):
        replay_trace(trace.attributes)
