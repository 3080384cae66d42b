"""SwarmSim: a Dynamic Dec-POMDP (survey arXiv 2605.02801, §3) whose episodes are orchestration traces.
(Over 500 lines: the environment's dynamics, one class, kept in one place.)

The orchestrator acts (`trainer.sim.actions`); the agent set changes as it spawns and despawns
sub-agents. A sub-agent delegated subtask i waits for its inputs (the returns of i's deps and the
messages it has received), then solves it with probability

    p_i = clip(1 - difficulty_i * (1 - skill) + gain_i, 0, 1)      (`solve_probability`)

where gain_i sums the planted effects (`trainer.sim.effects`) of the messages it received, and
p_i = 0 when a dep was not delegated before i (missing input). A wrong input makes the result
wrong (error propagation). While a `verifier` is alive it checks every result and catches a wrong
one with probability `catch`, which triggers one re-attempt. The final aggregate is correct when
every subtask's result is, with probability clip(aggregate_base + gain_aggregate, 0, 1); the reward
R is 1 when the final aggregate is correct, else 0 (the shared outcome). Hence the
closed form (`Episode.p_success`): E[R] = p_agg * prod_i q_i, q_i = p_i + (1 - p_i) * c * p_i with
c = catch where a verifier checked i, else 0. Every outcome is drawn by `trainer.sim.rng` from
(seed, key), so replaying the same actions under the same seed gives the same trace.

**Partial credit** (`SimConfig.answer_credit = "partial"`; the default "all_or_nothing" is the
above). The checkpoint score of TheAgentCompany (Xu et al. 2024, arXiv 2412.14161, §3: S_partial =
0.5 * checkpoints passed / total + 0.5 * S_full), with a subtask as a checkpoint:

    R = 0.5 * (correct subtask results) / n + 0.5 * R_full

R_full the all-or-nothing R above (0 without an aggregate). A stop before the aggregate submits
the results delegated so far (waiting for their returns): a partial answer worth 0.5 * share. In
expectation E[R] = 0.5 * (1/n) * sum_i m_i + 0.5 * p_agg * prod_i q_i, m_i = prod of q_j over i and
its ancestors (a result is correct iff its own draws succeed and its inputs are correct, and the
draws are independent). Each delegation adds 0.5 * m_i / n; deep subtasks of a hard task have a
small m_i, less than the critical step their delegation costs in the recipe's reward, so there
more work lowers the expected reward and the best stopping point is interior.

Times are seconds; each action costs time and tokens (`Costs`). Event ids are stable names
(`delegate:3`, `solve:3:0`, `message:<item>`, ...), so a factual and a counterfactual trace
pair up by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import numpy as np

from swarmscope.model import Agent, Edge, Event, Label, Trace
from trainer.sim.actions import ORCHESTRATOR, Action
from trainer.sim.effects import Effect, gain
from trainer.sim.rewards import record_rewards
from trainer.sim.rng import uniform
from trainer.sim.tasks import Task

#: Skill of each role in [0, 1] (probability scale of `solve_probability`).
ROLE_SKILLS = {"solver": 0.6, "expert": 0.9, "verifier": 0.0, "free_rider": 0.0, "scout": 0.0}
#: How an answer is graded (`SimConfig.answer_credit`, module docstring).
ANSWER_CREDITS = ("all_or_nothing", "partial")
#: Weight of the full answer in the partial-credit score (TheAgentCompany's 0.5); the share of
#: correct subtasks gets the rest.
FULL_ANSWER_WEIGHT = 0.5


@dataclass(frozen=True)
class Costs:
    """Time (seconds) and tokens per action. A solve takes `solve_s * (1 + difficulty)`."""

    decision_s: float = 0.1
    solve_s: float = 1.0
    verify_s: float = 0.3
    message_s: float = 0.2
    decision_tokens: int = 30
    solve_tokens: int = 400
    verify_tokens: int = 120
    message_tokens: int = 80
    return_tokens: int = 60


@dataclass(frozen=True)
class SimConfig:
    """Environment configuration (recorded on every trace as `attributes["sim_config"]`).

    `skills`: role -> skill in [0, 1]; `catch`: a verifier's probability of catching a wrong
    result; `aggregate_base`: success probability of the final aggregate before message effects;
    `effects`: planted message effects; `max_steps`: actions after which the episode is stopped.
    `answer_credit`: "all_or_nothing" (R in {0, 1}) or "partial" (module docstring). Raises
    ValueError for another `answer_credit`.
    """

    skills: dict[str, float] = field(default_factory=lambda: dict(ROLE_SKILLS))
    catch: float = 0.8
    aggregate_base: float = 1.0
    effects: tuple[Effect, ...] = ()
    costs: Costs = Costs()
    max_steps: int = 100_000
    answer_credit: str = "all_or_nothing"

    def __post_init__(self) -> None:
        if self.answer_credit not in ANSWER_CREDITS:
            raise ValueError(f"answer_credit: must be one of {', '.join(ANSWER_CREDITS)}, got {self.answer_credit!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimConfig:
        """Inverse of `to_dict` (also of its JSON round trip: lists for tuples)."""
        return cls(
            skills=dict(data["skills"]),
            catch=data["catch"],
            aggregate_base=data["aggregate_base"],
            effects=tuple(Effect(e["kind"], e["amount"], tuple(e["members"]), e["target"]) for e in data["effects"]),
            costs=Costs(**data["costs"]),
            max_steps=data["max_steps"],
            answer_credit=data.get("answer_credit", "all_or_nothing"),  # traces recorded before it
        )


def solve_probability(skill, difficulty, gain_=0.0):
    """clip(1 - difficulty * (1 - skill) + gain, 0, 1); scalars or broadcastable numpy arrays."""
    return np.clip(1.0 - difficulty * (1.0 - skill) + gain_, 0.0, 1.0)


class InvalidAction(ValueError):
    """The action is not legal in the current state (unknown or dead agent, subtask re-delegated, ...)."""


@dataclass
class Observation:
    """What the orchestrator sees: per subtask (n,) whether delegated / returned, live sub-agents by
    role, and whether the aggregate is done. Results' correctness is hidden (partial observability)."""

    task: Task
    delegated: tuple[bool, ...]
    returned: tuple[bool, ...]
    agents: dict[str, list[str]]
    aggregated: bool
    steps: int
    t: float


