"""SwarmSim with language-model workers: every solve attempt is a model's answer to a verifiable
sub-task, graded by exact match (issue 31 item 2's second environment).

The orchestration is SwarmSim's (`trainer.sim.env`: the same tasks, actions, times, costs, verifier
and reward), but whether a worker's result is correct is not drawn from `solve_probability`: the
worker is asked its subtask as an **arithmetic chain** step and answers as a language model.
Subtask i adds the results of its deps (their workers' answers, as they reported them) to an
operand b_i; a subtask without deps adds b_i to a start value a_i. a_i and b_i are drawn from the
task's id and i (the same task asks the same sums in every episode): one digit, or two where the
subtask's difficulty is at least TWO_DIGITS (two-digit sums are much harder for a small model:
SmolLM2-135M-Instruct got 8 of 12 one-digit sums right and 1 of 12 two-digit ones, 2026-12-07).
The answer is correct when its number equals the true value (the sum of the true values), so a
wrong upstream answer makes every downstream one wrong, as SwarmSim's error propagation does, but
by arithmetic rather than by rule. An attempt whose inputs were not delegated before it (SwarmSim's
missing input) is wrong without a request.

Roles are ways of asking: a `solver` answers once; an `expert` gets a worked example in its prompt
and answers by self-consistency (Wang et al. 2023, arXiv 2203.11171): the most common number of
EXPERT_SAMPLES sampled answers (one request with n = EXPERT_SAMPLES; ties to the first drawn), so
its skill is the model's, bought with EXPERT_SAMPLES times the completion tokens. The answer is
constrained to `<sum> = <number>` (a regular expression; vLLM's structured outputs), the form the
model writes on its own. Each request's seed is the episode's counter-based draw of key
`solve/<i>/<attempt>` (`trainer.sim.rng`), so a re-played episode asks the same requests with the
same seeds; `Worker` caches answers by (prompt, seed, n), so a re-rollout's replayed prefix costs no
request and answers exactly as it did.

What stays SwarmSim's: the verifier's catch (a draw with probability `catch`, as in SwarmSim) and
the aggregate's p_agg draw. What does not hold here: `Episode.p_success` (SwarmSim's closed form of
E[R] from `solve_probability`) is not this environment's expectation, so the credit schemes that
read it (`expected`, `*_exact`, `oracle`) are not offered with it; messages carry no effect.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping

from trainer.sim.env import Episode, SimConfig, SwarmEnv
from trainer.sim.rng import uniform
from trainer.sim.tasks import Task

#: A subtask of at least this difficulty adds a two-digit operand (else one digit).
TWO_DIGITS = 0.5
#: Sampling of a worker's answer: temperature and the most tokens a `<sum> = <number>` answer takes.
WORKER_TEMPERATURE = 0.7
WORKER_MAX_TOKENS = 24
#: Answers an expert samples and takes the majority of (self-consistency).
EXPERT_SAMPLES = 5
#: The system prompt of each solving role (an expert's includes a worked example).
ROLE_PROMPTS = {
    "solver": "You are a worker in a team. Compute the sum you are given.",
    "expert": (
        "You are an expert worker in a team. Compute the sum you are given, digit by digit. Example: 27 + 5 + 14 = 46."
    ),
}

#: Asks a model: (chat messages, the answer's regular expression, seed, n) -> the n answers' texts.
Ask = Callable[[list[dict[str, str]], str, int, int], list[str]]


class Worker:
    """The workers' model behind `ask`, with its answers cached by (messages, seed): a re-played
    request answers as it did, without a request. `requests` counts the ones sent. Thread-safe."""

    def __init__(self, ask: Ask):
        self.ask = ask
        self._answers: dict[tuple[str, int, int], list[str]] = {}
        self._lock = threading.Lock()
        self.requests = 0

    def __call__(self, messages: list[dict[str, str]], regex: str, seed: int, n: int = 1) -> list[str]:
        key = (repr(messages), seed, n)
        with self._lock:
            if key in self._answers:
                return self._answers[key]
        answer = self.ask(messages, regex, seed, n)
        with self._lock:
            self._answers[key] = answer
            self.requests += 1
        return answer


def chat_worker(client) -> Worker:
    """A `Worker` on an OpenAI-compatible `client` (trainer.rollout.chat.ChatClient): n answers
    per request at WORKER_TEMPERATURE, at most WORKER_MAX_TOKENS tokens each, constrained on vLLM."""

    def ask(messages: list[dict[str, str]], regex: str, seed: int, n: int) -> list[str]:
        return client.chat(
            messages,
            n=n,
            seed=seed,
            temperature=WORKER_TEMPERATURE,
            max_tokens=WORKER_MAX_TOKENS,
            structured={"regex": regex},
        )

    return Worker(ask)


def operands(task: Task, i: int) -> tuple[int, int]:
    """(a_i, b_i) of subtask i of `task`: the start value (used where i has no deps) and the
    operand it adds, drawn from the task's id and i; b_i has two digits where the subtask's
    difficulty is at least TWO_DIGITS."""
    start = 1 + int(uniform(0, f"{task.id}/start/{i}") * 9)
    low, span = (10, 90) if task.subtasks[i].difficulty >= TWO_DIGITS else (1, 9)
    return start, low + int(uniform(0, f"{task.id}/operand/{i}") * span)


def true_values(task: Task) -> list[int]:
    """The true result of every subtask of `task` (in order): the sum of its deps' true results
    plus b_i, or a_i + b_i without deps."""
    values: list[int] = []
    for sub in task.subtasks:
        start, operand = operands(task, sub.id)
        values.append((sum(values[d] for d in sub.deps) if sub.deps else start) + operand)
    return values


def parse_answer(text: str) -> int | None:
    """The number after the last `=` of a worker's answer (else its last number); None without one."""
    numbers = re.findall(r"-?\d+", text.rsplit("=", 1)[-1]) or re.findall(r"-?\d+", text)
    return int(numbers[-1]) if numbers else None


