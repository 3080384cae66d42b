"""A SwarmSim orchestration state as text, and its legal moves as action strings (policy `llm`).

The prompt is what the MLP policy's features summarise (trainer.policy.OrchestratorState), written
out: the task (subtasks with their difficulty and inputs), the team by role, which subtasks are
open, delegated and answered, whether the answer was given, and the budget spent. The actions are
the MLP policy's moves (trainer.policy.MOVES, the survey's O1-O5) with their arguments resolved by
the same rules, written as calls: `spawn(solver)`, `delegate(3, solver_1)`, `message(solver_1)`,
`aggregate()`, `stop()`. The model answers with exactly one of the legal ones
(trainer.llm_policy.constrained), so every sample is legal.
"""

from __future__ import annotations

import numpy as np

from trainer.policy import AGGREGATE, DELEGATE, MESSAGE, MOVES, SPAWN_ROLES, SPAWN_VERIFIER, OrchestratorState

#: The system prompt of the orchestrator model.
SYSTEM_PROMPT = (
    "You are the orchestrator of a team of language-model agents. You spawn workers (solvers, "
    "experts, verifiers), delegate each subtask of the task to a worker, aggregate their results "
    "into the answer, and stop. Every action costs time; the answer is right only if every "
    "subtask was solved. Answer with exactly one of the actions listed."
)


def action_text(state: OrchestratorState, move: int) -> str:
    """The action string of `move` (an index of MOVES, legal in `state`): its call with the
    arguments the move rules resolve (the next open subtask; the worker that is free first)."""
    if move <= SPAWN_VERIFIER:
        return f"spawn({SPAWN_ROLES[move]})"
    if move == DELEGATE:
        return f"delegate({state.next_subtask}, {state.target()})"
    if move == MESSAGE:
        return f"message({state.target()})"
    return "aggregate()" if move == AGGREGATE else "stop()"


def legal_actions(state: OrchestratorState, mask: np.ndarray) -> list[tuple[int, str]]:
    """(move, action string) of every legal move of `mask` ((len(MOVES),) bool), in MOVES order."""
    return [(move, action_text(state, move)) for move in range(len(MOVES)) if mask[move]]


def render_state(state: OrchestratorState, actions: list[tuple[int, str]]) -> str:
    """The user turn of one decision: the task, the team, the subtasks' status, the budget spent,
    and the legal `actions` (from `legal_actions`) to choose from."""
    env = state.env
    obs = env.observe()
    lines = [f"Task {env.task.id}: {state.n} subtasks (difficulty 0 easy to 1 hard)."]
    for sub, delegated, returned in zip(env.task.subtasks, obs.delegated, obs.returned, strict=True):
        status = "answered" if returned else "delegated" if delegated else "open"
        needs = f", needs {', '.join(map(str, sub.deps))}" if sub.deps else ""
        lines.append(f"- subtask {sub.id}: difficulty {sub.difficulty:.2f}{needs}; {status}")
    team = ", ".join(f"{name} ({role})" for role, names in sorted(obs.agents.items()) for name in names)
    lines.append(f"Team: {team or 'nobody yet'}.")
    lines.append(f"Answer: {'given' if obs.aggregated else 'not given'}.")
    lines.append(f"Budget spent: {obs.steps} of {env.config.max_steps} actions, {obs.t:.0f} s.")
    lines.append("Actions: " + "; ".join(text for _, text in actions) + ".")
    lines.append("Your action:")
    return "\n".join(lines)


def chat(state: OrchestratorState, actions: list[tuple[int, str]]) -> list[dict[str, str]]:
    """The chat messages of one decision (system prompt, then `render_state`)."""
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": render_state(state, actions)}]
