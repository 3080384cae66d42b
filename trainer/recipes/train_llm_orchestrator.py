"""One iteration of policy `llm` (RunConfig.policy == "llm"), for `train_orchestrator.train`'s loop.

A causal language model with a LoRA adapter (trainer.llm_policy.model; default SmolLM2-135M-Instruct
as trainer/llm_server.py builds it) plays SwarmSim with every orchestration action chosen as text
under constrained decoding; the iteration's tasks and episode seeds are the MLP recipe's
(`iteration_scripts`: groups of `group_size` episodes share a task), played in torch on the worker
or, with `llm_rollouts` "server", sampled by the vLLM server with the current adapter loaded there
before every iteration (trainer.llm_policy.server). Update: GRPO (Shao et al.
2024, §4.1): the group-relative advantage of each episode's reward on every decision of it, PPO's
clipped ratio on the chosen action's tokens (trainer.llm_policy.grpo), `epochs` Adam steps on the
adapter. Credit (the MLP recipe's `arm_reward`): `shared` (the episode's reward), `expected` (its
0/1 outcome replaced by SwarmSim's exact E[R | actions]), or `counterfactual_baseline` (`_exact`:
on E[R]), where each block of decisions' counterfactual credit of the outcome replaces the outcome:
decision t of episode i gets (f_i - mean_g f + w_success Δ_k(t)) / σ (f the outcome-free reward;
Δ_k = Y(h) - mean_j Y(h with block k redrawn), `credit_samples` re-rollouts per block forked at the
block, sharing the episode's draws, the redrawn decisions sampled from the model where the
episode's were, in torch or on the server: trainer.rl.credit.outcome_credit with
trainer.llm_policy.play.LLMPlayer; trainer.llm_policy.grpo.baselined_advantages). The report is
the contract's iteration dict (webapp.training.services.check_iteration) with the language model's
own figures beside it: decisions, prompt tokens, rollout, re-rollout and update seconds, and the
update's first-order gain.
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import torch
from peft import get_peft_model_state_dict, set_peft_model_state_dict

from trainer import llm_server
from trainer.llm_policy.model import LoraSettings, load
from trainer.llm_policy.play import (
    LLMPlayed,
    LLMPlayer,
    grpo_iteration,
    local_chooser,
    server_chooser,
    update_direction,
)
from trainer.llm_policy.server import ServerPolicy
from trainer.llm_policy.transcript import DistributionRecorder, decision_figures, write_turns
from trainer.policy import MOVES
from trainer.recipes.config import RunConfig
from trainer.recipes.report import episode_means, stop_outcomes, tag_samples
from trainer.recipes.train_orchestrator import arm_reward, iteration_scripts
from trainer.rl.credit import BASELINED, attribution, outcome_credit
from trainer.rl.rewards import anneal_factor, episode_reward
from trainer.rollout.chat import ChatClient
from trainer.sim.env import Episode, SwarmEnv
from trainer.sim.llm_workers import LLMWorkerEnv, Worker, chat_worker


def model_path(config: RunConfig) -> Path:
    """The model folder of `config` (`llm_model`, else SmolLM2 in var/llm/smollm2)."""
    return Path(config.llm_model) if config.llm_model else llm_server.MODEL_DIR


class LLMLearner:
    """The model with its adapter and Adam on the adapter's parameters; `step` runs one iteration,
    `state`/`load` are what the checkpoint keeps (the adapter's weights, not the base model's).
    With `llm_rollouts` "server", `server` samples the actions and every `step` first loads the
    current adapter there (saved in a temporary folder, removed by `close`). Raises ValueError
    naming `llm_model` where the folder holds no model, trainer.llm_policy.server.ServerError where
    the server's settings are missing."""

    def __init__(self, config: RunConfig):
        path = model_path(config)
        if not (path / "config.json").is_file():
            raise ValueError(
                f"llm_model: no Hugging Face model in {path} (build SmolLM2 with `python trainer/llm_server.py "
                "install build-model`, or name a local model folder)"
            )
        self.config = config
        settings = LoraSettings(rank=config.lora_rank, alpha=2 * config.lora_rank, layers=config.lora_layers or None)
        self.model, self.tokenizer = load(path, settings)
        self.optimizer = torch.optim.Adam([p for p in self.model.parameters() if p.requires_grad], lr=config.lr)
        self.server = ServerPolicy.from_env() if config.llm_rollouts == "server" else None
        self.worker = workers(config)
        self.make_env = functools.partial(LLMWorkerEnv, worker=self.worker) if self.worker else SwarmEnv
        self.adapters = Path(tempfile.mkdtemp(prefix="swarmscope-adapter-")) if self.server else None
        self.run_tag = uuid.uuid4().hex[:8]

    def close(self) -> None:
        """Remove the adapter folders written for the server."""
        if self.adapters:
            shutil.rmtree(self.adapters, ignore_errors=True)

    def publish(self, iteration: int) -> None:
        """Serve the current adapter as `policy-<run tag>-<iteration>` (the previous one unloaded)."""
        assert self.server is not None and self.adapters is not None
        old = self.server.served
        folder = self.adapters / str(iteration)
        self.server.publish(self.model, folder, f"policy-{self.run_tag}-{iteration}")
        if old != self.server.model:
            shutil.rmtree(self.adapters / old.rsplit("-", 1)[1], ignore_errors=True)

    def state(self) -> dict[str, Any]:
        return {"model": get_peft_model_state_dict(self.model), "optimizer": self.optimizer.state_dict()}

    def load(self, state: dict[str, Any]) -> None:
        set_peft_model_state_dict(self.model, state["model"])
        self.optimizer.load_state_dict(state["optimizer"])

    def step(self, iteration: int, env_steps: int) -> tuple[dict[str, Any], int]:
        """Play and update once: (the iteration dict without `iteration`, `env_steps`,
        `budget_steps`, `wall_s`; the environment steps played)."""
        config, weights = self.config, self.config.reward_weights
        anneal = anneal_factor(env_steps, config.budget_steps, weights["anneal_fraction"])
        scripts = iteration_scripts(config, iteration)  # the MLP recipe's tasks and episode seeds
        tasks = [script.task for script in scripts[:: config.group_size]]
        requests, worker_requests = 0, self.worker.requests if self.worker else 0
        if self.server:
            self.publish(iteration)
            requests = self.server.requests

        def reward(episode: Episode) -> float:  # R, E[R] under `expected`, no outcome under BASELINED
            return arm_reward(episode_reward(episode, weights, anneal), episode, config)

        recorder = None if self.server else DistributionRecorder(self.model)  # entropy and p(stop) of local play
        choose = server_chooser(self.server) if self.server else recorder
        player = LLMPlayer(
            self.model,
            self.tokenizer,
            config.sim_config(),
            config.stop,
            config.max_agents,
            choose or local_chooser(self.model),
            self.make_env,
        )

        def credit(game: LLMPlayed) -> tuple[np.ndarray, int]:  # w_success Δ per action, re-rollout steps
            delta, steps = outcome_credit(player, game, config, exact=config.credit.endswith("_exact"))
            return weights["success"] * delta, steps

        stats = grpo_iteration(
            self.model,
            self.tokenizer,
            self.optimizer,
            tasks,
            config.group_size,
            config.sim_config(),
            seed=scripts[0].seed,  # grpo_iteration's seeds seed + k G + i are the scripts'
            epochs=config.epochs,
            mode=config.stop,
            clip=config.clip,
            max_agents=config.max_agents,
            reward=reward,
            choose=choose,
            credit=credit if config.credit in BASELINED else None,
            make_env=self.make_env,
        )
        episodes = [g.episode for g in stats.games]
        for game in stats.games[: config.sample_episodes]:  # the model's own turns in the sample traces
            write_turns(game, self.tokenizer, recorder)
        rewards = [r for group in stats.rewards for r in group]
        report = llm_report(episodes, rewards, stats, config, iteration, anneal)
        entropy, p_stop = decision_figures(stats.games, recorder)
        if entropy is not None:  # the run page's entropy chart and p(stop) curve
            report["metrics"]["entropy"] = entropy
            report["stop"]["p_stop_by_step"] = p_stop
        report["metrics"]["llm"]["reroll_decisions"] = player.decisions
        if self.server:
            report["metrics"]["llm"]["server_requests"] = self.server.requests - requests
        if self.worker:
            report["metrics"]["llm"]["worker_requests"] = self.worker.requests - worker_requests
        return report, sum(len(e.actions) for e in episodes) + stats.credit_env_steps


