"""Issue 31: policy `llm` on SmolLM2-135M-Instruct (trainer/llm_policy), iteration time split into
rollouts and update, decisions and prompt tokens per second, peak memory, and the expected reward
E[R] of its episodes before and after a few GRPO iterations (shared credit), on the CPU (or the
update on CUDA where torch sees a GPU).

    nice -n 10 .venv/bin/python bench/bench_llm_policy.py [--model var/llm/smollm2] [--iterations 3]
        [--group 4] [--tasks 2] [--level tiny] [--max-steps 10] [--rank 8] [--layers 4] [--lr 1e-4]
        [--server] [--threads 1] [--credit shared] [--credit-blocks 4] [--credit-samples 2]
        [--stop learned] [--eval-tasks 8] [--env swarmsim|llm_workers] [--json out.json]

--server plays every episode on the vLLM server of SWARMSCOPE_OPENAI_BASE_URL / SWARMSCOPE_OPENAI_MODEL
(trainer/llm_server.py serve, LoRA enabled) with the adapter reloaded before every iteration
(trainer.llm_policy.server); the evaluation plays there too. `publish_s` is the reload's time.

--credit counterfactual_baseline (or `_exact`) trains with counterfactual credit in place of the
outcome (trainer.recipes.train_llm_orchestrator's docstring): every episode's decisions are cut into
`--credit-blocks` blocks, each redrawn `--credit-samples` times by re-rollouts forked at the block
(trainer.rl.credit.outcome_credit with trainer.llm_policy.play.LLMPlayer: the redrawn decisions
sampled from the model, on the server with --server); an iteration's time is then split into
rollouts, re-rollouts (`reroll_s`, with the model's `reroll_decisions` and `credit_env_steps`) and
update.

The model is the one trainer/llm_server.py builds (`build-model`) unless --model names another local
Hugging Face folder. Tasks: `--tasks` training tasks of `--level` per iteration (fresh seeds), G =
`--group` episodes each; evaluation: E[R] (SwarmSim's closed form for the episode's actions,
`Episode.p_success`) of one episode on each of `--eval-tasks` (8) fixed held-out tasks (seeds 900000+),
before and after (0: none), and the untrained model's answered share (episodes whose orchestrator aggregated).
Prints one JSON object (with --json, writes it too). A small run: a null result is a result.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trainer.llm_policy.model import LoraSettings, load  # noqa: E402
from trainer.llm_policy.play import (  # noqa: E402
    LLMPlayer,
    grpo_iteration,
    local_chooser,
    play_llm,
    server_chooser,
    task_reward,
    update_direction,
)
from trainer.llm_policy.server import ServerPolicy  # noqa: E402
from trainer.llm_server import MODEL_DIR  # noqa: E402
from trainer.recipes.config import LLM_CREDITS, LLM_DEFAULTS, RunConfig  # noqa: E402
from trainer.recipes.train_orchestrator import arm_reward  # noqa: E402
from trainer.rl.credit import BASELINED, outcome_credit  # noqa: E402
from trainer.rl.rewards import episode_reward  # noqa: E402
from trainer.rollout.chat import ChatClient  # noqa: E402
from trainer.sim.env import SimConfig, SwarmEnv  # noqa: E402
from trainer.sim.llm_workers import LLMWorkerEnv, chat_worker  # noqa: E402
from trainer.sim.tasks import generate_task  # noqa: E402

EVAL_SEED = 900_000


def held_out(
    model, tokenizer, level: str, config: SimConfig, n: int = 8, choose=None, mode: str = "learned", make_env=SwarmEnv
):
    """The model's episodes (`LLMPlayed`) on the `n` fixed held-out tasks of `level`: task i is
    `generate_task(level, EVAL_SEED + i)`, played once at episode seed EVAL_SEED + i (stop `mode`)."""
    return [
        play_llm(
            model,
            tokenizer,
            generate_task(level, EVAL_SEED + i),
            EVAL_SEED + i,
            config,
            mode,
            choose=choose,
            make_env=make_env,
        )
        for i in range(n)
    ]


def evaluate(
    model, tokenizer, level: str, config: SimConfig, n: int = 8, choose=None, mode: str = "learned", make_env=SwarmEnv
) -> dict[str, float]:
    """Mean E[R] and answered share of one episode on each of `n` fixed held-out tasks (stop `mode`,
    `held_out`); in the llm_workers environment (`make_env` not SwarmEnv) the episodes' realised
    reward instead of E[R] (the same tasks and seeds before and after, so the workers' answers are
    the same requests)."""
    p, answered, decisions = [], [], 0
    for played in held_out(model, tokenizer, level, config, n, choose, mode, make_env):
        p.append(played.episode.p_success if make_env is SwarmEnv else played.episode.reward)
        answered.append(any(a.kind == "aggregate" for a in played.episode.actions))
        decisions += len(played.decisions)
    return {"expected_reward": float(np.mean(p)), "answered": float(np.mean(answered)), "decisions": decisions}


def credit_of(model, tokenizer, args, choose, make_env=SwarmEnv):
    """(reward, credit, player) of `grpo_iteration` for `args.credit`: the task reward and no
    credit under `shared`; under the `BASELINED` arms the outcome-free reward and each game's
    w_success Δ per action from `LLMPlayer` re-rollouts (as LLMLearner.step builds them)."""
    config = RunConfig.from_dict(
        {
            **LLM_DEFAULTS,
            "policy": "llm",
            "level": args.level,
            "max_steps": args.max_steps,
            "stop": args.stop,
            "credit": args.credit,
            "credit_blocks": args.credit_blocks,
            "credit_samples": args.credit_samples,
        }
    )
    player = LLMPlayer(
        model, tokenizer, config.sim_config(), config.stop, config.max_agents, choose or local_chooser(model), make_env
    )
    if config.credit not in BASELINED:
        return task_reward, None, player
    w = config.reward_weights

    def reward(episode) -> float:
        return arm_reward(episode_reward(episode, w, 1.0), episode, config)

    def credit(game):
        delta, steps = outcome_credit(player, game, config, exact=config.credit.endswith("_exact"))
        return w["success"] * delta, steps

    return reward, credit, player


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(MODEL_DIR))
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--level", default="tiny")
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--server", action="store_true", help="play on the vLLM server (SWARMSCOPE_OPENAI_*)")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--credit", default="shared", choices=[c for c in LLM_CREDITS if c != "expected"])
    parser.add_argument("--credit-blocks", type=int, default=4)
    parser.add_argument("--credit-samples", type=int, default=2)
    parser.add_argument("--stop", default="learned")
    parser.add_argument(
        "--env",
        default="swarmsim",
        choices=["swarmsim", "llm_workers"],
        help="llm_workers: the workers are the server's model (trainer.sim.llm_workers; needs SWARMSCOPE_OPENAI_*)",
    )
    parser.add_argument("--eval-tasks", type=int, default=8, help="held-out tasks evaluated before and after (0: none)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    model, tokenizer = load(args.model, LoraSettings(rank=args.rank, alpha=2 * args.rank, layers=args.layers))
    load_s = time.perf_counter() - t0
    config = SimConfig(max_steps=args.max_steps)
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=args.lr)
    server = ServerPolicy.from_env() if args.server else None
    choose = server_chooser(server) if server else None
    scratch = Path(tempfile.mkdtemp(prefix="bench-llm-policy-"))

    def publish(k: int) -> float:
        if server is None:
            return 0.0
        t = time.perf_counter()
        server.publish(model, scratch / str(k), f"bench-{os.getpid()}-{k}")
        return time.perf_counter() - t

    worker = chat_worker(ChatClient.from_env()) if args.env == "llm_workers" else None
    make_env = functools.partial(LLMWorkerEnv, worker=worker) if worker else SwarmEnv
    reward, credit, player = credit_of(model, tokenizer, args, choose, make_env)
    publish(0)
    t0 = time.perf_counter()
    n_eval = args.eval_tasks
    before = evaluate(model, tokenizer, args.level, config, n_eval, choose, args.stop, make_env) if n_eval else None
    eval_s = time.perf_counter() - t0
    iterations = []
    for k in range(args.iterations):
        tasks = [generate_task(args.level, 10_000 * (k + 1) + j) for j in range(args.tasks)]
        t0 = time.perf_counter()
        publish_s = publish(k + 1) if k else 0.0
        requests = server.requests if server else 0
        asked = worker.requests if worker else 0
        rerolls = player.decisions
        stats = grpo_iteration(
            model,
            tokenizer,
            optimiser,
            tasks,
            args.group,
            config,
            seed=1000 * k,
            epochs=1,
            mode=args.stop,
            reward=reward,
            choose=choose,
            credit=credit,
            make_env=make_env,
        )
        wall = time.perf_counter() - t0
        iterations.append(
            {
                "wall_s": round(wall, 1),
                "rollout_s": round(stats.rollout_s, 1),
                "reroll_s": round(stats.reroll_s, 1),
                "update_s": round(stats.update_s, 1),
                "reroll_decisions": player.decisions - rerolls,
                "credit_env_steps": stats.credit_env_steps,
                "publish_s": round(publish_s, 2),
                "server_requests": (server.requests - requests) if server else 0,
                "worker_requests": (worker.requests - asked) if worker else 0,
                "decisions": stats.decisions,
                "prompt_tokens": stats.prompt_tokens,
                "mean_reward": float(np.mean(stats.rewards)),
                "loss": stats.loss,
                **update_direction(stats),
            }
        )
        print(json.dumps(iterations[-1]), flush=True)
    publish(args.iterations + 1)
    after = evaluate(model, tokenizer, args.level, config, n_eval, choose, args.stop, make_env) if n_eval else None
    shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, Python {platform.python_version()}",
        "args": vars(args),
        "load_s": round(load_s, 1),
        "eval_s": round(eval_s, 1),
        "before": before,
        "after": after,
        "iterations": iterations,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
