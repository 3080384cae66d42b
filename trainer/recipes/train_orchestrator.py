"""Train a SwarmSim orchestrator with clipped PPO or GRPO-style group baselines (one readable recipe).

    python -m trainer.recipes.train_orchestrator --config cfg.json [--out DIR] [--resume]
        [--url http://127.0.0.1:8000 --token ssk_...]

Read top to bottom: one iteration (`run_iteration`: play, credit, update, report), the loop and its
checkpoint (`train`), evaluation, the CLI. Every knob is a field of `trainer.recipes.config.RunConfig`;
the pieces live in `trainer.rl` and are tested there on tiny inputs.

- **Policy**: `trainer.policy.OrchestratorPolicy`: features of the trace so far -> masked logits
  over spawn / delegate / message / aggregate / stop, a value head V(s) and the stop heads S(s),
  G(s) = C(s) - S(s) (value of stopping now, gain of continuing).
- **Algorithms**: `ppo`: clipped surrogate (Schulman et al. 2017, eq. 7) with GAE(gamma = 1,
  lambda) advantages on V (`trainer.rl.losses`); `grpo`: the advantage of every decision is the
  episode's reward minus the mean of its group (episodes on the same task), over the group's std
  (Shao et al. 2024, DeepSeekMath §4.1, outcome supervision), with the same clipped surrogate.
- **Credit** (`trainer.rl.credit`): every arm trains the same critic on the same targets, pays the
  same per-decision cost and uses the same GAE (PPO) or group baseline (GRPO); the arms differ only
  in where the episode's outcome is paid (`credit_advantages`: a return-equivalent redistribution
  over the decisions). `shared`: all of it at the last decision; `counterfactual`: each block of
  decisions (`credit_block_size` decisions, or `credit_blocks` blocks) its paired leave-one-out Δ;
  `shapley`: its Shapley value; `oracle`: the leave-one-out Δ at SwarmSim's exact E[R] (no outcome
  noise); all by closed-loop re-rollouts at the episode's seed (common random numbers,
  docs/architecture.md), a block's credit spread over its decisions, less the episode's mean (a
  zero-sum move of reward between decisions; the outcome still comes at the end). Every re-rollout
  step after the fork counts in `env_steps` and in `budget_steps`. Issue 30 item 7's arms change
  the outcome itself: `expected` pays E[R | actions] (SwarmSim's closed form) for the 0/1 R (the
  reference: no outcome noise); `counterfactual_baseline` (`_exact`: on E[R]) replaces the outcome's
  share of the advantage by the block's leave-one-out credit of the outcome (`arm_reward`).
- **Reward** (`trainer.rl.rewards`): w_success * R + anneal * (w_parallelism * r_parallel +
  w_finish * r_finish) - w_critical_steps * CS, the Kimi K2.5 PARL orchestration terms, annealed
  linearly to 0 over the first `anneal_fraction` of the budget. Under PPO the CS cost of each
  orchestrator event is paid at its decision (the same return).
- **Stop** (`trainer.rl.stop`): optimal stopping, p(stop) = sigmoid(-G / τ); stop gets no policy
  gradient: S and G are regressed on paired outcomes at the episode's seed, and stop is offered
  once the orchestrator has answered (`stop="anytime"`: at every decision, for SwarmSim's partial
  credit, `answer_credit="partial"`). The default `learned` stop is no real decision: once answered
  E[R] is fixed, so stopping at once is always best, and it cannot stop before answering. Logged:
  p(stop) and C(s) by step, the stop regret over the stops the mode offered (`report.stop_outcomes`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from swarmscope.client import SwarmscopeError
from trainer.policy import STOP, OrchestratorPolicy, Played, Script, play
from trainer.recipes.app_client import AppRefused, AppReporter
from trainer.recipes.config import LLM_CREDITS, LLM_DECISION_S, LLM_DEFAULTS, RunConfig
from trainer.recipes.report import iteration_report
from trainer.rl.credit import BASELINED, blocks_of, credit_advantages, decision_credit, outcome_credit, spread_of
from trainer.rl.losses import gae, ppo_update
from trainer.rl.rewards import anneal_factor, decision_rewards, episode_reward, reward_to_go
from trainer.rl.stop import episode_summary, stop_targets
from trainer.sim.env import Episode
from trainer.sim.tasks import LEVELS, Task, generate_task

if TYPE_CHECKING:
    from trainer.recipes.train_llm_orchestrator import LLMLearner

#: What the app and the benchmarks use (SWARMSCOPE_TRAINING_RECIPE names this module).
__all__ = [
    "LEVELS",
    "POLICY_DEFAULTS",
    "POLICY_CREDITS",
    "POLICY_DECISION_S",
    "RunConfig",
    "episode_summary",
    "evaluate",
    "load_policy",
    "main",
    "run_iteration",
    "train",
]
#: Per policy other than `mlp`, the config fields it changes from RunConfig's defaults (the New run form).
POLICY_DEFAULTS = {"llm": LLM_DEFAULTS}
#: The credit schemes each policy other than the default trains with (the New run form offers only those).
POLICY_CREDITS = {"llm": LLM_CREDITS}
#: Per policy whose decisions take seconds, their measured cost (config.LLM_DECISION_S): the form's estimate.
POLICY_DECISION_S = {"llm": LLM_DECISION_S}

#: Seed bases of training tasks and episodes (far from `trainer.sim.tasks.TEST_SET_SEED`'s range).
TASK_SEED_BASE, EPISODE_SEED_BASE = 1_000_000_000, 2_000_000_000


# --- one iteration ----------------------------------------------------------------------------


def iteration_scripts(config: RunConfig, iteration: int) -> list[Script]:
    """The episodes of `iteration`: groups of `group_size` share a task (fresh per group)."""
    groups = config.episodes_per_iteration // config.group_size
    scripts = []
    for g in range(groups):
        task_seed = TASK_SEED_BASE + config.seed * 10_000_000 + iteration * 1000 + g
        task = generate_task(config.task_level(), task_seed, f"{config.level}-train-{task_seed}")
        for k in range(config.group_size):
            scripts.append(
                Script(
                    task, EPISODE_SEED_BASE + config.seed * 10_000_000 + iteration * 1000 + g * config.group_size + k
                )
            )
    return scripts


def arm_reward(terms: Mapping[str, float], episode: Episode, config: RunConfig) -> float:
    """The episode reward an arm's critic regresses on (reward-to-go targets) and its GAE sees:
    `terms["total"]` (the 0/1 outcome R) in the shared and zero-sum credit arms; under `expected`
    the same with R replaced by its exact expectation E[R | actions] (`Episode.p_success`); under
    the `BASELINED` arms the total without the outcome term (costs and auxiliary terms only: the
    outcome enters through `trainer.rl.credit.outcome_credit`)."""
    w = config.reward_weights["success"]
    if config.credit == "expected":
        return terms["total"] - w * (terms["success"] - episode.p_success)
    if config.credit in BASELINED:
        return terms["total"] - w * terms["success"]
    return terms["total"]


def credit_advantages_of(
    policy: OrchestratorPolicy,
    games: list[Played],
    terms: list[dict[str, float]],
    config: RunConfig,
    anneal: float,
) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """Per episode: the advantages (T,) (`trainer.rl.credit.credit_advantages`: the same critic,
    per-decision costs and GAE or group baseline in every arm, the arms differing only in where
    the outcome is paid) and the credit (T,) the attribution panel shows; and the environment
    steps the credit re-rollouts took. Under `expected` the outcome in the reward is its exact
    expectation; under the `BASELINED` arms (PPO only) the advantage is GAE on the outcome-free
    `arm_reward` plus w_success times the decision's block credit Δ (`outcome_credit`): the
    counterfactual credit replaces the outcome's share of the advantage (PPO only: RunConfig.from_dict
    refuses a `BASELINED` arm under GRPO)."""
    weights = config.reward_weights
    rewards = np.array([t["total"] for t in terms])

    def reward_of(episode: Episode) -> float:
        return episode_reward(episode, weights, anneal)["total"]

    def expected_of(episode: Episode) -> float:  # the oracle: E[R] (closed form) for the 0/1 R
        t = episode_reward(episode, weights, anneal)
        return t["total"] - weights["success"] * (t["success"] - episode.p_success)

    advantages, credits, steps = [], [], 0
    for k, game in enumerate(games):
        n = len(game.moves)
        if config.credit == "expected":
            reward = arm_reward(terms[k], game.episode, config)
            group = np.array([arm_reward(t, g.episode, config) for t, g in zip(terms, games)])
            group = group[k // config.group_size * config.group_size :][: config.group_size]
            advantages.append(credit_advantages(np.array(game.values), reward, np.zeros(n), weights, config, group))
            credits.append(np.full(n, reward))
            continue
        if config.credit in BASELINED:
            delta, extra = outcome_credit(policy, game, config, exact=config.credit.endswith("_exact"))
            steps += extra
            rest = decision_rewards(arm_reward(terms[k], game.episode, config), n, weights)
            advantages.append(gae(np.array(game.values), rest, config.gae_lambda) + weights["success"] * delta)
            credits.append(delta)
            continue
        if config.credit == "shared":
            credit, spread = np.full(n, rewards[k]), np.zeros(n)
        else:
            oracle = config.credit == "oracle"
            factual = expected_of(game.episode) if oracle else rewards[k]
            credit, extra = decision_credit(policy, game, factual, config, expected_of if oracle else reward_of)
            steps += extra
            spread = spread_of(credit, blocks_of(n, config.credit_block_size, config.credit_blocks))
        group = rewards[k // config.group_size * config.group_size :][: config.group_size]
        advantages.append(credit_advantages(np.array(game.values), rewards[k], spread, weights, config, group))
        credits.append(credit)
    return advantages, credits, steps


def update_batch(
    games: list[Played],
    rewards: np.ndarray,
    advantages: list[np.ndarray],
    stop_values: list[np.ndarray],
    gains: list[np.ndarray],
    config: RunConfig,
) -> dict[str, torch.Tensor]:
    """`ppo_update`'s batch of the iteration's N decisions; the advantages normalised over the batch."""
    flat = np.concatenate(advantages)
    flat = (flat - flat.mean()) / (flat.std() + 1e-8)
    weights = config.reward_weights
    return {
        "features": torch.from_numpy(np.concatenate([np.stack(g.features) for g in games])),
        "masks": torch.from_numpy(np.concatenate([np.stack(g.masks) for g in games])),
        "moves": torch.tensor(np.concatenate([g.moves for g in games]), dtype=torch.long),
        "logp": torch.tensor(np.concatenate([g.logp for g in games]), dtype=torch.float32),
        "advantages": torch.tensor(flat, dtype=torch.float32),
        "returns": torch.tensor(
            np.concatenate([reward_to_go(r, len(g.moves), weights) for g, r in zip(games, rewards)]),
            dtype=torch.float32,
        ),
        "stop_value": torch.tensor(np.nan_to_num(np.concatenate(stop_values)), dtype=torch.float32),
        "gain": torch.tensor(np.nan_to_num(np.concatenate(gains)), dtype=torch.float32),
        "stop_measured": torch.tensor(~np.isnan(np.concatenate(gains)), dtype=torch.float32),
    }


def run_iteration(
    policy: OrchestratorPolicy, optimizer: torch.optim.Optimizer, config: RunConfig, iteration: int, env_steps: int
) -> tuple[dict[str, Any], int]:
    """Play, credit, update once. Returns (the contract's iteration dict without `iteration`,
    `env_steps`, `budget_steps`, `wall_s`; environment steps this iteration took)."""
    weights = config.reward_weights
    anneal = anneal_factor(env_steps, config.budget_steps, weights["anneal_fraction"])
    games = play(policy, iteration_scripts(config, iteration), config.sim_config(), config.stop, config.max_agents)
    steps = sum(g.env_steps for g in games)
    terms = [episode_reward(g.episode, weights, anneal) for g in games]
    rewards = np.array([t["total"] for t in terms])

    def reward_of(episode: Episode) -> float:
        return episode_reward(episode, weights, anneal)["total"]

    # credit -> advantages per decision; stop -> the stop heads' targets
    advantages, credits, extra = credit_advantages_of(policy, games, terms, config, anneal)
    steps += extra
    stop_values, gains = [], []
    points_rng = np.random.default_rng([config.seed, iteration, 7])
    for k, game in enumerate(games):
        value, gain, extra = stop_targets(policy, game, rewards[k], config, reward_of, points_rng)
        steps += extra
        if game.moves and game.moves[-1] == STOP and not np.isnan(gain[-1]):
            credits[k][-1] = -gain[-1]  # the stop's paired credit: stopping now vs continuing
        stop_values.append(value)
        gains.append(gain)
    targets = np.array([arm_reward(t, g.episode, config) for t, g in zip(terms, games)])
    batch = update_batch(games, targets, advantages, stop_values, gains, config)
    generator = torch.Generator().manual_seed(config.seed * 1_000_003 + iteration)
    losses = ppo_update(policy, optimizer, batch, config, generator, anneal)

    report = iteration_report(
        games, terms, credits, losses, config, iteration, anneal, credit_steps=steps - sum(g.env_steps for g in games)
    )
    return report, steps


# --- the loop ---------------------------------------------------------------------------------


class MLPLearner:
    """Policy `mlp`: the network and its Adam; `step` runs one iteration (`run_iteration`),
    `state`/`load` are what the checkpoint keeps. Policy `llm`'s counterpart is
    trainer.recipes.train_llm_orchestrator.LLMLearner."""

    def __init__(self, config: RunConfig):
        self.config = config
        self.policy = OrchestratorPolicy(config.hidden)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=config.lr)

    def state(self) -> dict[str, Any]:
        return {"model": self.policy.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load(self, state: Mapping[str, Any]) -> None:
        self.policy.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])

    def close(self) -> None:
        """Nothing to release (LLMLearner removes its adapter folders)."""

    def step(self, iteration: int, env_steps: int) -> tuple[dict[str, Any], int]:
        return run_iteration(self.policy, self.optimizer, self.config, iteration, env_steps)


def train(
    config: RunConfig,
    *,
    checkpoint_dir: Path | None = None,
    resume: bool = False,
    on_iteration: Callable[[dict], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """Train until `budget_steps` environment steps (credit re-rollouts included) are spent, policy
    `mlp` (`MLPLearner`) or `llm` (trainer.recipes.train_llm_orchestrator.LLMLearner).

    Calls `on_iteration(dict)` once per iteration (the contract's JSON-serialisable iteration dict)
    and polls `should_stop()` between iterations (then returns with status "cancelled"). With
    `checkpoint_dir`, writes `last.pt` (model, optimiser, iteration, env_steps, wall_s, config)
    after every iteration; `resume=True` continues from it (a fresh start when there is none).
    Deterministic for a given config: a resumed run reports what an uninterrupted one would.
    Returns the summary: status, iterations, env_steps, wall_s, best_reward, final (last metrics),
    checkpoint (path or None). Raises ValueError when the checkpoint's config differs in anything
    but `budget_steps`.
    """
    torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    if config.policy == "llm":  # transformers and peft are imported only for it
        from trainer.recipes.train_llm_orchestrator import LLMLearner  # noqa: PLC0415

        learner: MLPLearner | LLMLearner = LLMLearner(config)
    else:
        learner = MLPLearner(config)
    iteration, env_steps, wall_before, best, final = 0, 0, 0.0, None, {}
    checkpoint = Path(checkpoint_dir) / "last.pt" if checkpoint_dir is not None else None
    if resume and checkpoint is not None and checkpoint.exists():
        state = _load(checkpoint)
        check_resumable(config, state)
        learner.load(state)
        torch.set_rng_state(state["torch_rng"])
        iteration, env_steps, wall_before = state["iteration"], state["env_steps"], state["wall_s"]
        best, final = state.get("best_reward"), state.get("final", {})
    started = time.monotonic()
    status = "finished"
    try:
        while env_steps < config.budget_steps:
            if should_stop is not None and should_stop():
                status = "cancelled"
                break
            report, steps = learner.step(iteration, env_steps)
            env_steps += steps
            wall = wall_before + time.monotonic() - started
            reward = report["metrics"]["reward"]
            best = reward if best is None else max(best, reward)
            final = report["metrics"]
            # Report, then checkpoint: a process killed in between re-runs this iteration on resume
            # (deterministically, from the previous checkpoint) and reports it again under the same
            # number, so no iteration goes unreported.
            if on_iteration is not None:
                on_iteration(
                    {
                        "iteration": iteration,
                        "env_steps": env_steps,
                        "budget_steps": config.budget_steps,
                        "wall_s": wall,
                        **report,
                    }
                )
            if checkpoint is not None:
                _save(
                    checkpoint,
                    {
                        **learner.state(),
                        "iteration": iteration + 1,
                        "env_steps": env_steps,
                        "wall_s": wall,
                        "best_reward": best,
                        "final": final,
                        "config": config.to_dict(),
                        "torch_rng": torch.get_rng_state(),
                    },
                )
            iteration += 1
    finally:
        learner.close()
    return {
        "status": status,
        "iterations": iteration,
        "env_steps": env_steps,
        "wall_s": wall_before + time.monotonic() - started,
        "best_reward": best,
        "final": final,
        "checkpoint": str(checkpoint) if checkpoint is not None and checkpoint.exists() else None,
    }


# --- checkpoint -------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=False)


def _save(path: Path, state: dict[str, Any]) -> None:
    """Write `state` to `path` atomically (a temporary file, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def check_resumable(config: RunConfig, state: Mapping[str, Any]) -> None:
    """Raise ValueError naming the first field in which `config` differs from the checkpoint
    `state`'s (any but `budget_steps`, which a resume may raise)."""
    stored = RunConfig.from_dict(state["config"])
    for name in RunConfig.__dataclass_fields__:
        if name != "budget_steps" and getattr(stored, name) != getattr(config, name):
            raise ValueError(
                f"{name}: differs from the checkpoint's ({getattr(stored, name)!r}); resume with the same config"
            )


def load_policy(path: Path) -> tuple[OrchestratorPolicy, RunConfig]:
    """The policy and config of a checkpoint `last.pt`."""
    state = _load(Path(path))
    config = RunConfig.from_dict(state["config"])
    policy = OrchestratorPolicy(config.hidden)
    policy.load_state_dict(state["model"])
    return policy, config


# --- evaluation (held-out tasks) --------------------------------------------------------------


def evaluate(
    policy: OrchestratorPolicy, tasks: list[Task], config: RunConfig, stop_mode: str | None = None, seed: int = 0
) -> list[dict[str, float]]:
    """Play each task once (episode seed `seed` + index) with `stop_mode` (default the config's);
    per episode: `trainer.rl.stop.episode_summary` (the reward terms at anneal 0, `length`,
    `p_success`, `stop_regret`, `premature`, `late`)."""
    mode = stop_mode or config.stop
    scripts = [Script(task, seed + k) for k, task in enumerate(tasks)]
    games = play(policy, scripts, config.sim_config(), mode, config.max_agents, record=False)
    return [episode_summary(g.episode, config.reward_weights) for g in games]


# --- CLI --------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m trainer.recipes.train_orchestrator", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--config", required=True, help="RunConfig as a JSON file")
    parser.add_argument("--out", default="runs/orchestrator", help="metrics.jsonl, episodes/ and last.pt go here")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue from --out/last.pt (with --url: reporting to the same app run while it is open)",
    )
    parser.add_argument("--url", help="the app's base URL: stream each iteration to its runs API")
    parser.add_argument("--token", default=os.environ.get("SWARMSCOPE_TOKEN"), help="API token (with --url)")
    parser.add_argument("--name", default="", help="the run's name in the app")
    return parser.parse_args(argv)


def _resumable(config: RunConfig, checkpoint: Path, config_path: str) -> bool:
    """Whether `config` can resume from `checkpoint`; if not, says why on stderr."""
    try:
        state = _load(checkpoint)
    except Exception as exc:  # noqa: BLE001 - whatever torch.load makes of a damaged file
        print(f"{checkpoint}: not a checkpoint of this recipe ({exc})", file=sys.stderr)
        return False
    try:
        check_resumable(config, state)
    except ValueError as exc:
        print(f"{config_path}: {exc}", file=sys.stderr)
        return False
    return True


def _refused(app: AppReporter | None, exc: AppRefused, url: str, out: Path) -> int:
    """Mark the app run failed with the app's refusal `exc` and say so on stderr in one line; 2."""
    where = ""
    if app is not None:
        app.fail(exc)
        where = f"; run {app.run_id} marked failed"
    print(f"{url}: {exc}{where}; checkpoint {out / 'last.pt'} kept", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Train from the CLI: OUT/metrics.jsonl, OUT/episodes/, OUT/last.pt, OUT/summary.json; with
    --url, report to the app too (`trainer.recipes.app_client`). Returns the exit status: 0 done,
    1 the run was closed in the app, 2 a bad config or checkpoint, an unreachable app or an
    iteration the app refused (said in one line, the app run marked failed), 130 Ctrl-C."""
    args = parse_args(argv)
    try:
        config = RunConfig.from_dict(json.loads(Path(args.config).read_text()))
    except (OSError, json.JSONDecodeError, ValueError) as exc:
        print(f"{args.config}: {exc}", file=sys.stderr)
        return 2
    if args.url and not args.token:
        print("--token (or SWARMSCOPE_TOKEN) is required with --url", file=sys.stderr)
        return 2
    out = Path(args.out)
    if args.resume and (out / "last.pt").exists() and not _resumable(config, out / "last.pt", args.config):
        return 2
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    app = None
    if args.url:
        try:
            app = AppReporter.connect(args, out, config)
        except (SwarmscopeError, OSError) as exc:  # OSError: URLError, refused, timed out
            print(f"{args.url}: {exc}", file=sys.stderr)
            return 2
    metrics = (out / "metrics.jsonl").open("a")

    def on_iteration(report: dict) -> None:
        for k, trace in enumerate(report["episodes"]):
            (out / "episodes" / f"iteration-{report['iteration']:05d}-{k}.json").write_text(json.dumps(trace))
        metrics.write(json.dumps({key: value for key, value in report.items() if key != "episodes"}) + "\n")
        metrics.flush()
        if app is not None:
            app.post_iteration(report)
        m = report["metrics"]
        print(
            f"iteration {report['iteration']}: env steps {report['env_steps']}/{report['budget_steps']}, "
            f"reward {m['reward']:.3f}, success {m['success_rate']:.2f}, length {m['episode_length']:.0f}, "
            f"stop regret {report['stop']['stop_regret']:.3f}",
            flush=True,
        )

    try:
        summary = train(
            config,
            checkpoint_dir=out,
            resume=args.resume,
            on_iteration=on_iteration,
            should_stop=lambda: app is not None and app.closed is not None,
        )
    except KeyboardInterrupt:  # Ctrl-C: the app run stays open, so --resume goes on reporting to it
        where = f"; --resume continues, reporting to run {app.run_id}" if app is not None else "; --resume continues"
        print(f"interrupted: checkpoint {out / 'last.pt'} kept{where}", file=sys.stderr)
        return 130
    except AppRefused as exc:  # said in one line, no traceback; the app run is marked failed with it
        return _refused(app, exc, args.url, out)
    except BaseException as exc:
        if app is not None:
            app.fail(exc)
        raise
    finally:
        metrics.close()
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if app is not None and app.closed is not None:
        print(
            f"{args.url}: run {app.run_id} was closed in the app ({app.closed}); stopped after iteration "
            f"{summary['iterations'] - 1}, checkpoint kept: --resume continues as a new run",
            file=sys.stderr,
        )
        return 1
    if app is not None:
        app.finish(summary)
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
