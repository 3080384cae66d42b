"""The orchestrator training recipe: the policy's play and stop modes, the iteration contract,
checkpoint and resume, credit re-rollouts in the budget, the CLI. Tiny runs (seconds, CPU). The
recipe's pieces are tested in tests/trainer/rl/ and tests/trainer/recipes/."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from swarmscope.importers import SourceFile, read_files  # noqa: E402
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
from trainer.recipes.config import RunConfig  # noqa: E402
from trainer.recipes.train_orchestrator import main, train  # noqa: E402
from trainer.rollout.sim import SimRollout  # noqa: E402
from trainer.sim.env import SimConfig  # noqa: E402
from trainer.sim.tasks import Subtask, Task, generate_task  # noqa: E402

TINY = {
    "level": "small",
    "budget_steps": 400,
    "episodes_per_iteration": 4,
    "group_size": 2,
    "max_steps": 40,
    "sample_episodes": 2,
}
EASY = Task("easy-2", (Subtask(0, 0.0), Subtask(1, 0.0)))


def run(config: dict, **kwargs) -> tuple[list[dict], dict]:
    seen: list[dict] = []
    summary = train(RunConfig.from_dict(config), on_iteration=seen.append, **kwargs)
    return seen, summary


# --- the policy ---------------------------------------------------------------------------------


def test_the_learned_stop_is_a_sigmoid_of_the_gain_of_continuing():
    legal = torch.tensor(
        [
            [True, False, False, True, True, True, True],  # stop and three others
            [False, False, False, False, False, False, True],  # only stop
            [True, False, False, True, True, True, True],
        ]
    )
    logits = torch.tensor([[0.0, 0.0, 0.0, np.log(2.0), 0.0, 0.0, 5.0]] * 3)
    gain = torch.tensor([-STOP_TEMPERATURE * np.log(3.0), 0.7, 1.0])  # p(stop) = sigmoid(log 3) = 0.75
    probs, conditional = move_probabilities(logits, gain, legal, "learned")
    # the stop logit (5.0) plays no part; the others share 1 - p(stop) by softmax (1 : 2 : 1 : 1)
    np.testing.assert_allclose(probs[0].numpy(), [0.05, 0, 0, 0.1, 0.05, 0.05, 0.75], atol=1e-6)
    np.testing.assert_allclose(
        conditional[0, [0, DELEGATE, MESSAGE, AGGREGATE]].exp().numpy(), [0.2, 0.4, 0.2, 0.2], atol=1e-6
    )
    np.testing.assert_allclose(probs[1].numpy(), [0, 0, 0, 0, 0, 0, 1], atol=1e-6)  # forced
    assert probs[2, STOP] < 1e-20  # a gain of 1.0: it goes on
    # rule / none modes: stop has probability only where it is forced
    probs, _ = move_probabilities(logits, gain, legal, "rule")
    assert probs[0, STOP] == 0 and probs[1, STOP] == 1 and probs[0].sum() == pytest.approx(1.0)


def test_play_is_deterministic_and_a_fully_kept_script_replays_the_episode():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    task = generate_task("small", 3)
    config = SimConfig(max_steps=60)
    first = play(policy, [Script(task, 11)], config, "learned")[0]
    again = play(policy, [Script(task, 11)], config, "learned")[0]
    assert first.moves == again.moves and first.logp == again.logp
    moves = moves_of(first)
    replay = play(
        policy,
        [Script(task, 11, moves, (True,) * len(moves), salt=5, fork=len(moves))],
        config,
        "learned",
        record=False,
    )[0]
    assert moves_of(replay) == moves and replay.env_steps == 0
    assert [e.id for e in replay.episode.trace.events] == [e.id for e in first.episode.trace.events]


def test_the_stop_counterfactual_continues_from_the_same_state():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    factual = (0, DELEGATE, DELEGATE, AGGREGATE, STOP)  # spawn a solver, delegate both, aggregate, stop
    config = SimConfig(max_steps=30)
    stopped = play(policy, [Script(EASY, 4, factual, (True,) * 5, fork=5)], config, "learned")[0]
    assert moves_of(stopped) == factual and stopped.env_steps == 0
    going_on = play(
        policy,
        [Script(EASY, 4, factual, (True,) * 4 + (False,), fork=4, no_stop_at=4)],
        config,
        "learned",
        record=False,
    )[0]
    moves = moves_of(going_on)
    assert moves[:4] == factual[:4] and moves[4] != STOP and len(moves) > 5
    assert going_on.env_steps == len(moves) - 4  # only the steps after the fork count
    assert going_on.episode.reward == stopped.episode.reward  # the answer was given before the fork


def test_stop_is_offered_only_once_the_orchestrator_has_answered():
    torch.manual_seed(0)
    policy = OrchestratorPolicy()
    fresh = play(policy, [Script(EASY, 2)], SimConfig(max_steps=1), "learned")[0]
    assert not fresh.masks[0][STOP]  # nothing done yet
    delegated = play(
        policy, [Script(EASY, 2, (0, DELEGATE, DELEGATE), (True,) * 3)], SimConfig(max_steps=4), "learned"
    )[0]
    assert not delegated.masks[0][STOP] and delegated.masks[0][AGGREGATE]  # all handed out, no answer yet
    answered = play(
        policy, [Script(EASY, 2, (0, DELEGATE, DELEGATE, AGGREGATE), (True,) * 4)], SimConfig(max_steps=5), "learned"
    )[0]
    assert answered.masks[0][STOP]  # the first sampled decision, after the answer


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
        for key in (
            "reward",
            "success_rate",
            "critical_steps",
            "parallelism_efficiency",
            "tokens_per_episode",
            "episode_length",
            "entropy",
            "policy_loss",
            "value_loss",
            "stop_value_loss",
        ):
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
        assert credit["free_rider_episodes"] == min(4, TINY["episodes_per_iteration"])
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
    summary = train(
        RunConfig.from_dict(config),
        checkpoint_dir=tmp_path,
        on_iteration=first.append,
        should_stop=lambda: len(first) >= 2,
    )
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
