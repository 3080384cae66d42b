"""Counterfactual credit for policy `llm` (issue 31 item 3): the MLP's outcome credit
(trainer.rl.credit.outcome_credit) with its re-rollouts played by the language model
(trainer.llm_policy.play.LLMPlayer), its GRPO advantages (trainer.llm_policy.grpo.baselined_advantages)
and one iteration of the recipe. On the tiny random Llama of tiny_lm.py: the model answers noise,
the tests check what the credit must be whatever it answers (SwarmSim's exact E[R] is known)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainer.llm_policy.grpo import STD_EPS, baselined_advantages
from trainer.llm_policy.play import LLMPlayer, local_chooser, play_llm
from trainer.policy import AGGREGATE, DELEGATE, MESSAGE, SPAWN_EXPERT, STOP, Script, moves_of
from trainer.recipes.config import LLM_DEFAULTS, RunConfig
from trainer.recipes.train_orchestrator import train
from trainer.rl.credit import blocks_of, outcome_credit, rerolled
from trainer.sim.rng import uniform
from trainer.sim.tasks import Subtask, Task, generate_task

from .test_llm_recipe import llm_config, model_dir  # noqa: F401 (the fixture)
from .tiny_lm import tiny_lm

#: One subtask of difficulty 0.8: an expert solves it with p = 1 - 0.8 (1 - 0.9) = 0.92
#: (trainer.sim.env.solve_probability), so E[R | answered] = 0.92 and 0 unanswered.
HARD1 = Task("hard-1", (Subtask(0, 0.8),))
P_EXPERT = 0.92


def credit_config(**changes) -> RunConfig:
    return RunConfig.from_dict(
        {
            **LLM_DEFAULTS,
            "policy": "llm",
            "level": "tiny",
            "credit": "counterfactual_baseline_exact",
            "stop": "anytime",  # stopping before the answer is a real decision (E[R] = 0)
            "credit_block_size": 1,
            "max_steps": 8,
            **changes,
        }
    )


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return tiny_lm(seed=2)


def player_of(model, tokenizer, config: RunConfig, choose=None) -> LLMPlayer:
    return LLMPlayer(
        model, tokenizer, config.sim_config(), config.stop, config.max_agents, choose or local_chooser(model)
    )


def scripted(player: LLMPlayer, moves: tuple[int, ...], seed: int = 5):
    """The factual episode of `moves` played through `player` (every move kept: no model call)."""
    [game] = player([Script(HARD1, seed, moves, (True,) * len(moves))], True)
    assert moves_of(game) == moves and not game.decisions
    return game


def test_exact_credit_is_zero_where_a_decision_cannot_change_the_outcome_and_signed_where_it_does(tiny):
    model, tokenizer = tiny
    config = credit_config(credit_samples=8)
    player = player_of(model, tokenizer, config)

    # spawn an expert, delegate, answer, message, stop: E[R] = 0.92, fixed from the answer on.
    answered = scripted(player, (SPAWN_EXPERT, DELEGATE, AGGREGATE, MESSAGE, STOP))
    assert answered.episode.p_success == pytest.approx(P_EXPERT)
    delta, steps = outcome_credit(player, answered, config, exact=True)
    assert steps > 0 and player.decisions > 0  # the redraws sampled the model
    assert delta[3] == 0 and delta[4] == 0  # after the answer nothing changes E[R]
    # The answer: a redraw that answers keeps 0.92; any other is followed by the factual stop (0).
    # So Δ = 0.92 (1 - answering share of the 8 redraws) > 0, a multiple of 0.92 / 8.
    assert 0 < delta[2] <= P_EXPERT
    assert delta[2] / (P_EXPERT / 8) == pytest.approx(round(delta[2] / (P_EXPERT / 8)))

    # The same, stopped before the answer: E[R] = 0 whatever came before the stop (Δ = 0 there),
    # and the premature stop's redraws that go on and answer are worth more: Δ < 0.
    stopped = scripted(player, (SPAWN_EXPERT, DELEGATE, STOP))
    assert stopped.episode.p_success == 0
    delta, _ = outcome_credit(player, stopped, config, exact=True)
    assert delta[0] == 0 and delta[1] == 0
    assert delta[2] < 0


def test_redraws_share_the_factual_episodes_draws_and_replay_its_prefix(tiny):
    model, tokenizer = tiny
    config = credit_config(credit_samples=3, stop="learned")
    calls: list[tuple[int, list[int], float]] = []
    sampler = local_chooser(model)

    def recording(prompt, candidates, u):  # the real chooser; the calls are recorded
        calls.append((len(calls), list(prompt), u))
        return sampler(prompt, candidates, u)

    factual = play_llm(model, tokenizer, generate_task("tiny", 1), 7, config.sim_config(), config.stop, 8)
    by_step = {d.step: d for d in factual.decisions}
    moves = moves_of(factual)
    blocks = blocks_of(len(moves), 1, 0)
    n = int(blocks.max()) + 1
    kept = np.ones((3 * n, n), bool)
    salts = []
    for row in range(3 * n):
        kept[row, row % n] = False
        salts.append(1 + row // n)
    player = player_of(model, tokenizer, config, recording)
    redraws = rerolled(player, factual, blocks, kept, salts, config)
    same = differs = 0
    for row, redraw in enumerate(redraws):
        fork = row % n
        assert redraw.env.actions[:fork] == factual.env.actions[:fork]  # the replayed prefix
        assert redraw.env_steps == len(redraw.env.actions) - fork
        assert all(d.step >= fork for d in redraw.decisions), "no model call in the replayed prefix"
        if fork not in by_step:  # a forced decision: nothing to redraw
            continue
        first = redraw.decisions[0]  # the redrawn decision reads the factual one's prompt
        assert first.step == fork and first.prompt == by_step[fork].prompt
        assert first.candidates == by_step[fork].candidates
        if moves_of(redraw) == moves:  # the model chose as in the episode: every env draw is shared
            same += 1
            assert redraw.episode.trace.to_dict() == factual.episode.trace.to_dict()
            assert redraw.env.score == factual.env.score and redraw.env.p_success == factual.env.p_success
        else:
            differs += 1
    assert same > 0 and differs > 0  # a real check both ways
    # u of every model call: SwarmSim's counter-based uniform of (seed, step, salt)
    drawn = [(d.step, salt) for redraw, salt in zip(redraws, salts) for d in redraw.decisions]
    assert [u for _, _, u in calls] == [uniform(7, f"policy/{t}/{salt}") for t, salt in drawn]
    again = rerolled(player, factual, blocks, kept, salts, config)
    assert [r.env.actions for r in again] == [r.env.actions for r in redraws]


def test_baselined_advantages_by_hand():
    rewards = [[0.1, 0.3], [0.0, 0.0]]
    credits = [np.array([0.5, 0.0]), np.array([-0.2]), np.array([0.0, 0.4, 0.0]), np.zeros(0)]
    found = baselined_advantages(rewards, credits)
    numerators = [np.array([0.4, -0.1]), np.array([-0.1]), np.array([0.0, 0.4, 0.0]), np.zeros(0)]
    sigma = np.concatenate(numerators).std()
    for got, want in zip(found, numerators, strict=True):
        np.testing.assert_allclose(got, want / (sigma + STD_EPS))
    assert found[2][0] == 0  # no credit, no spread in f: no gradient
    with pytest.raises(ValueError, match="^credits: one array per episode"):
        baselined_advantages(rewards, credits[:3])


def test_a_recipe_iteration_with_counterfactual_credit_moves_the_actions_with_their_advantages(model_dir, tmp_path):  # noqa: F811
    torch.set_num_threads(1)
    config = llm_config(
        model_dir,
        credit="counterfactual_baseline_exact",
        stop="anytime",
        budget_steps=1,
        episodes_per_iteration=4,
        group_size=2,
        credit_blocks=2,
        credit_samples=2,
    )
    reports: list[dict] = []
    train(config, checkpoint_dir=tmp_path, on_iteration=reports.append)
    [report] = reports
    metrics, llm = report["metrics"], report["metrics"]["llm"]
    assert metrics["credit_env_steps"] > 0 and llm["reroll_decisions"] > 0 and llm["reroll_s"] > 0
    assert report["env_steps"] > metrics["credit_env_steps"]  # the re-rollouts count in the budget
    # The update ascends Σ A·log p over the chosen actions (first order, trainer.llm_policy.play.update_direction).
    assert llm["gain"] is not None and llm["gain"] > 0
    assert llm["up"] is None or llm["down"] is None or llm["up"] > llm["down"]
