"""What the run page and the trace debugger show of policy `llm`'s decisions.

- `DistributionRecorder`: samples as `trainer.llm_policy.play.local_chooser` does and keeps every
  decision's distribution over its legal actions, so an iteration reports the policy's entropy and
  p(stop) as the MLP policy's does (`decision_figures`). A decision sampled on the vLLM server
  has none (the server returns the sampled token, not the distribution; scoring every candidate on
  the worker would cost one more forward pass a decision), so those runs report neither.
- `write_turns`: the model's own turn on each orchestrator event of a sample episode's trace: the
  action it answered and the prompt it read (the state as text), so the debugger's transcript shows
  the language model's decisions, not SwarmSim's action text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from trainer.llm_policy.constrained import action_logprobs, sample_action
from trainer.policy import STOP
from trainer.sim.actions import ORCHESTRATOR


def _key(prompt: Sequence[int], candidates: Sequence[Sequence[int]]) -> tuple:
    return tuple(prompt), tuple(tuple(c) for c in candidates)


class DistributionRecorder:
    """A chooser of `trainer.llm_policy.play` (inverse-CDF sampling with u over `action_logprobs` on
    `model`, no gradient, as `local_chooser`) that keeps p(c) of every candidate of every decision
    it samples, by (prompt, candidates): the distribution is the model's at that prompt, whichever
    episode reached it. `probs(decision)`: the (C,) list, None for a decision it did not sample."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self._probs: dict[tuple, list[float]] = {}

    def __call__(self, prompt, candidates, u):
        with torch.no_grad():
            logps = action_logprobs(self.model, prompt, candidates)
        self._probs[_key(prompt, candidates)] = [math.exp(float(lp.sum())) for lp in logps]
        chosen = sample_action(logps, u)
        return chosen, logps[chosen]

    def probs(self, decision) -> list[float] | None:
        return self._probs.get(_key(decision.prompt, decision.candidates))


def entropy(probs: Sequence[float]) -> float:
    """H = -sum p log p (nats) of a distribution over legal actions (terms with p = 0 are 0)."""
    return float(-sum(p * math.log(p) for p in probs if p > 0))


def decision_figures(games, recorder: DistributionRecorder | None) -> tuple[float | None, list[list[float]]]:
    """(mean entropy in nats over the model's decisions of `games` (trainer.llm_policy.play.LLMPlayed)
    of its distribution over the legal actions; [[t, mean p(stop)], ...] by the decision's step t in
    its episode (a step with one legal action is no decision and has no point), p(stop) 0 where stop
    was not offered). (None, []) without a `recorder` (the server sampled) or a recorded decision."""
    entropies: list[float] = []
    p_stop: dict[int, list[float]] = {}
    for game in games:
        for decision in game.decisions:
            probs = recorder.probs(decision) if recorder is not None else None
            if probs is None:
                continue
            entropies.append(entropy(probs))
            stop = sum(p for (move, _), p in zip(decision.actions, probs) if move == STOP)
            p_stop.setdefault(decision.step, []).append(stop)
    mean = sum(entropies) / len(entropies) if entropies else None
    return mean, [[k, sum(v) / len(v)] for k, v in sorted(p_stop.items())]


def write_turns(game, tokenizer, recorder: DistributionRecorder | None = None) -> None:
    """Write the model's turns onto `game.episode.trace` (a played episode of
    trainer.llm_policy.play): the orchestrator event of each decision (the t-th orchestrator event
    is action t's, t the decision's `step`) gets `content` = the chosen action's text then the
    prompt the model read (decoded from its token ids, chat template included), and
    `attributes.llm` = {answer, legal actions, p of the answer where `recorder` has it}. Forced
    steps keep SwarmSim's text."""
    events = [e for e in game.episode.trace.events if e.agent == ORCHESTRATOR]
    for decision in game.decisions:
        prompt = tokenizer.decode(decision.prompt)
        event = events[decision.step]
        answer = decision.actions[decision.chosen][1]
        probs = recorder.probs(decision) if recorder is not None else None
        event.content = f"{answer}\n\nThe model's prompt:\n\n```text\n{prompt}\n```"
        event.attributes["llm"] = {
            "answer": answer,
            "legal_actions": [text for _, text in decision.actions],
            **({"p_answer": probs[decision.chosen]} if probs is not None else {}),
        }
