"""The `sim` rollout backend: counterfactual re-rollouts of a SwarmSim episode (docs/architecture.md "Credit").

`SimRollout` adapts `swarmscope.interventions.Intervention` to `trainer.sim.episode_interventions`: a
targeted event must be a `message` event (the k-th message event of the trace is the k-th
message action), an agent must be a spawned one; SwarmSim's message content is its item, so the
text of `replace` becomes the new item. Several targets are applied in turn: message edits from
the last to the first (indices stay valid), then agent removals. A rollout at seed s replays the
edited actions open loop (`trainer.sim.env.rollout`) with s keying every random outcome, so the
control (the unedited actions) and the intervention at the same seed share every draw the
intervention does not change (common random numbers); `resample` draws its item with s too.

`AggregateRollout` gives the same rewards without re-simulating, where an episode's subtasks all
succeed surely and every planted effect targets the aggregate (pivot-12): then the reward at seed s
is [uniform(s, "aggregate") < v(S)], v the exact coalition values of `trainer.sim.exact`, the very
draw `SwarmEnv` makes. Only removals of candidate messages apply there.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace as copy

import numpy as np

from swarmscope.credit import CoalitionGame
from swarmscope.interventions import Intervention, InterventionError, branch_source_id, check_intervention
from swarmscope.model import Trace
from trainer.sim.actions import Action
from trainer.sim.env import Episode, replay_trace, rollout, simulate
from trainer.sim.episode_interventions import Intervention as SimIntervention
from trainer.sim.episode_interventions import intervene, message_indices
from trainer.sim.exact import aggregate_coalition_values
from trainer.sim.rng import key_hash, uniforms


def message_events(episode: Episode) -> dict[str, int]:
    """Message event id -> index of its action in `episode.actions`, in trace order."""
    events = [event.id for event in episode.trace.events if event.type == "message"]
    return dict(zip(events, message_indices(episode.actions)))


@dataclass
class PairedRollouts:
    """N paired samples of one intervention: `seeds` (N,), rewards `control` (N,) of the factual
    actions and `treated` (N,) under the intervention at the same seeds, and the N branch traces
    (`branches`, empty unless asked for)."""

    seeds: np.ndarray
    control: np.ndarray
    treated: np.ndarray
    branches: list[Trace]


class SimRollout:
    """Re-rollouts of `episode` under interventions: a `swarmscope.credit.Rollout`.

    `rollout(intervention, seeds)` -> (N,) rewards (0 or 1) for seeds (N,) ints >= 0; None is the
    factual history. Raises InterventionError for a target the trace lacks or SwarmSim cannot edit.

    As a backend of the app's counterfactual jobs (`SWARMSCOPE_ROLLOUT_BACKENDS`): built by
    `from_trace`, checked by `check`, run by `paired`, on the Celery queue `queue`, and
    `environment()` is what an attribution stores to re-run it.
    """

    queue = "rollouts-cpu"

    def __init__(self, episode: Episode):
        self.episode = episode
        self.messages = message_events(episode)
        self.spawned = {event.to for event in episode.trace.events if event.type == "spawn"}

    @classmethod
    def from_trace(cls, trace: Trace) -> SimRollout:
        """The backend of a SwarmSim trace (as stored: its attributes record the episode), re-simulated.
        Raises ValueError when the trace does not record a SwarmSim episode or the re-simulation
        does not reproduce its events."""
        episode = replay_trace(trace.attributes)
        # the same events, in any order: a stored or streamed trace is in time order, the episode
        # in the order the simulator made them
        if sorted(e.id for e in episode.trace.events) != sorted(e.id for e in trace.events):
            raise ValueError("the re-simulated SwarmSim episode does not reproduce this trace's events")
        return cls(episode)

    def check(self, intervention: Intervention) -> None:
        """Raise InterventionError when SwarmSim cannot apply `intervention` to this episode."""
        self._steps(intervention)

    def environment(self) -> dict:
        """What re-runs this backend: the episode's task, actions, environment config and seed."""
        attributes = self.episode.trace.attributes
        return {key: attributes[key] for key in ("task", "action_list", "sim_config", "seed")}

    def _steps(self, intervention: Intervention) -> list[SimIntervention]:
        """The SwarmSim interventions that make up `intervention`, in the order they apply."""
        check_intervention(self.episode.trace, intervention)
        for event_id in intervention.events:
            if event_id not in self.messages:
                raise InterventionError(f"SwarmSim edits message events only, not {event_id!r}", "events")
        for agent in intervention.agents:
            if agent not in self.spawned:
                raise InterventionError(f"SwarmSim removes spawned agents only, not {agent!r}", "agents")
        indices = sorted((self.messages[e] for e in intervention.events), reverse=True)
        return [SimIntervention(intervention.kind, index, item=intervention.text) for index in indices] + [
            SimIntervention("remove_agent", agent=agent) for agent in intervention.agents
        ]

    def actions(self, intervention: Intervention | None, seed: int) -> list[Action]:
        """The actions replayed at `seed` under `intervention` (None: the factual ones)."""
        current = copy(self.episode, seed=seed)
        for step in self._steps(intervention) if intervention is not None else ():
            fork, after = intervene(current, step)
            current = copy(current, actions=current.actions[:fork] + tuple(after))
        return list(current.actions)

    def __call__(self, intervention: Intervention | None, seeds: np.ndarray) -> np.ndarray:
        episode = self.episode
        if intervention is not None and intervention.kind == "resample":
            replayed = [self.actions(intervention, int(seed)) for seed in seeds]
        else:
            replayed = [self.actions(intervention, episode.seed)] * len(seeds)
        return np.array(
            [
                float(rollout(episode.task, actions, episode.config, int(seed)).correct)
                for actions, seed in zip(replayed, seeds)
            ]
        )

    def fork_event(self, intervention: Intervention) -> str:
        """The first event of the factual trace that `intervention` changes: its earliest targeted
        event, or the spawn of a removed agent."""
        changed = set(intervention.events) | {f"spawn:{agent}" for agent in intervention.agents}
        return next(event.id for event in self.episode.trace.events if event.id in changed)

    def branch(self, intervention: Intervention, seed: int) -> Episode:
        """The counterfactual episode at `seed`: its `reward` and its branch trace, whose
        attributes name the `intervention` (JSON form), the `fork_event` and the `factual` trace."""
        branch = simulate(self.episode.task, self.actions(intervention, seed), self.episode.config, seed)
        factual = self.episode.trace.source_id
        branch.trace.source_id = branch_source_id(factual, intervention, seed)
        branch.trace.name = f"{self.episode.trace.name}, {intervention.describe()}"
        branch.trace.attributes.update(
            intervention=intervention.to_dict(), factual=factual, fork_event=self.fork_event(intervention)
        )
        return branch

    def paired(self, intervention: Intervention, seeds: np.ndarray, traces: bool = False) -> PairedRollouts:
        """N paired samples at `seeds` (N,): control and intervention at each seed (CRN); with
        `traces`, the intervention's branch traces too (slower: each trace is built)."""
        seeds = np.asarray(seeds)
        if not traces:
            return PairedRollouts(seeds, self(None, seeds), self(intervention, seeds), [])
        branches = [self.branch(intervention, int(seed)) for seed in seeds]
        return PairedRollouts(
            seeds, self(None, seeds), np.array([b.reward for b in branches]), [b.trace for b in branches]
        )


