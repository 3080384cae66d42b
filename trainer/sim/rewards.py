"""Reward channels of a SwarmSim trace: the survey's reward families (arXiv 2605.02801, §6).

All are pure functions of the `Trace` that `trainer.sim.env` emits (they read the `aggregate`
event's `correct`, the solve results' `correct`, the delegations' `inputs_ready` and the trace's
`n_subtasks`; KeyError on a trace that lacks them):

- outcome (shared team reward): 1.0 when the final aggregate is correct, else 0.0;
- individual: per sub-agent, the share of its solve attempts that came out correct;
- process: the share of subtasks whose returned result is correct (dense, per step);
- tool: the share of tool calls (solve attempts and verifier checks) that did their job (a correct
  result; a verdict matching the result checked);
- orchestration: parallel speedup = all steps / critical steps (Kimi K2.5 PARL, via
  `swarmscope.metrics.critical_steps`), split correctness = share of delegations whose inputs were
  delegated first, aggregation quality = share of subtasks whose correct result reached the
  aggregate; `orchestration` is the mean of the last two (both in [0, 1]);
- hybrid: a weighted sum of channels (`hybrid`, weights from `DEFAULT_WEIGHTS`).
"""

from __future__ import annotations

from collections.abc import Mapping

from swarmscope.metrics import critical_steps
from swarmscope.model import Trace

#: Default weights of `hybrid`: the outcome, shaped by process and orchestration rewards.
DEFAULT_WEIGHTS = {"outcome": 1.0, "process": 0.1, "orchestration": 0.1}


def _share(hits: float, total: int) -> float:
    return hits / total if total else 0.0


def individual_rewards(trace: Trace) -> dict[str, float]:
    """Agent -> share of its solve attempts (tool results of tool `solve`) that are correct."""
    attempts: dict[str, list[bool]] = {}
    for event in trace.events:
        if event.type == "tool_result" and event.tool == "solve":
            attempts.setdefault(event.agent, []).append(bool(event.attributes["correct"]))
    return {agent: _share(sum(results), len(results)) for agent, results in attempts.items()}


def reward_channels(trace: Trace) -> dict[str, float]:
    """Every channel above as floats: outcome, individual (mean over sub-agents), process, tool,
    parallel_speedup (>= 1, 0.0 without steps), split_correctness, aggregation_quality,
    orchestration."""
    events = trace.events
    final = {}  # subtask -> correctness of its last attempt
    results = {}
    tool_ok = tool_calls = 0
    for event in events:
        if event.type == "tool_result":
            subtask = event.attributes["subtask"]
            final[subtask] = results[subtask, event.attributes["attempt"]] = bool(event.attributes["correct"])
    for event in events:
        if event.type != "tool_call":
            continue
        tool_calls += 1
        key = event.attributes["subtask"], event.attributes.get("attempt", 0)
        if event.tool == "solve":
            tool_ok += results.get(key, False)
        else:
            tool_ok += (event.attributes["verdict"] == "accept") == results.get(key, False)
    aggregate = next((e for e in events if e.type == "aggregate"), None)
    delegations = [e for e in events if e.type == "delegate"]
    n_subtasks = trace.attributes["n_subtasks"]
    individual = individual_rewards(trace)
    steps = critical_steps(trace)
    split = _share(sum(bool(e.attributes["inputs_ready"]) for e in delegations), len(delegations))
    quality = _share(sum(final.values()), n_subtasks) if aggregate is not None else 0.0
    return {
        "outcome": 1.0 if aggregate is not None and aggregate.attributes["correct"] else 0.0,
        "individual": _share(sum(individual.values()), len(individual)),
        "process": _share(sum(final.values()), n_subtasks),
        "tool": _share(tool_ok, tool_calls),
        "parallel_speedup": len(events) / steps if steps else 0.0,
        "split_correctness": split,
        "aggregation_quality": quality,
        "orchestration": (split + quality) / 2,
    }


def hybrid(channels: Mapping[str, float], weights: Mapping[str, float] = DEFAULT_WEIGHTS) -> float:
    """sum_c weights[c] * channels[c]; raises KeyError for a weight naming no channel."""
    return sum(weight * channels[name] for name, weight in weights.items())


def record_rewards(trace: Trace, weights: Mapping[str, float] = DEFAULT_WEIGHTS) -> dict[str, float]:
    """Write every channel, `hybrid`, and each agent's individual reward onto the trace; returns rewards.

    Raises AttributeError when an agent with solve results is not among the trace's agents.
    """
    channels = reward_channels(trace)
    trace.rewards = {**channels, "hybrid": hybrid(channels, weights)}
    for name, value in individual_rewards(trace).items():
        agent = trace.agent(name)
        if agent is None:
            raise AttributeError(f"trace has no agent {name!r} (its events name it)")
        agent.attributes["individual_reward"] = value
    return trace.rewards