class LLMWorkerEnv(SwarmEnv):
    """SwarmSim whose solve attempts are `worker`'s answers (module docstring). `answers` holds
    each subtask's latest reported value (None where the answer had no number or the attempt was
    not made). Raises ValueError with `outcomes` (forced draws enumerate SwarmSim's model, not a
    language model's answers)."""

    def __init__(
        self,
        task: Task,
        config: SimConfig | None = None,
        seed: int = 0,
        outcomes: Mapping[str, bool] | None = None,
        *,
        worker: Callable[[list[dict[str, str]], str, int, int], list[str]],
    ):
        if outcomes:
            raise ValueError("LLMWorkerEnv draws no solve outcomes to force: its workers answer")
        super().__init__(task, config, seed)
        self.worker = worker
        self.truth = true_values(task)
        self.answers: dict[int, int | None] = {}

    def question(self, i: int) -> tuple[str, int]:
        """The sum subtask i asks with the inputs its deps reported, and its expression's true
        value given those inputs (what a worker should answer)."""
        start, operand = operands(self.task, i)
        deps = self.task.subtasks[i].deps
        terms = [self.answers.get(d) or 0 for d in deps] if deps else [start]
        expression = " + ".join(str(term) for term in [*terms, operand])
        return expression, sum(terms) + operand

    def _solve(self, agent: str, i: int, attempt: int, p: float, inputs_correct: bool) -> tuple[bool, str, str]:
        deps = self.task.subtasks[i].deps
        if any(d not in self.answers for d in deps):  # an input not delegated before i: nothing to add
            self.answers[i] = None
            return False, f"subtask {i}: an input is missing", "no answer: an input is missing"
        expression, _ = self.question(i)
        role = self.agents[agent].role
        messages = [
            {"role": "system", "content": ROLE_PROMPTS.get(role, ROLE_PROMPTS["solver"])},
            {"role": "user", "content": f"What is {expression}?"},
        ]
        seed = int(uniform(self.seed, f"solve/{i}/{attempt}") * 2**31)
        n = EXPERT_SAMPLES if role == "expert" else 1
        answers = self.worker(messages, re.escape(expression) + r" = [0-9]{1,4}", seed, n)
        values = [parse_answer(a) for a in answers]
        self.answers[i] = value = max(values, key=values.count)  # the first of the most common
        answer = answers[values.index(value)]
        if n > 1:
            answer += f" (the most common of {n} answers: {', '.join(str(v) for v in values)})"
        return value == self.truth[i], f"What is {expression}?", answer

    def episode(self) -> Episode:
        """SwarmEnv's episode, its trace named for this environment (system `swarmsim-llm-workers`,
        attribute `environment`), without SwarmSim's re-simulation attributes (`action_list`) and its
        closed-form `p_success`: a re-simulation by SwarmSim's draws would not be this episode."""
        episode = super().episode()
        trace = episode.trace
        trace.system = "swarmsim-llm-workers"
        trace.name = f"SwarmSim with LLM workers {self.task.id} seed {self.seed}"
        for key in ("action_list", "p_success"):
            trace.attributes.pop(key, None)
        trace.attributes["environment"] = "llm_workers"
        return episode
