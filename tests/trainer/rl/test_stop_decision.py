"""Stop as a real decision (issue 16 item 4): SwarmSim's partial credit computed by hand, the
`anytime` offer (a premature stop is legal), and the stop regret over the stops the policy could
take (`stop_regret`) against brute force."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from swarmscope.metrics import critical_steps  # noqa: E402
from trainer.policy import DELEGATE, STOP, OrchestratorPolicy, Script, moves_of, play  # noqa: E402
from trainer.recipes.config import DEFAULT_REWARD_WEIGHTS, RunConfig  # noqa: E402
from trainer.recipes.train_orchestrator import train  # noqa: E402
from trainer.rl.rewards import episode_reward  # noqa: E402
from trainer.rl.stop import offered_stops, stop_hindsight, stop_regret, stop_targets, stop_value  # noqa: E402
from trainer.sim.actions import ORCHESTRATOR, aggregate, delegate, message, spawn, stop  # noqa: E402
from trainer.sim.env import SimConfig, simulate  # noqa: E402
from trainer.sim.tasks import Subtask, Task  # noqa: E402

PARTIAL = SimConfig(max_steps=12, answer_credit="partial")
EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))
# 0 -> 1 a chain of difficulty 0.5 (a solver, skill 0.6: p = 1 - 0.5 * 0.4 = 0.8), 2 trivial (p = 1)
CHAIN = Task("chain-3", (Subtask(0, 0.5), Subtask(1, 0.5, (0,)), Subtask(2, 0.0)))
WEIGHTS = {**DEFAULT_REWARD_WEIGHTS, "critical_steps": 0.01, "parallelism": 0.0, "finish": 0.0}


def value_by_hand(episode, weights=WEIGHTS):
    return weights["success"] * episode.p_success - weights["critical_steps"] * critical_steps(episode.trace)


# --- partial credit -----------------------------------------------------------------------------


def correct_results(episode):
    return sum(e.attributes["correct"] for e in episode.trace.events if e.type == "tool_result")


def test_a_stop_before_the_answer_earns_half_the_expected_share_of_correct_subtasks():
    actions = [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), stop()]
    episode = simulate(CHAIN, actions, PARTIAL, seed=3)
    # m_0 = 0.8; m_1 = 0.8 * 0.8 (its input must be correct too); subtask 2 not delegated
    assert episode.p_success == pytest.approx(0.5 * (0.8 + 0.64) / 3)
    assert episode.reward == pytest.approx(0.5 * correct_results(episode) / 3)
    assert episode.trace.events[-1].type == "stop" and [e.kind for e in episode.actions][-1] == "stop"
    # the closed form is the sampler's mean (common keys, independent seeds)
    rewards = [simulate(CHAIN, actions, PARTIAL, seed=s).reward for s in range(3000)]
    assert np.mean(rewards) == pytest.approx(episode.p_success, abs=0.01)
    # all-or-nothing (the default): no answer, nothing earned
    assert simulate(CHAIN, actions, SimConfig(), seed=3).p_success == 0.0


def test_the_full_answer_adds_half_the_all_or_nothing_score():
    actions = [spawn("solver"), spawn("verifier")] + [delegate(i, "solver_1") for i in range(3)]
    episode = simulate(CHAIN, actions + [aggregate(), stop()], SimConfig(answer_credit="partial", aggregate_base=0.9))
    q = 0.8 + 0.2 * 0.8 * 0.8  # a verifier checks: one re-attempt after a caught error (catch 0.8)
    assert episode.p_success == pytest.approx(0.5 * (q + q * q + 1.0) / 3 + 0.5 * 0.9 * q * q)
    expected_reward = 0.5 * correct_results_final(episode) / 3 + 0.5 * float(aggregate_correct(episode))
    assert episode.reward == pytest.approx(expected_reward)


def correct_results_final(episode):
    final = {}
    for e in episode.trace.events:
        if e.type == "tool_result":
            final[e.attributes["subtask"]] = e.attributes["correct"]
    return sum(final.values())


def aggregate_correct(episode):
    return next(e for e in episode.trace.events if e.type == "aggregate").attributes["correct"]


def test_answer_credit_is_checked_and_round_trips():
    with pytest.raises(ValueError, match="answer_credit"):
        SimConfig(answer_credit="generous")
    assert SimConfig.from_dict(PARTIAL.to_dict()) == PARTIAL
    old = {k: v for k, v in SimConfig().to_dict().items() if k != "answer_credit"}  # a trace from before
    assert SimConfig.from_dict(old).answer_credit == "all_or_nothing"
    assert RunConfig.from_dict({"answer_credit": "partial", "max_steps": 9}).sim_config() == SimConfig(
        max_steps=9, answer_credit="partial"
    )
    with pytest.raises(ValueError, match="answer_credit: must be one of"):
        RunConfig.from_dict({"answer_credit": "sometimes"})


# --- the anytime offer and the regret over reachable stops ----------------------------------------


def test_anytime_offers_stop_at_every_decision_and_learned_only_after_the_answer():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    anytime = play(policy, [Script(EASY, 2)], PARTIAL, "anytime")[0]
    learned = play(policy, [Script(EASY, 2)], PARTIAL, "learned")[0]
    assert all(mask[STOP] for mask in anytime.masks)
    assert not learned.masks[0][STOP]


def premature_game(policy, seed=4):
    """Spawn a solver, delegate subtask 0, stop (decision 2): legal only under `anytime`."""
    factual = (0, DELEGATE, STOP)
    return play(policy, [Script(EASY, seed, factual, (True,) * 3)], PARTIAL, "anytime")[0], factual


def brute_force(policy, episode, stopped_at, mode="anytime", config=PARTIAL):
    """The oracle by hand: the path (the factual prefix, then the policy on with stop masked), every
    decision on it stopped and valued; the episode's own stop and the path's end."""
    moves = moves_of(episode)[:stopped_at]
    script = Script(episode.task, episode.seed, moves, (True,) * stopped_at, 0, stopped_at, stopped_at, True)
    path = play(policy, [script], config, mode, record=False)[0].episode
    values = {stopped_at: value_by_hand(episode)}
    end = len(path.actions) - 1 if path.actions[-1].kind == "stop" else len(path.actions)
    values.setdefault(end, value_by_hand(path))
    for s in range(end):
        values.setdefault(s, value_by_hand(simulate(path.task, list(path.actions[:s]) + [stop()], config, path.seed)))
    best = max(values, key=lambda s: (values[s], s == stopped_at))
    return best, values[best] - values[stopped_at], path


def test_a_premature_stop_is_legal_and_counted_premature():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    game, factual = premature_game(policy)
    assert moves_of(game) == factual  # the stop at decision 2 was legal (kept), before any answer
    assert game.episode.p_success == pytest.approx(0.25)  # half the share: 1 of 2 subtasks
    outcome = stop_regret(game.episode, WEIGHTS, policy=policy)
    best, regret, path = brute_force(policy, game.episode, 2)
    assert any(a.kind == "aggregate" for a in path.actions)  # going on reached the full answer
    assert outcome.premature and not outcome.late and outcome.achieved_point == 2
    assert outcome.best_point == best > 2 and outcome.regret == pytest.approx(regret) and regret > 0.3
    # without the continuation only the stops before it are seen: nothing better, no regret
    assert stop_regret(game.episode, WEIGHTS).regret == 0.0


@pytest.mark.parametrize(("seed", "stop_at"), [(1, 2), (1, 7), (2, 5), (3, 9), (3, None)])
def test_the_oracle_equals_brute_force_over_every_reachable_stop(seed, stop_at):
    # the policy's own episode (stop_at None: it ran to the step limit), or its first `stop_at`
    # moves then a stop there (legal under anytime)
    torch.manual_seed(seed)
    policy = OrchestratorPolicy()
    game = play(policy, [Script(CHAIN, seed)], PARTIAL, "anytime")[0]
    if stop_at is not None:
        factual = moves_of(game)[:stop_at] + (STOP,)
        game = play(policy, [Script(CHAIN, seed, factual, (True,) * len(factual))], PARTIAL, "anytime")[0]
        assert moves_of(game) == factual
    episode = game.episode
    t = len(episode.actions) - 1 if episode.actions[-1].kind == "stop" else len(episode.actions)
    best, regret, path = brute_force(policy, episode, t)
    outcome = stop_regret(episode, WEIGHTS, policy=policy)
    assert (outcome.best_point, outcome.achieved_point) == (best, t)
    assert outcome.regret == pytest.approx(regret, abs=1e-12)
    assert outcome.premature == (regret > 1e-9 and best > t) and outcome.late == (regret > 1e-9 and best < t)
    # cost: the continuation's steps after the fork, one per stop valued (all but the own stop)
    continuation = len(path.actions) - t
    assert outcome.replays == continuation + len([s for s in offered_stops(path, "anytime") if s != t])


def test_a_late_stop_is_counted_late_and_sampled_points_estimate_from_below():
    actions = [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate()]
    filler = [message(ORCHESTRATOR, "solver_1", f"x{k}") for k in range(4)]
    late = simulate(EASY, actions + filler + [stop()], PARTIAL, seed=1)
    exact = stop_regret(late, WEIGHTS)
    assert exact.late and not exact.premature and exact.best_point == 4 and exact.achieved_point == 8
    answered = simulate(EASY, actions + [stop()], PARTIAL, seed=1)
    assert exact.regret == pytest.approx(value_by_hand(answered) - value_by_hand(late)) and exact.regret > 0
    sampled = stop_regret(late, WEIGHTS, points=3, rng=np.random.default_rng(0))
    assert sampled.regret <= exact.regret + 1e-12 and sampled.replays == 3
    with pytest.raises(ValueError, match="rng"):
        stop_regret(late, WEIGHTS, points=3)
    # the learned offer (after the answer only) sees the same best point; rule offers nothing
    assert offered_stops(late, "learned") == [4, 5, 6, 7] and offered_stops(late, "rule") == []
    assert stop_regret(late, WEIGHTS, "learned").regret == pytest.approx(exact.regret)
    with pytest.raises(IndexError):
        stop_value(late, 10, WEIGHTS)


def test_hindsight_under_partial_credit_is_the_regret_over_the_path():
    actions = [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate()]
    late = simulate(EASY, actions + [message(ORCHESTRATOR, "solver_1", "x"), stop()], PARTIAL, seed=1)
    outcome = stop_hindsight(late, WEIGHTS)
    assert outcome.late and outcome.best_point == 4  # 5 offered points, 8 drawn: all of them


# --- training with the anytime stop -----------------------------------------------------------------


def test_stop_targets_measure_stops_before_the_answer_under_anytime():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    config = RunConfig.from_dict(
        {"stop": "anytime", "answer_credit": "partial", "max_steps": 12, "stop_points": 2, "reward_weights": WEIGHTS}
    )
    game, factual = premature_game(policy)
    game.moves = list(factual)  # the record stop_targets reads, as if every decision had been sampled
    game.masks = [np.ones(7, dtype=bool)] * 3  # stop offered at every decision (anytime)

    def reward_of(episode):
        return episode_reward(episode, config.reward_weights, 0.0)["total"]

    reward = reward_of(game.episode)
    values, gains, steps = stop_targets(policy, game, reward, config, reward_of, np.random.default_rng(0))
    # the stop at decision 2 is measured against going on (a re-rollout); 2 of the 2 open points too
    assert values[2] == reward and gains[2] > 0.3  # going on would have answered
    for s in (0, 1):
        stopped = simulate(EASY, list(game.episode.actions[:s]) + [stop()], config.sim_config(), 4)
        assert values[s] == pytest.approx(reward_of(stopped)) and gains[s] == pytest.approx(reward - values[s])
    assert steps > 2


def test_training_with_the_anytime_stop_and_partial_credit_runs_and_reports():
    seen = []
    config = {
        "level": "small",
        "stop": "anytime",
        "answer_credit": "partial",
        "budget_steps": 300,
        "episodes_per_iteration": 4,
        "group_size": 2,
        "max_steps": 30,
        "sample_episodes": 1,
    }
    summary = train(RunConfig.from_dict(config), on_iteration=seen.append)
    assert summary["status"] == "finished" and seen
    for it in seen:
        assert np.isfinite(it["metrics"]["reward"]) and it["stop"]["stop_regret"] >= 0
        assert it["episodes"][0]["attributes"]["sim_config"]["answer_credit"] == "partial"
