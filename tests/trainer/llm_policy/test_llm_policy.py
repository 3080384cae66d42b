"""Policy `llm`'s pieces (trainer.llm_policy) on a Llama the size of nothing (random weights,
built here: these tests check the arithmetic and the direction of an update, not what a real model
answers; the live test with SmolLM2 is tests/trainer/llm_policy/test_llm_policy_live.py)."""

import math

import pytest
import torch

from trainer.llm_policy.constrained import action_logprobs, check_candidates, sample_action
from trainer.llm_policy.grpo import group_advantages, grpo_loss
from trainer.llm_policy.model import LoraSettings, with_adapter
from trainer.llm_policy.play import grpo_iteration, play_llm, update_direction
from trainer.llm_policy.text_state import legal_actions, render_state
from trainer.policy import MOVES, OrchestratorState
from trainer.sim.env import SimConfig, SwarmEnv
from trainer.sim.tasks import generate_task

from .tiny_lm import tiny_llama, tiny_lm


@pytest.fixture(scope="module")
def tiny():
    return tiny_llama(40, layers=3)


PROMPT = [1, 5, 9, 3, 7]
# Two share their first token (a trie branch after it), one does not; each ends with token 2.
CANDIDATES = [[11, 12, 2], [11, 13, 2], [20, 2]]


def test_constrained_logprobs_are_the_trie_decoding_of_the_candidates(tiny):
    with torch.no_grad():
        lps = action_logprobs(tiny, PROMPT, CANDIDATES)
        logits = tiny(input_ids=torch.tensor([PROMPT + [11, 12]])).logits[0]
    # By hand from the model's own logits: step 0 chooses among {11, 20}; after 11, among {12, 13};
    # the end token is the only continuation of each prefix (log 1 = 0).
    first = torch.log_softmax(logits[len(PROMPT) - 1, [11, 20]], dim=-1)
    second = torch.log_softmax(logits[len(PROMPT), [12, 13]], dim=-1)
    assert lps[0].tolist() == pytest.approx([first[0].item(), second[0].item(), 0.0], abs=1e-5)
    assert lps[2][0].item() == pytest.approx(first[1].item(), abs=1e-5) and lps[2][1].item() == 0.0
    assert sum(math.exp(lp.sum().item()) for lp in lps) == pytest.approx(1.0, abs=1e-5)


def test_candidates_must_be_prefix_free_and_the_draw_is_the_inverse_cdf(tiny):
    with pytest.raises(ValueError, match="prefix"):
        check_candidates([[11, 12], [11, 12, 2]])
    with pytest.raises(ValueError, match="at least one"):
        check_candidates([])
    with torch.no_grad():
        lps = action_logprobs(tiny, PROMPT, CANDIDATES)
    p = [math.exp(lp.sum().item()) for lp in lps]
    assert sample_action(lps, 0.0) == 0
    assert sample_action(lps, p[0] + 1e-4) == 1
    assert sample_action(lps, p[0] + p[1] + 1e-4) == 2
    assert sample_action(lps, 0.999999) == 2


def test_group_advantages_by_hand():
    assert group_advantages([1.0, 0.0, 0.0, 1.0]).tolist() == pytest.approx([1, -1, -1, 1], abs=1e-5)
    assert group_advantages([0.5, 0.5]).tolist() == [0.0, 0.0]  # one reward: no signal, not NaN
    with pytest.raises(ValueError):
        group_advantages([])


def test_the_clipped_loss_by_hand():
    old = [torch.tensor([math.log(0.5)])]
    for ratio, advantage, expected in ((1.5, 1.0, 1.2), (1.5, -1.0, -1.5), (0.5, -1.0, -0.8), (1.1, 2.0, 2.2)):
        new = [torch.tensor([math.log(0.5 * ratio)])]
        assert -grpo_loss(new, old, [advantage]).item() == pytest.approx(expected, abs=1e-6)
    # k3 KL at new = ref is 0; away from it positive and subtracted.
    ref = [torch.tensor([math.log(0.5)])]
    same = -grpo_loss(old, old, [1.0], reference=ref, kl_coef=0.5).item()
    away = -grpo_loss([torch.tensor([math.log(0.25)])], old, [0.0], reference=ref, kl_coef=0.5).item()
    assert same == pytest.approx(1.0) and away == pytest.approx(-0.5 * (2 - math.log(2) - 1))
    with pytest.raises(ValueError):
        grpo_loss(old, old, [1.0, 2.0])