@dataclass
class Episode:
    """A finished (or stopped) episode: its trace, actions, sampled `reward` (0 or 1) and the closed
    form `p_success` = E[R | these actions] over the random outcomes, = `p_subtasks` (prod_i q_i, 0
    unless every subtask was delegated) times the aggregate's success probability (0 if none).
    Under partial credit (module docstring) `reward` is the score in [0, 1] and `p_success` its
    expectation; `p_subtasks` stays prod_i q_i."""

    trace: Trace
    actions: tuple[Action, ...]
    reward: float
    p_success: float
    p_subtasks: float
    seed: int
    task: Task
    config: SimConfig


def _end(event: Event) -> float:
    """`t_end` (seconds) of an event `SwarmEnv._emit` made: it always sets one."""
    return cast(float, event.t_end)


@dataclass
class _AgentState:
    role: str
    skill: float
    free_at: float
    alive: bool = True
    spawn_event: str | None = None  # until the agent's first event
    inbox: dict[str, float] = field(default_factory=dict)  # item -> arrival time (s)
    received: list[str] = field(default_factory=list)  # message event ids not yet consumed


class SwarmEnv:
    """One episode of SwarmSim: `step(action)` until `done`, then `episode()`.

    Raises InvalidAction for an illegal action. `seed` (int >= 0) keys every random outcome;
    `outcomes` (key -> bool) forces named ones instead (exact enumeration, `trainer.sim.exact`).
    `draws` lists each (key, probability) drawn, in order.
    """

    def __init__(
        self, task: Task, config: SimConfig | None = None, seed: int = 0, outcomes: Mapping[str, bool] | None = None
    ):
        self.task, self.config, self.seed = task, config or SimConfig(), seed
        self.outcomes = outcomes or {}
        self.draws: list[tuple[str, float]] = []
        self.costs = self.config.costs
        self._effects: dict[int | None, list[Effect]] = {}
        for effect in self.config.effects:
            self._effects.setdefault(effect.target, []).append(effect)
        self._planted = {m: e for e in self.config.effects for m in e.members}
        self.t = 0.0
        self.actions: list[Action] = []
        self.events: list[Event] = []
        self.edges: list[Edge] = []
        self.labels: list[Label] = []
        self.agents: dict[str, _AgentState] = {ORCHESTRATOR: _AgentState("orchestrator", 0.0, 0.0)}
        self._trace_agents = [Agent(ORCHESTRATOR, role="orchestrator", spawned_at=0.0)]
        self._spawned: dict[str, int] = {}
        self._delegated: dict[int, str] = {}
        self._results: dict[int, tuple[str, float, bool]] = {}  # subtask -> (return id, t_end, correct)
        self._q: dict[int, float] = {}
        self._ancestors: dict[int, frozenset[int]] = {}  # subtask -> it and its delegated ancestors
        self.score = 0.0  # the sampled reward R (0/1, or the partial-credit score)
        self._ids: dict[str, int] = {}
        self.p_success = self.p_subtasks = 0.0
        self.aggregated = False
        self.correct = False
        self.done = False

    # --- emitting ---------------------------------------------------------------------------

    def _emit(
        self,
        id_: str,
        t: float,
        duration: float,
        type_: str,
        agent: str,
        tokens: int,
        consume: bool = False,
        **fields: Any,
    ) -> Event:
        """Add an event; its agent's spawn edge goes to its first event, and the message edges of
        what it received go to the next event that `consume`s its inbox (a solve or the aggregate)."""
        count = self._ids.get(id_, 0)
        self._ids[id_] = count + 1
        state = self.agents[agent]
        event = Event(
            id=id_ if not count else f"{id_}#{count}",
            t=round(t, 6),
            t_end=round(t + duration, 6),
            type=type_,
            agent=agent,
            role=state.role,
            tokens=tokens,
            **fields,
        )
        self.events.append(event)
        state.free_at = max(state.free_at, _end(event))
        if state.spawn_event is not None:
            self.edges.append(Edge(state.spawn_event, event.id, "spawn"))
            state.spawn_event = None
        if consume:
            self.edges += [Edge(src, event.id, "message") for src in state.received]
            state.received = []
        return event

    def _decision(self, id_: str, type_: str, **fields: Any) -> Event:
        """An orchestrator event at its clock `t`, which it advances by `decision_s`."""
        event = self._emit(
            id_,
            max(self.t, self.agents[ORCHESTRATOR].free_at),
            self.costs.decision_s,
            type_,
            ORCHESTRATOR,
            self.costs.decision_tokens,
            **fields,
        )
        self.t = _end(event)
        return event

    def _alive(self, name: str | None) -> tuple[str, _AgentState]:
        """The name and state of the live agent `name`; raises InvalidAction when there is none."""
        state = self.agents.get(name) if name is not None else None
        if name is None or state is None or not state.alive:
            raise InvalidAction(f"no live agent {name!r}")
        return name, state

    def _bernoulli(self, key: str, p: float) -> bool:
        """Outcome `key` with success probability p: forced where `outcomes` names it, else u < p."""
        self.draws.append((key, p))
        forced = self.outcomes.get(key)
        return uniform(self.seed, key) < p if forced is None else forced

    # --- actions ----------------------------------------------------------------------------

    def step(self, action: Action) -> bool:
        """Apply one orchestrator action; returns `done`. Raises InvalidAction when illegal."""
        if self.done:
            raise InvalidAction("the episode has stopped")
        handler = getattr(self, f"_do_{action.kind}", None)
        if handler is None:
            raise InvalidAction(f"unknown action kind {action.kind!r}")
        handler(action)
        self.actions.append(action)
        if len(self.actions) >= self.config.max_steps and not self.done:
            self._do_stop(action)
        return self.done

    def _do_spawn(self, action: Action) -> None:
        role = action.role
        if role is None or role not in self.config.skills or role == "orchestrator":
            raise InvalidAction(f"unknown role {role!r}")
        number = self._spawned[role] = self._spawned.get(role, 0) + 1
        name = action.agent or f"{role}_{number}"
        if name in self.agents:
            raise InvalidAction(f"agent {name!r} exists")
        event = self._decision(f"spawn:{name}", "spawn", to=name, content=f"spawn {role}")
        state = self.agents[name] = _AgentState(role, self.config.skills[role], _end(event), spawn_event=event.id)
        self._trace_agents.append(
            Agent(name, role=role, parent=ORCHESTRATOR, spawned_at=event.t, attributes={"skill": state.skill})
        )

    def _do_despawn(self, action: Action) -> None:
        if action.agent == ORCHESTRATOR:
            raise InvalidAction("the orchestrator cannot despawn itself")
        _, state = self._alive(action.agent)
        state.alive = False
        event = self._decision(f"despawn:{action.agent}", "despawn", to=action.agent)
        next(a for a in self._trace_agents if a.name == action.agent).despawned_at = event.t

    def _do_message(self, action: Action) -> None:
        (agent, sender), (_, receiver) = self._alive(action.agent), self._alive(action.to)
        if action.agent == action.to or action.item is None:
            raise InvalidAction("a message needs an item and two different agents")
        start = max(self.t, sender.free_at)
        event = self._emit(
            f"message:{action.item}",
            start,
            self.costs.message_s,
            "message",
            agent,
            self.costs.message_tokens,
            from_=action.agent,
            to=action.to,
            content=f"about {action.item}",
            attributes={"item": action.item},
        )
        if action.agent == ORCHESTRATOR:
            self.t = _end(event)
        receiver.inbox.setdefault(action.item, _end(event))
        receiver.received.append(event.id)
        effect = self._planted.get(action.item)
        if effect is not None:
            self.labels.append(Label("planted_effect", effect.kind, event_id=event.id, source="swarmsim"))

    def _do_delegate(self, action: Action) -> None:
        i = action.subtask
        if i is None or not 0 <= i < len(self.task.subtasks) or i in self._delegated:
            raise InvalidAction(f"subtask {i!r} is unknown or already delegated")
        agent, solver = self._alive(action.agent)
        if solver.role in ("orchestrator", "verifier"):
            raise InvalidAction(f"{action.agent} does not solve subtasks")
        subtask = self.task.subtasks[i]
        inputs_ready = all(d in self._delegated for d in subtask.deps)
        self._delegated[i] = agent
        order = self._decision(
            f"delegate:{i}",
            "delegate",
            to=action.agent,
            content=f"solve subtask {i}",
            attributes={"subtask": i, "inputs_ready": inputs_ready},
        )
        solver.received.append(order.id)
        deps = [self._results[d] for d in subtask.deps if d in self._results]
        start = max([_end(order), solver.free_at] + [r[1] for r in deps] + list(solver.inbox.values()))
        bonus = gain(self._effects.get(i, ()), dict.fromkeys(solver.inbox, True))
        p = float(solve_probability(solver.skill, subtask.difficulty, bonus)) if inputs_ready else 0.0
        inputs_correct = inputs_ready and all(r[2] for r in deps)
        result, correct = self._attempt(agent, i, 0, start, [r[0] for r in deps], p, inputs_correct)
        t, accepted = _end(result), None
        verifiers = [name for name, s in self.agents.items() if s.alive and s.role == "verifier"]
        if verifiers:
            checker = verifiers[i % len(verifiers)]
            caught = not correct and self._bernoulli(f"verify/{i}", self.config.catch)
            check = self._emit(
                f"verify:{i}",
                max(t, self.agents[checker].free_at),
                self.costs.verify_s,
                "tool_call",
                checker,
                self.costs.verify_tokens,
                tool="verify",
                content=f"check subtask {i}",
                attributes={"subtask": i, "verdict": "reject" if caught else "accept"},
            )
            self.edges.append(Edge(result.id, check.id, "causal"))
            t = _end(check)
            if caught:
                result, correct = self._attempt(agent, i, 1, t, [check.id], p, inputs_correct)
                t = _end(result)
            else:
                accepted = check.id
        ret = self._emit(
            f"return:{i}",
            max(t, solver.free_at),
            0.0,
            "return",
            agent,
            self.costs.return_tokens,
            from_=action.agent,
            to=ORCHESTRATOR,
            content=f"answer to subtask {i}",
            attributes={"subtask": i},
        )
        if accepted is not None:
            self.edges.append(Edge(accepted, ret.id, "causal"))
        catch = self.config.catch if verifiers else 0.0
        self._q[i] = p + (1 - p) * catch * p
        self._ancestors[i] = frozenset({i}).union(*(self._ancestors[d] for d in subtask.deps if d in self._ancestors))
        self._results[i] = (ret.id, _end(ret), correct)

    def _attempt(
        self, agent: str, i: int, attempt: int, t: float, upstream: list[str], p: float, inputs_correct: bool
    ) -> tuple[Event, bool]:
        """One solve attempt of subtask i (a tool call and its result); returns the result and
        whether it is correct (drawn from key `solve/<i>/<attempt>`; wrong inputs make it wrong)."""
        duration = self.costs.solve_s * (1 + self.task.subtasks[i].difficulty)
        correct, work, answer = self._solve(agent, i, attempt, p, inputs_correct)
        call = self._emit(
            f"solve:{i}:{attempt}",
            t,
            duration,
            "tool_call",
            agent,
            self.costs.solve_tokens,
            consume=True,
            tool="solve",
            content=work,
            attributes={"subtask": i, "attempt": attempt},
        )
        self.edges += [Edge(src, call.id, "causal") for src in upstream]
        result = self._emit(
            f"result:{i}:{attempt}",
            _end(call),
            0.0,
            "tool_result",
            agent,
            0,
            tool="solve",
            content=answer,
            attributes={"subtask": i, "attempt": attempt, "correct": correct, "status": "ok"},
        )
        self.edges.append(Edge(call.id, result.id, "tool_dependency"))
        if not correct:
            self.labels.append(Label("corrupted", True, event_id=result.id, source="swarmsim"))
        return result, correct

    def _solve(self, agent: str, i: int, attempt: int, p: float, inputs_correct: bool) -> tuple[bool, str, str]:
        """Whether `agent`'s attempt at subtask i is correct, and the texts of its work and its
        result: SwarmSim draws it (key `solve/<i>/<attempt>`, probability p; wrong inputs make it
        wrong). `trainer.sim.llm_workers.LLMWorkerEnv` asks a language model instead."""
        correct = inputs_correct and self._bernoulli(f"solve/{i}/{attempt}", p)
        return correct, f"work on subtask {i}", f"result of subtask {i}"

    def _do_aggregate(self, action: Action) -> None:
        if self.aggregated:
            raise InvalidAction("already aggregated")
        orchestrator = self.agents[ORCHESTRATOR]
        self.t = max([self.t] + [r[1] for r in self._results.values()] + list(orchestrator.inbox.values()))
        complete = len(self._results) == len(self.task.subtasks)
        arrived = dict.fromkeys(orchestrator.inbox, True)
        p_agg = float(np.clip(self.config.aggregate_base + gain(self._effects.get(None, ()), arrived), 0.0, 1.0))
        all_correct = complete and all(r[2] for r in self._results.values())
        self.correct = all_correct and self._bernoulli("aggregate", p_agg)
        self.p_subtasks = float(np.prod(list(self._q.values()))) if complete else 0.0
        self.p_success = p_agg * self.p_subtasks
        self.score = float(self.correct)
        if self.config.answer_credit == "partial":
            self._grade_partial(full=(self.score, self.p_success))
        event = self._decision(
            "aggregate",
            "aggregate",
            consume=True,
            content="final answer",
            attributes={"correct": self.correct, "complete": complete},
        )
        self.edges += [Edge(r[0], event.id, "return") for r in self._results.values()]
        self.aggregated = True

    def _do_stop(self, action: Action) -> None:
        partial = self.config.answer_credit == "partial" and not self.aggregated
        if partial:  # a partial answer: the returns delegated so far
            self.t = max([self.t] + [r[1] for r in self._results.values()])
            self._grade_partial(full=(0.0, 0.0))
        event = self._decision("stop", "stop", content="partial answer" if partial else "stop")
        if partial:
            self.edges += [Edge(r[0], event.id, "return") for r in self._results.values()]
        self.done = True

    def _grade_partial(self, full: tuple[float, float]) -> None:
        """Set `score` and `p_success` to the partial-credit score and its expectation (module
        docstring), `full` = (R_full, E[R_full]) of the full answer (0.0, 0.0 without one)."""
        n = max(1, len(self.task.subtasks))
        share = sum(r[2] for r in self._results.values()) / n
        expected_share = sum(float(np.prod([self._q[j] for j in self._ancestors[i]])) for i in self._results) / n
        w = FULL_ANSWER_WEIGHT
        self.score = (1 - w) * share + w * full[0]
        self.p_success = (1 - w) * expected_share + w * full[1]

    # --- views ------------------------------------------------------------------------------

    def observe(self) -> Observation:
        """The orchestrator's observation of the current state."""
        n = len(self.task.subtasks)
        alive: dict[str, list[str]] = {}
        for name, state in self.agents.items():
            if state.alive and name != ORCHESTRATOR:
                alive.setdefault(state.role, []).append(name)
        return Observation(
            self.task,
            tuple(i in self._delegated for i in range(n)),
            tuple(i in self._results for i in range(n)),
            alive,
            self.aggregated,
            len(self.actions),
            self.t,
        )

    def episode(self) -> Episode:
        """The episode so far as an `Episode` with its trace, its costs and its rewards
        (`trainer.sim.rewards.record_rewards`, default weights)."""
        trace = Trace(
            source_format="swarmsim",
            source_id=f"{self.task.id}/seed-{self.seed}",
            name=f"SwarmSim {self.task.id} seed {self.seed}",
            system="swarmsim",
            topology="hierarchical",
            task_id=self.task.id,
            agents=list(self._trace_agents),
            events=list(self.events),
            edges=list(self.edges),
            labels=list(self.labels),
            attributes={
                "seed": self.seed,
                "level": self.task.level,
                "n_subtasks": len(self.task.subtasks),
                "sim_config": self.config.to_dict(),
                "p_success": self.p_success,
                "actions": [a.describe() for a in self.actions],
                "task": self.task.to_dict(),
                "action_list": [a.to_dict() for a in self.actions],
            },
        )
        trace.costs = {
            "tokens": float(sum(e.tokens or 0 for e in self.events)),
            "wall_clock_s": max((e.t_end or e.t for e in self.events), default=0.0),
            "tool_calls": float(sum(e.type == "tool_call" for e in self.events)),
            "messages": float(sum(e.type == "message" for e in self.events)),
        }
        record_rewards(trace)
        return Episode(
            trace,
            tuple(self.actions),
            self.score,
            self.p_success,
            self.p_subtasks,
            self.seed,
            self.task,
            self.config,
        )