class AggregateRollout:
    """`SimRollout`'s rewards for removals of candidate messages, from the exact coalition values.

    `candidates`: message action indices (default every message, at most 12); player k of `game()`
    is candidate k. Raises ValueError where an effect targets a subtask or a subtask may fail
    (`p_subtasks` < 1); the rollout raises InterventionError for anything but removing candidates.
    """

    def __init__(self, episode: Episode, candidates: list[int] | None = None):
        if episode.p_subtasks != 1.0:
            raise ValueError("a subtask may fail: re-simulate with SimRollout")
        self.candidates = message_indices(episode.actions) if candidates is None else candidates
        self.values = aggregate_coalition_values(episode, self.candidates)
        index_of = {index: event for event, index in message_events(episode).items()}
        self.players = [index_of[c] for c in self.candidates]
        self._bit = {event: 1 << k for k, event in enumerate(self.players)}
        self._key = key_hash("aggregate")

    def _rewards(self, masks: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        seeds = np.asarray(seeds)
        return (uniforms(seeds, np.full(len(seeds), self._key, np.uint64)) < self.values[masks]).astype(float)

    def __call__(self, intervention: Intervention | None, seeds: np.ndarray) -> np.ndarray:
        mask = len(self.values) - 1
        if intervention is not None:
            if intervention.kind != "remove" or intervention.agents:
                raise InterventionError("the closed form covers removing candidate messages only", "kind")
            for event_id in intervention.events:
                if event_id not in self._bit:
                    raise InterventionError(f"{event_id!r} is not a candidate message", "events")
                mask &= ~self._bit[event_id]
        return self._rewards(np.full(len(seeds), mask), seeds)

    def game(self) -> CoalitionGame:
        """The coalition game over the candidates, vectorised: kept (B, n) bool, seeds (B,) -> (B,)."""
        weights = 1 << np.arange(len(self.candidates))

        def play(kept: np.ndarray, seeds: np.ndarray) -> np.ndarray:
            return self._rewards(np.asarray(kept, bool) @ weights, seeds)

        return play
