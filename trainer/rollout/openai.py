"""The `openai` rollout backend: counterfactual re-rollouts of an LLM trace through any
OpenAI-compatible chat endpoint (in production a `vllm serve` with prefix caching), sent by the
`openai` package's client (trainer.rollout.chat; docs/architecture.md "Credit"). What a rollout
sends (its slots, prompts, seeds and the plan of its requests, checked against the model's
context) is trainer.rollout.llm_plan; speakers, the orchestrator, final answers and exact match are
trainer.rollout.llm_trace.

Configuration comes from the environment (trainer does not read Django settings):
SWARMSCOPE_OPENAI_BASE_URL (e.g. http://127.0.0.1:8001/v1), SWARMSCOPE_OPENAI_API_KEY (optional),
SWARMSCOPE_OPENAI_MODEL, the client's settings (trainer.rollout.chat: temperature, max tokens of
a turn, a speaker pick and a verdict, timeout, retries, requests in flight, context length),
_MAX_TURNS (0: every turn after the fork), _SCORING (`exact_match` | `verifier`; default below)
and _SPEAKER_ORDER (`original` forces the recorded order; default: the orchestrator picks where
there is one).

Speaker order (`speaker_order` in `environment()`, on `PairedRollouts` and on branch traces):

- `"orchestrator"` where the trace's orchestrator is itself an LLM agent in it (`find_orchestrator`:
  Magentic-One's Orchestrator in Who&When Hand-Crafted logs, a group-chat manager that speaks).
  Its turns are re-generated like any other, and before every re-generated slot after the first
  (the fork turn keeps its speaker) the orchestrator model picks the speaker: its own view of the
  history, then a "who speaks next" question listing the speakers (`speaker_messages`, after AG2's
  GroupChat speaker selection prompt), one request per sample (n = 1, the sample's seed,
  temperature 0, at most SWARMSCOPE_OPENAI_CHOICE_MAX_TOKENS tokens, constrained to the listed
  names on vLLM). The answer must be exactly one listed name (`parse_speaker`); anything else
  keeps that slot's original speaker and counts as a fallback. Fixed slots stay where they were;
  a rollout has as many turns as the original order. A removed agent is never offered as a speaker.
- `"original"` otherwise (or when asked): every slot keeps its recorded speaker.

Seeds couple the arms: the first re-generated slot is shared by all N samples of a call, so it is
one request with `n` = N and `seed` = the first seed (the shared prefix is computed once; vLLM
samples choice i as an n = 1 request at seed + i, i.e. at each sample's own seed); the k-th later
re-generated slot of a sample, where the samples' histories differ, is one request with `n` = 1 and
`turn_seed(seed, k)` (every turn of a sample has its own seed), its speaker pick and verdicts the
sample's seed (temperature 0). Control and intervention send the same seeds. A redelivered chunk
sends the same requests (same seeds, same `n`); samples are reproducible as far as the server's
seeded sampling is. The per-sample requests of one slot (and the verdicts) are sent concurrently,
at most SWARMSCOPE_OPENAI_MAX_IN_FLIGHT at a time, their results kept in sample order whatever
order they complete in.

Scoring (`scoring`) reads a sample's final answer (`final_turn`). `"exact_match"` scores it against
the trace's `ground_truth` attribute (`score`); `"verifier"` asks the same endpoint (temperature 0,
the sample's seed, at most SWARMSCOPE_OPENAI_VERDICT_MAX_TOKENS tokens, constrained to
VERDICT_CHOICES on vLLM) the verifier prompt of `swarmscope.judge.verifier_messages` and reads its
strict JSON verdict (`parse_verdict`: `{"correct": true|false}` or `{"score": x in [0, 1]}`). The
default is exact match where the trace has a ground truth, the verifier where it has none;
SWARMSCOPE_OPENAI_SCORING (`exact_match` | `verifier`) or the `openai-verifier` backend
(`OpenAIVerifierRollout`) choose. Any transport or protocol failure (after the client's retries of
429 / 5xx / timeouts) raises `OpenAIError` naming the cause and the agent and slot (timeout, HTTP
status, malformed JSON, a malformed verdict: `VerdictError`, a prompt over the model's context:
`PromptTooLongError`, checked before sending), so the job fails with that reason and stores nothing.
`PairedRollouts.usage` and `usage()` give the server's own token counts (trainer.rollout.chat.Usage).
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar, cast

import numpy as np

from swarmscope.interventions import Intervention, branch_source_id
from swarmscope.judge import JudgeParseError, parse_verdict, verifier_messages
from swarmscope.model import Edge, Event, Trace
from trainer.rollout.chat import ChatClient, OpenAIError, VerdictError
from trainer.rollout.llm_plan import RolloutPlan, Turn, turn_seed
from trainer.rollout.llm_trace import (
    EXACT_MATCH,
    ORCHESTRATOR,
    ORIGINAL,
    VERIFIER,
    find_orchestrator,
    parse_speaker,
    score,
    speakers_of,
)

log = logging.getLogger(__name__)
#: The verdicts a verifier may answer on vLLM (the strict verdicts `parse_verdict` reads).
VERDICT_CHOICES = ['{"correct": true}', '{"correct": false}']
T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Arm:
    """The N samples of one arm: `histories` (per sample, its (event, content) turns from the fork
    on), `choices` (N,) speaker choices asked of the orchestrator and `fallbacks` (N,) of them that
    kept the original speaker because the answer named no listed speaker; `prefix` the contents
    of the events kept before the fork."""

    histories: list[list[tuple[Event, str]]]
    choices: np.ndarray
    fallbacks: np.ndarray
    prefix: list[str] = field(default_factory=list)


@dataclass
class PairedRollouts:
    """N paired samples: `seeds`, rewards `control` and `treated` (N,), branch traces (when asked),
    the `speaker_order` the rollouts used ("original" | "orchestrator"), and per sample (N,) the
    orchestrator's speaker `choices` and their `fallbacks` to the original order, both arms summed;
    `usage` the server's usage of the call's requests (trainer.rollout.chat.Usage.as_dict)."""

    seeds: np.ndarray
    control: np.ndarray
    treated: np.ndarray
    branches: list[Trace]
    speaker_order: str = ORIGINAL
    choices: np.ndarray | None = None
    fallbacks: np.ndarray | None = None
    usage: dict[str, int] = field(default_factory=dict)


class OpenAIRollout(RolloutPlan):
    """Re-rollouts of an LLM trace through an OpenAI-compatible endpoint (module docstring); a
    backend of the app's counterfactual jobs like `trainer.rollout.sim.SimRollout`.

    `scoring`: EXACT_MATCH | VERIFIER (None: the class's SCORING, else exact match where the trace
    has a `ground_truth` attribute, else the verifier). `speaker_order`: None (the orchestrator picks
    where `find_orchestrator` finds one) or ORIGINAL. Raises ValueError for an unknown value, or
    exact match on a trace without ground truth."""

    queue = "rollouts-gpu"
    #: The scoring a subclass fixes (the `openai-verifier` backend), else None.
    SCORING: str | None = None

    def __init__(
        self,
        trace: Trace,
        client: ChatClient,
        max_turns: int = 0,
        scoring: str | None = None,
        speaker_order: str | None = None,
    ):
        has_truth = "ground_truth" in trace.attributes
        scoring = scoring or self.SCORING or (EXACT_MATCH if has_truth else VERIFIER)
        if scoring not in (EXACT_MATCH, VERIFIER):
            raise ValueError(f"unknown scoring {scoring!r}; one of {EXACT_MATCH!r}, {VERIFIER!r}")
        if scoring == EXACT_MATCH and not has_truth:
            raise ValueError(
                "the trace has no ground_truth attribute to score outcomes against by exact match "
                f"(scoring {VERIFIER!r} needs none)"
            )
        if speaker_order not in (None, "", "auto", ORIGINAL):
            raise ValueError(f"unknown speaker order {speaker_order!r}; 'auto' or {ORIGINAL!r}")
        self.trace, self.client, self.max_turns, self.scoring = trace, client, max_turns, scoring
        self.prompts = {a.name: a.system_prompt for a in trace.agents if a.system_prompt}
        self.speakers = speakers_of(trace)
        orchestrator = None if speaker_order == ORIGINAL else find_orchestrator(trace)
        self.orchestrator = orchestrator if orchestrator in self.speakers and len(self.speakers) > 1 else None
        self.speaker_order = ORCHESTRATOR if self.orchestrator else ORIGINAL

    @classmethod
    def from_trace(cls, trace: Trace) -> OpenAIRollout:
        """The backend of `trace`, configured from the environment (module docstring). Raises
        ValueError when the endpoint is not configured, a setting is unknown, or exact match is asked
        of a trace without ground truth."""
        env = os.environ
        return cls(
            trace,
            ChatClient.from_env(),
            int(env.get("SWARMSCOPE_OPENAI_MAX_TURNS", 0)),
            scoring=cls.SCORING or env.get("SWARMSCOPE_OPENAI_SCORING") or None,
            speaker_order=env.get("SWARMSCOPE_OPENAI_SPEAKER_ORDER") or None,
        )

    def environment(self) -> dict:
        """What re-runs this backend: endpoint, model, sampling parameters (not the key; `seeds`
        names the per-turn seed rule, `turn_seed`), speaker order (with the orchestrator and its
        speakers) and scoring (with the ground truth)."""
        c = self.client
        environment = {
            "base_url": c.base_url,
            "model": c.model,
            "temperature": c.temperature,
            "max_tokens": c.max_tokens,
            "choice_max_tokens": c.choice_max_tokens,
            "verdict_max_tokens": c.verdict_max_tokens,
            "seeds": "turn_seed",
            "max_turns": self.max_turns,
            "speaker_order": self.speaker_order,
            "scoring": self.scoring,
        }
        if self.orchestrator:
            environment.update(orchestrator=self.orchestrator, speakers=self.speakers, speaker_temperature=0.0)
        if self.scoring == VERIFIER:
            environment["verifier_temperature"] = 0.0
        if "ground_truth" in self.trace.attributes:
            environment["ground_truth"] = self.trace.attributes["ground_truth"]
        return environment

    def send(
        self,
        kind: str,
        agent: str,
        slot: str,
        messages: list[dict[str, str]],
        *,
        n: int,
        seed: int,
        temperature: float | None = None,
        max_tokens: int | None = None,
        choices: list[str] | None = None,
    ) -> list[str]:
        """`client.chat` of one planned kind of request ("turn", "speaker", "verdict") of `agent` at
        slot `slot`, its prompt checked against the context first (`check_prompt`). Raises
        OpenAIError (of the client's class) whose message names the agent and slot."""
        limit = self.client.max_tokens if max_tokens is None else max_tokens
        self.check_prompt(kind, agent, slot, messages, limit)
        try:
            return self.client.chat(
                messages, n=n, seed=seed, temperature=temperature, max_tokens=max_tokens, choices=choices
            )
        except OpenAIError as exc:
            where = f"{kind} request of {agent}" + (f" at event {slot}" if slot else "")
            raise type(exc)(f"{where}: {exc}") from exc

    def _map(self, function: Callable[[T], R], items: list[T]) -> list[R]:
        """[function(x) for x in items], at most `client.max_in_flight` at a time; results in the
        order of `items` whatever order they complete in; the first failure (in that order) raised."""
        workers = min(max(1, self.client.max_in_flight), len(items))
        if workers <= 1:
            return [function(item) for item in items]
        with ThreadPoolExecutor(workers, thread_name_prefix="openai-rollout") as pool:
            return list(pool.map(function, items))

    def choose_speaker(
        self, history: list[tuple[Event, str]], speakers: list[str], seed: int, slot: str = ""
    ) -> str | None:
        """The speaker the orchestrator picks after `history`, before slot `slot` (one request, n = 1,
        temperature 0, `seed`, at most the client's choice_max_tokens, constrained to `speakers` on
        vLLM), or None when its answer names no listed speaker."""
        orchestrator = cast(str, self.orchestrator)  # asked only of a rollout with an orchestrator
        answer = self.send(
            "speaker",
            orchestrator,
            slot,
            self.speaker_messages(history, speakers),
            n=1,
            seed=seed,
            temperature=0.0,
            max_tokens=self.client.choice_max_tokens,
            choices=speakers,
        )[0]
        chosen = parse_speaker(answer, speakers)
        if chosen is None:
            log.info("orchestrator %s named no listed speaker (seed %s): %.200r", orchestrator, seed, answer)
        return chosen

    def as_speaker(self, event: Event, agent: str) -> Event:
        """The slot `event` spoken by `agent` (the orchestrator's pick): a message of that agent."""
        if agent == event.agent:
            return event
        return Event(
            event.id,
            event.t,
            "message",
            agent,
            t_end=event.t_end,
            attributes={"speaker_chosen_by": self.orchestrator, "original_speaker": event.agent},
        )

    def run_arm(self, intervention: Intervention, seeds: np.ndarray, control: bool) -> Arm:
        """The samples of one arm at `seeds` (N,), from the fork on."""
        prefix, turns = self.script(intervention, control)
        shared = [(e, e.content or "") for e in prefix]
        samples: list[list[tuple[Event, str]]] = [[] for _ in seeds]
        choices, fallbacks = np.zeros(len(seeds), dtype=int), np.zeros(len(seeds), dtype=int)
        removed = () if control else intervention.agents
        speakers = [name for name in self.speakers if name not in removed]
        k = 0  # re-generated slots so far
        for turn in turns:
            if turn.content is not None:
                for history in samples:
                    history.append((turn.event, turn.content))
                continue
            if k == 0:  # every sample has the same history: one request of n samples
                agent = turn.event.agent
                texts = self.send(
                    "turn",
                    agent,
                    turn.event.id,
                    self.messages(agent, shared + samples[0]),
                    n=len(seeds),
                    seed=int(seeds[0]),
                )
                for history, text in zip(samples, texts):
                    history.append((turn.event, text))
            else:

                def step(i: int, turn: Turn = turn, k: int = k) -> tuple[Event, str, str | None]:
                    history, seed, event = samples[i], int(seeds[i]), turn.event
                    chosen = None
                    if self.orchestrator:
                        chosen = self.choose_speaker(shared + history, speakers, seed, event.id)
                        event = self.as_speaker(event, chosen) if chosen else event
                    messages = self.messages(event.agent, shared + history)
                    return (
                        event,
                        self.send("turn", event.agent, event.id, messages, n=1, seed=turn_seed(seed, k))[0],
                        chosen,
                    )

                for i, (event, text, chosen) in enumerate(self._map(step, list(range(len(seeds))))):
                    if self.orchestrator:
                        choices[i] += 1
                        fallbacks[i] += chosen is None
                    samples[i].append((event, text))
            k += 1
        return Arm(samples, choices, fallbacks, [content for _, content in shared])

    def outcome(self, text: str, seed: int) -> float:
        """The reward in [0, 1] of a sample whose final answer is `text` (module docstring,
        "Scoring"; an empty one scores 0 without asking the verifier). Raises VerdictError for a
        malformed verdict, OpenAIError for a failed request."""
        if self.scoring == EXACT_MATCH:
            return score(text, self.trace.attributes["ground_truth"])
        if not text.strip():
            return 0.0
        answer = self.send(
            "verdict",
            "verifier",
            "",
            verifier_messages(self.trace, text),
            n=1,
            seed=seed,
            temperature=0.0,
            max_tokens=self.client.verdict_max_tokens,
            choices=VERDICT_CHOICES,
        )[0]
        try:
            return parse_verdict(answer)
        except JudgeParseError as exc:
            raise VerdictError(
                f"the verifier's verdict on the final answer of the sample at seed {seed} is malformed: {exc}"
            ) from exc

    def rewards(
        self, samples: list[list[tuple[Event, str]]], seeds: np.ndarray, prefix: list[str] | None = None
    ) -> np.ndarray:
        """Rewards (N,) of the samples' final answers (`finals`), the verdicts asked at the samples'
        seeds, concurrently (`_map`)."""
        pairs = list(zip(self.finals(samples, prefix or []), (int(s) for s in seeds)))
        return np.array(self._map(lambda pair: self.outcome(*pair), pairs), dtype=float)

    def usage(self) -> dict[str, int]:
        """The server's usage of every request this backend sent (trainer.rollout.chat.Usage)."""
        return self.client.usage.as_dict()

    def __call__(self, intervention: Intervention | None, seeds: np.ndarray) -> np.ndarray:
        """Rewards (N,) of `intervention` at `seeds` (None: the recorded outcome, N times)."""
        seeds = np.asarray(seeds)
        if intervention is None:
            return np.full(len(seeds), self.outcome(self.recorded_final(), int(seeds[0])) if len(seeds) else 0.0)
        arm = self.run_arm(intervention, seeds, control=False)
        return self.rewards(arm.histories, seeds, arm.prefix)

    def paired(self, intervention: Intervention, seeds: np.ndarray, traces: bool = False) -> PairedRollouts:
        """N paired samples at `seeds`: control and intervention arms sent with the same seeds; its
        `usage` the server's usage of this call's requests."""
        seeds = np.asarray(seeds)
        self.check(intervention)
        before = self.client.usage.copy()
        control = self.run_arm(intervention, seeds, control=True)
        treated = self.run_arm(intervention, seeds, control=False)
        control_rewards = self.rewards(control.histories, seeds, control.prefix)
        treated_rewards = self.rewards(treated.histories, seeds, treated.prefix)
        branches = []
        if traces:
            branches = [
                self.branch(intervention, int(s), h, float(r), int(c), int(f))
                for s, h, r, c, f in zip(seeds, treated.histories, treated_rewards, treated.choices, treated.fallbacks)
            ]
        fallbacks = control.fallbacks + treated.fallbacks
        if fallbacks.any():
            log.warning(
                "orchestrator %s: %d of %d speaker choices fell back to the original order",
                self.orchestrator,
                fallbacks.sum(),
                (control.choices + treated.choices).sum(),
            )
        return PairedRollouts(
            seeds,
            control_rewards,
            treated_rewards,
            branches,
            self.speaker_order,
            control.choices + treated.choices,
            fallbacks,
            self.client.usage.minus(before).as_dict(),
        )

    def branch(
        self,
        intervention: Intervention,
        seed: int,
        history: list[tuple[Event, str]],
        outcome: float,
        choices: int = 0,
        fallbacks: int = 0,
    ) -> Trace:
        """The branch trace of one intervention sample: the prefix as recorded, then its turns;
        `outcome` is its reward, `choices` / `fallbacks` its orchestrator's speaker choices. Its
        identity (`branch_source_id`) and `sampling` attribute hold `sampling_settings()`."""
        fork = self.fork_index(intervention)
        prefix = [copy.deepcopy(e) for e in self.trace.events[:fork]]
        events = list(prefix)
        for k, (event, content) in enumerate(history):
            new = copy.deepcopy(event)
            new.id, new.content, new.tokens = f"{event.id}~{k}", content, None
            new.t = float(len(events)) if self.trace.attributes.get("synthetic_time") else event.t
            if new.t_end is not None and new.t_end < new.t:
                new.t_end = None
            events.append(new)
        kept = {e.id for e in prefix}
        factual = self.trace.source_id
        branch = copy.deepcopy(self.trace)
        branch.events = events
        branch.edges = [e for e in self.trace.edges if e.src in kept and e.dst in kept] + [
            Edge(events[i - 1].id, events[i].id, "temporal") for i in range(max(fork, 1), len(events))
        ]
        branch.source_id = branch_source_id(factual, intervention, seed, self.sampling_settings())
        branch.name = f"{self.trace.name}, {intervention.describe()}"
        branch.rewards = {"outcome": outcome}
        branch.labels = []
        branch.attributes.update(
            intervention=intervention.to_dict(),
            factual=factual,
            seed=seed,
            fork_event=self.trace.events[fork].id,
            speaker_order=self.speaker_order,
            scoring=self.scoring,
            model=self.client.model,
            sampling=self.sampling_settings(),
        )
        if self.orchestrator:
            branch.attributes.update(
                orchestrator=self.orchestrator, speaker_choices=choices, speaker_fallbacks=fallbacks
            )
        return branch


class OpenAIVerifierRollout(OpenAIRollout):
    """The `openai` backend scored by the verifier prompt whether or not the trace has a ground
    truth: the `openai-verifier` job option (a key of SWARMSCOPE_ROLLOUT_BACKENDS)."""

    SCORING = VERIFIER
