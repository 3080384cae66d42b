"""The fixed-K stop (issue 30 item 8): stop after exactly K delegations (answering first when
K >= n), applied to a trained action policy, and K tuned on training tasks by the highest mean
expected task reward (ties to the smaller K), pinned on small SwarmSim tasks."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from swarmscope.metrics import critical_steps  # noqa: E402
from trainer.policy import SPAWN_EXPERT, SPAWN_VERIFIER, OrchestratorPolicy, Script, play  # noqa: E402
from trainer.recipes.config import DEFAULT_REWARD_WEIGHTS  # noqa: E402
from trainer.rl.rewards import episode_reward  # noqa: E402
from trainer.rl.stop import best_k, delegation_points, fixed_k_values, tune_fixed_k  # noqa: E402
from trainer.sim.env import SimConfig  # noqa: E402
from trainer.sim.tasks import Level, Subtask, Task, generate_task  # noqa: E402

PARTIAL = SimConfig(max_steps=40, answer_credit="partial")
# every subtask trivial (difficulty 0: p = 1 whatever the role), so a stop after K < n delegations
# earns exactly 0.5 * K / n and the answer 0.5 + 0.5 * aggregate_base = 1
EASY = Task("easy-4", tuple(Subtask(i, 0.0, (i - 1,) if i else ()) for i in range(4)))
CHAIN = Task("chain-4", (Subtask(0, 0.5), Subtask(1, 0.5, (0,)), Subtask(2, 0.9, (1,)), Subtask(3, 0.9, (2,))))
WEIGHTS = {**DEFAULT_REWARD_WEIGHTS, "critical_steps": 0.01, "parallelism": 0.0, "finish": 0.0}


def untrained(seed=0):
    torch.manual_seed(seed)
    return OrchestratorPolicy()


def kinds(episode):
    return [a.kind for a in episode.actions]


def expected_task(episode, weights=WEIGHTS):
    return weights["success"] * episode.p_success - weights["critical_steps"] * critical_steps(episode.trace)


@pytest.mark.parametrize("task", [EASY, CHAIN], ids=["easy", "chain"])
def test_it_stops_after_exactly_k_delegations_on_the_rule_path(task):
    policy, n = untrained(), len(task.subtasks)
    seeds = range(6)
    [*rule] = play(policy, [Script(task, s) for s in seeds], PARTIAL, "rule", record=False)
    between = 0  # moves other than delegate between two delegations: the rule is not "K moves"
    for k in range(n + 1):
        for mode in ("rule", "anytime"):  # the mode's own stop never fires: the same episodes
            fixed = play(policy, [Script(task, s, stop_after=k) for s in seeds], PARTIAL, mode, record=False)
            for game, factual in zip(fixed, rule):
                got, base = kinds(game.episode), kinds(factual.episode)
                assert got.count("delegate") == k and got[-1] == "stop"
                if k == 0:
                    assert got == ["stop"]
                elif k < n:
                    assert "aggregate" not in got and got[-2] == "delegate"
                    # the rule episode's prefix up to its K-th delegation, then the stop
                    cut = delegation_points(factual.episode)[k - 1] if k else 0
                    assert game.episode.actions[:-1] == factual.episode.actions[:cut]
                else:  # K = n: answer, then stop (the rule stop itself)
                    assert got[-3:] == ["delegate", "aggregate", "stop"] and got == base
                # the replayed value is the played one
                assert fixed_k_values(factual.episode, [k], WEIGHTS)[k] == pytest.approx(
                    episode_reward(game.episode, WEIGHTS, 0.0)["expected_task"]
                )
    for factual in rule:
        points = delegation_points(factual.episode)
        between += points[-1] - points[0] - (len(points) - 1)
    assert between > 0


def test_the_partial_answer_of_k_trivial_subtasks_is_half_k_over_n_by_hand():
    policy, n = untrained(), len(EASY.subtasks)
    for k in range(n + 1):
        [game] = play(policy, [Script(EASY, 3, stop_after=k)], PARTIAL, "rule", record=False)
        assert game.episode.p_success == pytest.approx(0.5 * k / n if k < n else 1.0)


def test_best_k_is_the_highest_mean_with_ties_to_the_smaller_k():
    # means 0.2, 0.25, 0.2: K = 2, although K = 1 and K = 3 each win one task
    assert best_k({1: [0.1, 0.3], 2: [0.25, 0.25], 3: [0.3, 0.1]}) == 2
    assert best_k({4: [0.2, 0.2], 2: [0.3, 0.1], 3: [0.0, 0.1]}) == 2  # a tie: the smaller K
    with pytest.raises(ValueError):
        best_k({})


def solver_team(seed=1):
    """An untrained policy that spawns only solvers (the team where the best stop is interior)."""
    policy = untrained(seed)
    with torch.no_grad():
        policy.logits.bias[SPAWN_EXPERT] = -20.0
        policy.logits.bias[SPAWN_VERIFIER] = -20.0
    return policy


def test_tuning_picks_the_best_k_on_the_training_tasks_by_brute_force():
    policy = solver_team()
    # four training tasks: chains of 4 layers x 2 hard subtasks (difficulty 0.8-1.0, a solver's p 0.6-0.68)
    tasks = [generate_task(Level(2, 4, (0.8, 1.0)), 1_000 + j) for j in range(4)]
    scripts = [Script(task, 50 + j) for j, task in enumerate(tasks)]
    n, ks = 8, list(range(0, 9))
    # with no cost on critical steps every delegation adds credit: K = n, by hand
    assert tune_fixed_k(policy, scripts, PARTIAL, {**WEIGHTS, "critical_steps": 0.0}, ks).k == n
    # with a cost, brute force: play every K on every training task, average, take the best
    weights = {**WEIGHTS, "critical_steps": 0.004}
    brute = {}
    for k in ks:
        games = play(policy, [Script(s.task, s.seed, stop_after=k) for s in scripts], PARTIAL, "rule", record=False)
        brute[k] = [expected_task(g.episode, weights) for g in games]
    means = {k: float(np.mean(v)) for k, v in brute.items()}
    tuned = tune_fixed_k(policy, scripts, PARTIAL, weights, ks)
    assert tuned.means == pytest.approx(means)
    assert tuned.k == max(ks, key=lambda k: (means[k], -k))
    assert 0 < tuned.k < n  # interior: the deep subtasks' credit is worth less than their steps
    # the rule plays and one replayed step for each 0 <= K < n
    rule_steps = sum(g.env_steps for g in play(policy, scripts, PARTIAL, "rule", record=False))
    assert tuned.env_steps == rule_steps + len(scripts) * n