def replay_trace(attributes: Mapping[str, Any]) -> Episode:
    """Re-simulate the episode a SwarmSim trace records in its `attributes` (`task`,
    `action_list`, `sim_config`, `seed`, as `SwarmEnv.episode` writes them, also after a JSON
    round trip): the same actions under the same seed give the same trace. Raises ValueError
    when an attribute is missing or malformed."""
    try:
        return simulate(
            Task.from_dict(attributes["task"]),
            [Action.from_dict(a) for a in attributes["action_list"]],
            SimConfig.from_dict(attributes["sim_config"]),
            int(attributes["seed"]),
        )
    except (KeyError, TypeError, InvalidAction) as exc:
        raise ValueError(f"not a re-runnable SwarmSim trace: {exc!r}") from exc


def rollout(
    task: Task,
    actions: Iterable[Action],
    config: SimConfig | None = None,
    seed: int = 0,
    outcomes: Mapping[str, bool] | None = None,
) -> SwarmEnv:
    """Replay `actions` (open loop) on `task`, stopping early at a `stop`; returns the environment
    (read `correct`, `p_success`, `draws`) without building the trace. Raises InvalidAction."""
    env = SwarmEnv(task, config, seed, outcomes)
    for action in actions:
        if env.step(action):
            break
    return env


def simulate(
    task: Task,
    actions: Iterable[Action],
    config: SimConfig | None = None,
    seed: int = 0,
    outcomes: Mapping[str, bool] | None = None,
) -> Episode:
    """`rollout`, then the `Episode` with its trace, costs and rewards."""
    return rollout(task, actions, config, seed, outcomes).episode()
