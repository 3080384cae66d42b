"""The orchestrator training recipe (issue 6): config validation, the iteration contract, checkpoint
and resume, credit re-rollouts in the budget, stop hindsight, the CLI. Tiny runs (seconds, CPU)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from swarmscope.importers import SourceFile, read_files  # noqa: E402
from swarmscope.metrics import critical_steps  # noqa: E402
from trainer.policy import (  # noqa: E402
    AGGREGATE,
    DELEGATE,
    MESSAGE,
    MOVES,
    STOP,
    STOP_TEMPERATURE,
    OrchestratorPolicy,
    Script,
    move_probabilities,
    moves_of,
    play,
)
from trainer.recipes.train_orchestrator import (  # noqa: E402
    DEFAULT_REWARD_WEIGHTS,
    RunConfig,
    block_of,
    decision_rewards,
    episode_reward,
    gae,
    main,
    reward_to_go,
    stop_hindsight,
    stop_targets,
    train,
)
from trainer.rollout.sim import SimRollout  # noqa: E402
from trainer.sim.actions import ORCHESTRATOR, aggregate, delegate, message, spawn, stop  # noqa: E402
from trainer.sim.env import SimConfig, simulate  # noqa: E402
from trainer.sim.tasks import Subtask, Task, generate_task  # noqa: E402

TINY = {"level": "small", "budget_steps": 400, "episodes_per_iteration": 4, "group_size": 2, "max_steps": 40,
        "sample_episodes": 2}
EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))
WEIGHTS = {**DEFAULT_REWARD_WEIGHTS, "success": 1.0, "critical_steps": 0.001, "parallelism": 0.0, "finish": 0.0}


def run(config: dict, **kwargs) -> tuple[list[dict], dict]:
    seen: list[dict] = []
    summary = train(RunConfig.from_dict(config), on_iteration=seen.append, **kwargs)
    return seen, summary


# --- config -------------------------------------------------------------------------------------

@pytest.mark.parametrize("doc, field", [
    ({"algorithm": "a2c"}, "algorithm"),
    ({"credit": "loo"}, "credit"),
    ({"stop": "never"}, "stop"),
    ({"level": "huge"}, "level"),
    ({"budget_steps": 0}, "budget_steps"),
    ({"budget_steps": "100"}, "budget_steps"),
    ({"seed": True}, "seed"),
    ({"lr": 0}, "lr"),
    ({"gae_lambda": 1.5}, "gae_lambda"),
    ({"credit_samples": 1}, "credit_samples"),
    ({"episodes_per_iteration": 6, "group_size": 4}, "group_size"),
    ({"reward_weights": {"speed": 1.0}}, "reward_weights.speed"),
    ({"reward_weights": {"finish": -1}}, "reward_weights.finish"),
    ({"reward_weights": {"success": 1e308}}, "reward_weights.success"),  # R * 1e308 overflowed: no iteration stored
    ({"reward_weights": {"anneal_fraction": 0}}, "reward_weights.anneal_fraction"),
    ({"epochs_": 3}, "epochs_"),
])
def test_config_errors_name_the_field(doc, field):
    with pytest.raises(ValueError) as error:
        RunConfig.from_dict(doc)
    assert str(error.value).startswith(f"{field}:")


def test_config_round_trips_through_json_with_merged_weights():
    config = RunConfig.from_dict({"credit": "shapley", "reward_weights": {"finish": 0.3}, "seed": 4})
    again = RunConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config
    assert config.reward_weights["finish"] == 0.3 and config.reward_weights["success"] == 1.0


# --- math on hand-computed inputs ---------------------------------------------------------------

def test_gae_with_terminal_reward():
    # lambda = 0.5, V = (0.2, 0.4), R = 1: δ = (0.2, 0.6); A_1 = 0.6, A_0 = 0.2 + 0.5 * 0.6 = 0.5
    np.testing.assert_allclose(gae(np.array([0.2, 0.4]), 1.0, 0.5), [0.5, 0.6])
    # lambda = 1: Monte Carlo, A_t = R - V_t
    np.testing.assert_allclose(gae(np.array([0.2, 0.4, 0.9]), 1.0, 1.0), [0.8, 0.6, 0.1])


def test_gae_with_per_decision_rewards():
    # lambda = 0.5, V = (0.2, 0.4), r = (-0.1, 1.1): δ = (-0.1 + 0.4 - 0.2, 1.1 - 0.4) = (0.1, 0.7);
    # A_1 = 0.7, A_0 = 0.1 + 0.5 * 0.7 = 0.45
    np.testing.assert_allclose(gae(np.array([0.2, 0.4]), np.array([-0.1, 1.1]), 0.5), [0.45, 0.7])


def test_decision_rewards_pay_each_decision_its_critical_step_and_keep_the_return():
    weights = {"critical_steps": 0.01}
    r = decision_rewards(0.5, 4, weights)
    np.testing.assert_allclose(r, [-0.01, -0.01, -0.01, 0.5 + 0.03])
    assert r.sum() == pytest.approx(0.5)
    np.testing.assert_allclose(reward_to_go(0.5, 4, weights), np.cumsum(r[::-1])[::-1])


def test_the_learned_stop_is_a_sigmoid_of_the_gain_of_continuing():
    legal = torch.tensor([[True, False, False, True, True, True, True],    # stop and three others
                          [False, False, False, False, False, False, True],  # only stop
                          [True, False, False, True, True, True, True]])
    logits = torch.tensor([[0.0, 0.0, 0.0, np.log(2.0), 0.0, 0.0, 5.0]] * 3)
    gain = torch.tensor([-STOP_TEMPERATURE * np.log(3.0), 0.7, 1.0])  # p(stop) = sigmoid(log 3) = 0.75
    probs, conditional = move_probabilities(logits, gain, legal, "learned")
    # the stop logit (5.0) plays no part; the others share 1 - p(stop) by softmax (1 : 2 : 1 : 1)
    np.testing.assert_allclose(probs[0].numpy(), [0.05, 0, 0, 0.1, 0.05, 0.05, 0.75], atol=1e-6)
    np.testing.assert_allclose(conditional[0, [0, DELEGATE, MESSAGE, AGGREGATE]].exp().numpy(), [0.2, 0.4, 0.2, 0.2],
                               atol=1e-6)
    np.testing.assert_allclose(probs[1].numpy(), [0, 0, 0, 0, 0, 0, 1], atol=1e-6)  # forced
    assert probs[2, STOP] < 1e-20  # a gain of 1.0: it goes on
    # rule / none modes: stop has probability only where it is forced
    probs, _ = move_probabilities(logits, gain, legal, "rule")
    assert probs[0, STOP] == 0 and probs[1, STOP] == 1 and probs[0].sum() == pytest.approx(1.0)


def test_blocks_are_contiguous_and_near_equal():
    assert block_of(7, 3).tolist() == [0, 0, 0, 1, 1, 2, 2]
    assert block_of(2, 4).tolist() == [0, 1]  # at most one block per decision


def test_episode_reward_terms():
    episode = simulate(EASY, [spawn("solver"), spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_2"),
                              aggregate(), stop()])
    weights = {"success": 1.0, "parallelism": 0.2, "finish": 0.1, "critical_steps": 0.01, "parallel_target": 4.0}
    terms = episode_reward(episode, weights, anneal=0.5)
    cs = critical_steps(episode.trace)
    assert terms["success"] == 1.0 and terms["critical_steps"] == cs
    assert terms["r_parallel"] == 0.5  # 2 working sub-agents / target 4
    assert terms["r_finish"] == 1.0
    assert terms["task"] == pytest.approx(1.0 - 0.01 * cs)
    assert terms["total"] == pytest.approx(1.0 - 0.01 * cs + 0.5 * (0.2 * 0.5 + 0.1 * 1.0))


# --- stop hindsight -----------------------------------------------------------------------------

def test_stopping_right_after_the_answer_has_no_regret():
    outcome = stop_hindsight(simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"),
                                              aggregate(), stop()]), WEIGHTS)
    assert outcome.regret == 0 and outcome.best_point == 3 and not outcome.premature and not outcome.late


def test_stopping_late_costs_the_extra_critical_steps():
    base = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(), stop()])
    late = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(),
                           message(ORCHESTRATOR, "solver_1", "x"), message(ORCHESTRATOR, "solver_1", "y"), stop()])
    outcome = stop_hindsight(late, WEIGHTS)
    assert critical_steps(late.trace) > critical_steps(base.trace)
    assert outcome.regret == pytest.approx(0.001 * (critical_steps(late.trace) - critical_steps(base.trace)))
    assert outcome.late and not outcome.premature


def test_answering_before_every_subtask_is_delegated_is_premature():
    episode = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), aggregate(), stop()])
    outcome = stop_hindsight(episode, WEIGHTS)
    assert episode.p_success == 0.0
    completed = simulate(EASY, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(), stop()])
    expected = (1.0 - 0.001 * critical_steps(completed.trace)) - (0.0 - 0.001 * critical_steps(episode.trace))
    assert outcome.premature and not outcome.late
    assert outcome.best_point == 3 and outcome.achieved_point == 2
    assert outcome.regret == pytest.approx(expected)


def test_a_doomed_answer_is_best_stopped_at_once():
    # difficulty 1 and a solver of skill 0.6: p = 0.6 per subtask, E[R] = 0.36; with w_success 0.01
    # answering cannot pay for its critical steps, so the best stop is the first decision
    hard = Task("hard-2", (Subtask(0, 1.0), Subtask(1, 1.0)))
    episode = simulate(hard, [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1"), aggregate(), stop()])
    outcome = stop_hindsight(episode, {**WEIGHTS, "success": 0.01, "critical_steps": 0.01})
    assert outcome.best_point == 0 and outcome.late and outcome.regret > 0


# --- the policy ---------------------------------------------------------------------------------

def test_play_is_deterministic_and_a_fully_kept_script_replays_the_episode():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    task = generate_task("small", 3)
    config = SimConfig(max_steps=60)
    first = play(policy, [Script(task, 11)], config, "learned")[0]
    again = play(policy, [Script(task, 11)], config, "learned")[0]
    assert first.moves == again.moves and first.logp == again.logp
    moves = moves_of(first)
    replay = play(policy, [Script(task, 11, moves, (True,) * len(moves), salt=5, fork=len(moves))], config,
                  "learned", record=False)[0]
    assert moves_of(replay) == moves and replay.env_steps == 0
    assert [e.id for e in replay.episode.trace.events] == [e.id for e in first.episode.trace.events]


def test_the_stop_counterfactual_continues_from_the_same_state():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    factual = (0, DELEGATE, DELEGATE, AGGREGATE, STOP)  # spawn a solver, delegate both, aggregate, stop
    config = SimConfig(max_steps=30)
    stopped = play(policy, [Script(EASY, 4, factual, (True,) * 5, fork=5)], config, "learned")[0]
    assert moves_of(stopped) == factual and stopped.env_steps == 0
    going_on = play(policy, [Script(EASY, 4, factual, (True,) * 4 + (False,), fork=4, no_stop_at=4)], config,
                    "learned", record=False)[0]
    moves = moves_of(going_on)
    assert moves[:4] == factual[:4] and moves[4] != STOP and len(moves) > 5
    assert going_on.env_steps == len(moves) - 4  # only the steps after the fork count
    assert going_on.episode.reward == stopped.episode.reward  # the answer was given before the fork


def test_stop_is_offered_only_once_the_orchestrator_has_answered():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    fresh = play(policy, [Script(EASY, 2)], SimConfig(max_steps=1), "learned")[0]
    assert not fresh.masks[0][STOP]  # nothing done yet
    delegated = play(policy, [Script(EASY, 2, (0, DELEGATE, DELEGATE), (True,) * 3)], SimConfig(max_steps=4),
                     "learned")[0]
    assert not delegated.masks[0][STOP] and delegated.masks[0][AGGREGATE]  # all handed out, no answer yet
    answered = play(policy, [Script(EASY, 2, (0, DELEGATE, DELEGATE, AGGREGATE), (True,) * 4)],
                    SimConfig(max_steps=5), "learned")[0]
    assert answered.masks[0][STOP]  # the first sampled decision, after the answer


def test_stop_targets_measure_the_exact_cost_of_going_on_after_the_answer():
    # spawn, delegate both, aggregate, stop; the stop's continuation runs on to the step limit (12)
    # with the answer already given: its gain is minus the cost of 8 more orchestrator events
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    config = RunConfig.from_dict({**TINY, "max_steps": 12, "stop_points": 3,
                                  "reward_weights": {"critical_steps": 0.01, "finish": 0.0, "parallelism": 0.0}})
    factual = (0, DELEGATE, DELEGATE, AGGREGATE, STOP)
    game = play(policy, [Script(EASY, 4, factual, (True,) * 5)], config.sim_config(), "learned")[0]
    game.moves = list(factual)  # the record stop_targets reads, as if every decision had been sampled
    game.masks = [np.array([True] * 6 + [t >= 2]) for t in range(5)]  # stop legal from the first delegation

    def reward_of(episode):
        return episode_reward(episode, config.reward_weights, 0.0)["total"]

    reward = reward_of(game.episode)
    values, gains, steps = stop_targets(policy, game, reward, config, reward_of, np.random.default_rng(0))
    assert values[4] == reward and gains[4] == pytest.approx(-0.08)
    # stopping at decisions 2 and 3 (before the answer) gives R = 0: going on gains the outcome
    actions = [spawn("solver"), delegate(0, "solver_1"), delegate(1, "solver_1")]
    for s in (2, 3):
        assert values[s] == pytest.approx(reward_of(simulate(EASY, actions[:s] + [stop()], config.sim_config(), 4)))
        assert gains[s] == pytest.approx(reward - values[s]) and gains[s] > 0.9
    assert np.isnan(values[:2]).all() and steps == (12 - 4) + 2  # the continuation after its fork + 2 stops


def test_stop_modes():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    task = generate_task("small", 5)
    limit = play(policy, [Script(task, 1)], SimConfig(max_steps=50), "none")[0]
    assert len(limit.env.actions) == 50 and STOP not in limit.moves
    rule = play(policy, [Script(task, 1)], SimConfig(max_steps=200), "rule")[0]
    delegations = [t for t, m in enumerate(rule.moves) if m == DELEGATE]
    assert rule.moves[-2:] == [AGGREGATE, STOP] and len(delegations) == len(task.subtasks)
    assert AGGREGATE not in rule.moves[:-2] and delegations[-1] == len(rule.moves) - 3
    with pytest.raises(ValueError, match="stop mode"):
        play(policy, [Script(task, 1)], SimConfig(), "sometimes")


# --- training -----------------------------------------------------------------------------------

def test_a_tiny_run_reports_the_contract_iterations():
    seen, summary = run(TINY)
    assert len(seen) >= 2 and summary["status"] == "finished" and summary["iterations"] == len(seen)
    assert [it["iteration"] for it in seen] == list(range(len(seen)))
    steps = [it["env_steps"] for it in seen]
    assert steps == sorted(steps) and steps[0] > 0 and steps[-1] >= TINY["budget_steps"] > steps[-2]
    for it in seen:
        json.dumps(it)
        assert it["budget_steps"] == TINY["budget_steps"] and it["wall_s"] > 0
        m = it["metrics"]
        for key in ("reward", "success_rate", "critical_steps", "parallelism_efficiency", "tokens_per_episode",
                    "episode_length", "entropy", "policy_loss", "value_loss", "stop_value_loss"):
            assert isinstance(m[key], float) and np.isfinite(m[key]), key
        assert 0 <= m["success_rate"] <= 1 and 0 < m["episode_length"] <= TINY["max_steps"]
        assert 0 < m["entropy"] <= np.log(len(MOVES)) and m["tokens_per_episode"] > 0 and m["critical_steps"] >= 1
        stop = it["stop"]
        assert all(0 <= p <= 1 for _, p in stop["p_stop_by_step"]) and stop["p_stop_by_step"][0][0] == 0
        assert len(stop["continue_value_by_step"]) == len(stop["p_stop_by_step"])
        assert stop["stop_regret"] >= 0 and 0 <= stop["premature"] + stop["late"] <= TINY["episodes_per_iteration"]
        credit = it["credit"]
        assert sum(credit["by_role"].values()) == pytest.approx(1.0)
        assert set(credit["by_role"]) <= {"orchestrator", "solver", "expert", "verifier"}
        assert 0 <= credit["free_rider_index"] <= 1 and 0 <= credit["pseudo_parallelism_index"] <= 1
        assert len(it["episodes"]) == TINY["sample_episodes"]


def test_grpo_with_the_rule_stop_trains_on_group_baselines():
    seen, summary = run({**TINY, "algorithm": "grpo", "stop": "rule", "max_steps": 80, "budget_steps": 300})
    assert summary["status"] == "finished"
    for it in seen:
        assert np.isfinite(it["metrics"]["policy_loss"]) and it["stop"]["premature"] == 0
        for trace in it["episodes"]:
            kinds = [action["kind"] for action in trace["attributes"]["action_list"]]
            assert kinds[-2:] == ["aggregate", "stop"] and kinds.count("delegate") == 6


def test_sample_episodes_import_and_re_simulate():
    seen, _ = run({**TINY, "budget_steps": 50})
    trace = seen[0]["episodes"][0]
    result = read_files([SourceFile("episode.json", json.dumps(trace).encode())])
    assert not result.failed and len(result.traces) == 1
    imported = result.traces[0]
    assert len(imported.events) == len(trace["events"]) and imported.attributes["training"]["iteration"] == 0
    # the trace records its episode: SwarmSim re-simulates it event for event (what credit jobs need)
    assert SimRollout.from_trace(imported).episode.reward == imported.rewards["outcome"]


def test_resume_continues_and_matches_an_uninterrupted_run(tmp_path):
    config = {**TINY, "budget_steps": 600, "seed": 3}
    whole, _ = run(config)
    first: list[dict] = []
    summary = train(RunConfig.from_dict(config), checkpoint_dir=tmp_path, on_iteration=first.append,
                    should_stop=lambda: len(first) >= 2)
    assert summary["status"] == "cancelled" and len(first) == 2 and (tmp_path / "last.pt").exists()
    rest, final = run(config, checkpoint_dir=tmp_path, resume=True)
    resumed = first + rest
    assert rest[0]["iteration"] == 2 and rest[0]["env_steps"] > first[-1]["env_steps"]
    assert final["iterations"] == len(whole) and final["env_steps"] == whole[-1]["env_steps"]
    strip = [{k: v for k, v in it.items() if k != "wall_s"} for it in resumed]
    assert strip == [{k: v for k, v in it.items() if k != "wall_s"} for it in whole]
    with pytest.raises(ValueError, match="^lr:"):
        run({**config, "lr": 0.1}, checkpoint_dir=tmp_path, resume=True)


@pytest.mark.parametrize("credit", ["counterfactual", "shapley"])
def test_credit_re_rollouts_count_in_the_budget(credit):
    base = {**TINY, "budget_steps": 1, "credit_blocks": 3, "stop": "rule"}  # no stop re-rollouts
    shared, _ = run(base)
    scheme, _ = run({**base, "credit": credit})
    factual = shared[0]["env_steps"]  # the same first episodes: same network, same seeds
    assert scheme[0]["metrics"]["episode_length"] == shared[0]["metrics"]["episode_length"]
    extra = scheme[0]["metrics"]["credit_env_steps"]
    assert shared[0]["metrics"]["credit_env_steps"] == 0 and extra > 0
    assert scheme[0]["env_steps"] == factual + extra
    # leave-one-out: 3 blocks x 2 samples re-rolled; Shapley: 2 pairs x (2 x 3 - 1) coalitions besides N
    rollouts = 4 * (3 * 2 if credit == "counterfactual" else 2 * (2 * 3) - 2)
    assert extra <= rollouts * TINY["max_steps"]


def test_cli_writes_metrics_and_traces(tmp_path, capsys):
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({**TINY, "budget_steps": 120}))
    out = tmp_path / "out"
    assert main(["--config", str(config), "--out", str(out)]) == 0
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert lines and [line["iteration"] for line in lines] == list(range(len(lines)))
    assert "episodes" not in lines[0] and "stop_regret" in lines[0]["stop"]
    traces = sorted((out / "episodes").glob("*.json"))
    assert len(traces) == TINY["sample_episodes"] * len(lines)
    assert not read_files([SourceFile(p.name, p.read_bytes()) for p in traces]).failed
    assert json.loads((out / "summary.json").read_text())["iterations"] == len(lines)
    assert (out / "last.pt").exists()


def test_cli_refuses_a_bad_config_naming_the_field(tmp_path, capsys):
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"credit": "everyone"}))
    assert main(["--config", str(config), "--out", str(tmp_path / "out")]) == 2
    assert "credit: must be one of" in capsys.readouterr().err