def test_one_update_moves_action_logprobs_in_the_direction_of_their_advantage(tiny):
    torch.manual_seed(1)
    model = with_adapter(tiny, LoraSettings(rank=4, alpha=8, layers=2))
    prompts = [PROMPT, [1, 6, 6, 4]]
    chosen = [0, 2]  # decision d took candidate chosen[d]
    advantages = [1.0, -1.0]
    with torch.no_grad():
        before = [action_logprobs(model, p, CANDIDATES)[c] for p, c in zip(prompts, chosen, strict=True)]
        # the adapter starts as the base model (LoRA's B = 0)
        with model.disable_adapter():
            base = [action_logprobs(model, p, CANDIDATES)[c] for p, c in zip(prompts, chosen, strict=True)]
    assert [b.sum().item() for b in before] == pytest.approx([b.sum().item() for b in base], abs=1e-6)
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(3):
        new = [action_logprobs(model, p, CANDIDATES)[c] for p, c in zip(prompts, chosen, strict=True)]
        loss = grpo_loss(new, before, advantages)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        after = [action_logprobs(model, p, CANDIDATES)[c].sum().item() for p, c in zip(prompts, chosen, strict=True)]
    assert after[0] > before[0].sum().item() and after[1] < before[1].sum().item()
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert 0 < trainable < sum(p.numel() for p in model.parameters()) / 2  # only the adapter trains


def test_the_state_as_text_lists_the_legal_actions_and_the_subtasks_status():
    task = generate_task("tiny", 3)
    env = SwarmEnv(task, SimConfig(max_steps=40), seed=5)
    state = OrchestratorState(env, max_agents=4)
    actions = legal_actions(state, state.legal("learned"))
    assert [text for _, text in actions] == ["spawn(solver)", "spawn(expert)", "spawn(verifier)"]
    state.apply(MOVES.index("spawn_solver"))
    actions = legal_actions(state, state.legal("learned"))
    assert [text for _, text in actions] == [
        "spawn(solver)",
        "spawn(expert)",
        "spawn(verifier)",
        "delegate(0, solver_1)",
        "message(solver_1)",
    ]
    state.apply(MOVES.index("delegate"))
    text = render_state(state, actions)
    n = len(task.subtasks)
    assert f"{n} subtasks" in text and "- subtask 0: difficulty" in text
    assert text.count("; delegated") + text.count("; answered") == 1 and text.count("; open") == n - 1
    assert "Team: solver_1 (solver)." in text and "Answer: not given." in text
    assert "Budget spent: 2 of 40 actions" in text
    assert text.endswith(
        "Actions: spawn(solver); spawn(expert); spawn(verifier); delegate(0, solver_1); "
        "message(solver_1).\nYour action:"
    )


def test_an_episode_of_the_llm_policy_is_legal_and_repeats_with_its_seed():
    model, tokenizer = tiny_lm()
    model = with_adapter(model, LoraSettings(rank=2, alpha=4, layers=1))
    task = generate_task("tiny", 1)
    config = SimConfig(max_steps=8)
    first = play_llm(model, tokenizer, task, 7, config)
    again = play_llm(model, tokenizer, task, 7, config)
    assert first.episode.actions == again.episode.actions and first.episode.reward == again.episode.reward
    assert first.decisions, "the model chose at least once"
    for d in first.decisions:
        assert len(d.actions) > 1 and 0 <= d.chosen < len(d.actions)
        text = tokenizer.decode(d.candidates[d.chosen][:-1])
        assert text == d.actions[d.chosen][1]  # the tokens decode to the action string
    chosen = [d.actions[d.chosen][1] for d in first.decisions]
    played = [a.describe() for a in first.episode.actions]
    assert len(played) >= len(chosen) and len(first.episode.actions) <= 8


def test_a_grpo_iteration_moves_the_chosen_actions_with_their_advantage():
    model, tokenizer = tiny_lm(3)
    model = with_adapter(model, LoraSettings(rank=4, alpha=8, layers=2))
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=5e-3)
    tasks = [generate_task("tiny", 1)]
    stats = grpo_iteration(model, tokenizer, optimiser, tasks, 4, SimConfig(max_steps=8), seed=11, epochs=2)
    assert len(stats.rewards) == 1 and len(stats.rewards[0]) == 4
    assert stats.decisions == len(stats.advantages) == len(stats.logp_after) > 0
    assert any(stats.advantages), "some group had different rewards"
    assert len(stats.loss) == 2
    # The update ascends Σ A·log p: the advantage-weighted change is positive, and the actions
    # of the better episodes gained log-probability against those of the worse ones.
    moved = update_direction(stats)
    assert moved["gain"] > 0 and moved["up"] > moved["down"]