def workers(config: RunConfig) -> Worker | None:
    """The language-model workers of `llm_env` "llm_workers" (trainer.sim.llm_workers: the model of
    SWARMSCOPE_OPENAI_BASE_URL / _MODEL, the base model also where the policy plays there), else
    None. Raises ValueError naming the unset variable."""
    if config.llm_env != "llm_workers":
        return None
    for name in ("SWARMSCOPE_OPENAI_BASE_URL", "SWARMSCOPE_OPENAI_MODEL"):
        if not os.environ.get(name):
            raise ValueError(
                f"llm_env: the llm_workers environment asks a model server, but {name} is not set (`up --llm`)"
            )
    return chat_worker(ChatClient.from_env())


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def llm_report(
    episodes: list[Episode], rewards: list[float], stats, config: RunConfig, iteration: int, anneal: float
) -> dict[str, Any]:
    """The contract's iteration dict (without `iteration`, `env_steps`, `budget_steps`, `wall_s`)
    for an iteration of policy `llm`: means over the episodes of their reward terms, the clipped
    loss, move shares; `llm`'s own figures (decisions, prompt tokens, rollout and update seconds,
    the update's `gain`, `up`, `down`: trainer.llm_policy.play.update_direction; None where
    undefined); stop regret over the offered stops (None, `regret` "not_measured", and no
    `expected_success` in the llm_workers environment: both value stops at SwarmSim's closed-form
    E[R]); credit shares of the episode's reward (shared
    credit) or of its decisions' counterfactual credit (`stats.credits`); the first
    `sample_episodes` traces tagged with the settings."""
    terms = [episode_reward(e, config.reward_weights, anneal) for e in episodes]
    moves = [f"spawn_{a.role}" if a.kind == "spawn" else a.kind for e in episodes for a in e.actions]
    # stop regret values stops at SwarmSim's closed-form E[R]: not the llm_workers environment's
    outcomes = stop_outcomes(episodes, config) if config.llm_env == "swarmsim" else None
    moved = update_direction(stats)
    tag_samples(
        episodes, rewards, config, iteration, policy="llm", model=model_path(config).name, environment=config.llm_env
    )
    metrics: dict[str, Any] = {
        **episode_means(episodes, terms),
        "reward": float(np.mean(rewards)),
        "anneal": anneal,
        "credit_env_steps": stats.credit_env_steps,
        "move_shares": {name: moves.count(name) / max(1, len(moves)) for name in MOVES},
        "llm": {
            "decisions": stats.decisions,
            "prompt_tokens": stats.prompt_tokens,
            "rollout_s": stats.rollout_s,
            "reroll_s": stats.reroll_s,
            "update_s": stats.update_s,
            **{k: _finite(v) for k, v in moved.items()},
        },
    }
    if stats.loss:
        metrics["policy_loss"] = stats.loss[-1]
    if outcomes is None:
        del metrics["expected_success"]
    credits = stats.credits or [np.full(len(e.actions), r) for e, r in zip(episodes, rewards)]
    return {
        "metrics": metrics,
        "stop": {
            "stop_regret": float(np.mean([o.regret for o in outcomes])),
            "premature": int(sum(o.premature for o in outcomes)),
            "late": int(sum(o.late for o in outcomes)),
            "regret": "offered",
        }
        if outcomes is not None
        else {"stop_regret": None, "premature": None, "late": None, "regret": "not_measured"},
        "credit": attribution(episodes, credits),
        "episodes": [e.trace.to_dict() for e in episodes[: config.sample_episodes]],
    }
