"""`RunConfig`: every knob of the orchestrator training recipe, validated against one table of bounds."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, NamedTuple

from trainer import llm_server
from trainer.policy import STOP_MODES
from trainer.sim.env import ANSWER_CREDITS, SimConfig
from trainer.sim.tasks import LEVELS, Level

ALGORITHMS = ("ppo", "grpo")
#: The orchestrator: `mlp`, a small network on feature vectors (trainer.policy); `llm`, a causal
#: language model with a LoRA adapter choosing actions as text (trainer.llm_policy).
POLICIES = ("mlp", "llm")
#: Where policy `llm` plays its episodes: `local`, the trainer's own model in torch; `server`, the
#: vLLM server of SWARMSCOPE_OPENAI_BASE_URL with the adapter reloaded there before every
#: iteration (trainer.llm_policy.server; `up --llm` serves one).
LLM_ROLLOUTS = ("local", "server")
#: The environment policy `llm` orchestrates: `swarmsim`, SwarmSim's drawn outcomes (exact
#: counterfactuals); `llm_workers`, SwarmSim whose workers are the same server's language model
#: answering arithmetic-chain steps, graded by exact match (trainer.sim.llm_workers).
LLM_ENVS = ("swarmsim", "llm_workers")
#: The credit schemes that read SwarmSim's closed-form E[R] (`Episode.p_success`), which the
#: `llm_workers` environment does not have.
EXACT_CREDITS = ("expected", "oracle", "counterfactual_baseline_exact")
#: The credit schemes policy `llm` trains with: the outcome (`shared`), its exact expectation
#: (`expected`), and the counterfactual credit that replaces it (trainer.rl.credit's `BASELINED`
#: arms, re-rollouts played by the language model). The zero-sum arms are left out: they move too
#: little of the advantage to show what credit buys (issue 30 item 7).
LLM_CREDITS = ("shared", "expected", "counterfactual_baseline", "counterfactual_baseline_exact")
CREDITS = (
    "shared",
    "counterfactual",
    "shapley",
    "oracle",
    "expected",
    "counterfactual_baseline",
    "counterfactual_baseline_exact",
)
#: Reward weights and their anneal settings (see `trainer.rl.rewards.episode_reward`).
DEFAULT_REWARD_WEIGHTS = {
    "success": 1.0,
    "parallelism": 0.1,
    "finish": 0.5,
    "critical_steps": 0.002,
    "parallel_target": 8.0,
    "anneal_fraction": 1.0,
}
#: Largest reward weight (or setting): a reward of 1e308 * R overflows to inf and no iteration can be stored.
MAX_WEIGHT = 1e6

#: The allowed values of the fields that name a choice, checked in this order.
CHOICES = {
    "policy": POLICIES,
    "llm_rollouts": LLM_ROLLOUTS,
    "llm_env": LLM_ENVS,
    "level": tuple(LEVELS),
    "algorithm": ALGORITHMS,
    "credit": CREDITS,
    "stop": STOP_MODES,
    "answer_credit": ANSWER_CREDITS,
}


class Bound(NamedTuple):
    """A numeric field's range: `int` in [low, high]; `float` finite, in [low, high] (`(low, high]`
    with `open_low`). The highs keep a run storable (64-bit integers) and within what a worker holds."""

    field: str
    type: type
    low: float
    high: float
    open_low: bool = False


#: The numeric fields' bounds, checked in this order (after `CHOICES`).
BOUNDS = (
    Bound("budget_steps", int, 1, 10**12),
    Bound("seed", int, 0, 2**62),
    Bound("episodes_per_iteration", int, 1, 4096),
    Bound("group_size", int, 1, 256),
    Bound("epochs", int, 1, 100),
    Bound("minibatch_size", int, 1, 65536),
    Bound("hidden", int, 1, 4096),
    Bound("max_steps", int, 2, 100_000),
    Bound("max_agents", int, 1, 10_000),
    Bound("credit_blocks", int, 1, 1000),
    Bound("credit_samples", int, 2, 1000),
    Bound("credit_block_size", int, 0, 100_000),
    Bound("n_subtasks", int, 0, 100_000),
    Bound("stop_points", int, 0, 1000),
    Bound("sample_episodes", int, 0, 16),
    Bound("threads", int, 1, 64),
    Bound("lora_rank", int, 1, 1024),
    Bound("lora_layers", int, 0, 1000),
    Bound("lr", float, 0, math.inf, open_low=True),
    Bound("clip", float, 0, math.inf, open_low=True),
    Bound("gae_lambda", float, 0, 1),
    Bound("entropy_coef", float, 0, math.inf),
    Bound("value_coef", float, 0, math.inf),
    Bound("continuation_coef", float, 0, math.inf),
)


def check_bound(bound: Bound, value: Any) -> None:
    """Raise ValueError "<field>: must be ..., got <value>" unless `value` is within `bound`
    (a bool is no number)."""
    if isinstance(value, bool):
        ok = False
    elif bound.type is int:
        ok = isinstance(value, int) and bound.low <= value <= bound.high
    else:
        ok = (
            isinstance(value, (int, float))
            and math.isfinite(value)
            and (bound.low < value if bound.open_low else bound.low <= value)
            and value <= bound.high
        )
    if ok:
        return
    if bound.type is int:
        raise ValueError(f"{bound.field}: must be an integer in [{bound.low}, {bound.high:,}], got {value!r}")
    text = (
        f"in [{bound.low:g}, {bound.high:g}]"
        if math.isfinite(bound.high)
        else f"> {bound.low:g}"
        if bound.open_low
        else f">= {bound.low:g}"
    )
    raise ValueError(f"{bound.field}: must be a finite number {text}, got {value!r}")


def check_weights(given: Any) -> dict[str, float]:
    """`DEFAULT_REWARD_WEIGHTS` updated with `given` (each in [0, MAX_WEIGHT]; anneal_fraction in
    (0, 1], parallel_target >= 1). Raises ValueError naming `reward_weights.<key>`."""
    if not isinstance(given, Mapping):
        raise ValueError(f"reward_weights: must be an object of numbers, got {given!r}")
    weights = dict(DEFAULT_REWARD_WEIGHTS)
    for key, value in given.items():
        if key not in DEFAULT_REWARD_WEIGHTS:
            raise ValueError(f"reward_weights.{key}: unknown weight (known: {', '.join(DEFAULT_REWARD_WEIGHTS)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_WEIGHT:
            raise ValueError(f"reward_weights.{key}: must be a number in [0, {MAX_WEIGHT:g}], got {value!r}")
        weights[key] = float(value)
    if not 0 < weights["anneal_fraction"] <= 1:
        raise ValueError("reward_weights.anneal_fraction: must be in (0, 1]")
    if weights["parallel_target"] < 1:
        raise ValueError("reward_weights.parallel_target: must be >= 1")
    return weights


@dataclass
class RunConfig:
    """One training run; JSON-serialisable (`to_dict`), validated by `from_dict`.

    policy: "mlp" (trainer.policy.OrchestratorPolicy) | "llm" (a language model with a LoRA adapter,
        trainer.llm_policy; GRPO with a credit of `LLM_CREDITS`, groups of at least 2).
    llm_model: policy llm's local Hugging Face folder ("": SmolLM2-135M-Instruct as
        trainer/llm_server.py builds it). lora_rank: the adapter's rank r (alpha = 2r); lora_layers:
        the top decoder layers it is put on (0: all). llm_rollouts: "local" (torch on the worker) |
        "server" (the vLLM server of SWARMSCOPE_OPENAI_BASE_URL samples, the adapter reloaded there).
        llm_env: "swarmsim" | "llm_workers" (SwarmSim whose workers are language-model calls on the
        server of SWARMSCOPE_OPENAI_BASE_URL, trainer.sim.llm_workers; no exact E[R], so no
        credit of EXACT_CREDITS).
    level: a SwarmSim level of `trainer.sim.tasks.LEVELS` (`long`: >= 200 decisions per episode).
    algorithm: "ppo" | "grpo". credit: "shared" | "counterfactual" | "shapley" | "oracle" (how the
        episode's outcome is redistributed over its decisions; `trainer.rl.credit`); "expected"
        (the outcome replaced by its exact expectation) | "counterfactual_baseline" |
        "counterfactual_baseline_exact" (block credit replaces the outcome; PPO for policy mlp,
        `trainer.recipes.train_orchestrator.credit_advantages_of`; GRPO for policy llm,
        `trainer.llm_policy.grpo.baselined_advantages`).
    stop: "learned" | "anytime" | "rule" | "none" (`trainer.policy` stop modes). The default
        `learned` offers stop only after the answer, where E[R] is fixed: it cannot learn to stop
        before answering; `anytime` (with `answer_credit="partial"`) makes stopping a real decision.
    answer_credit: "all_or_nothing" | "partial": how SwarmSim grades an answer (`trainer.sim.env`;
        "partial" gives a stop before the answer partial credit).
    reward_weights: weights of `episode_reward` (success, parallelism, finish, critical_steps per
        critical step) and its settings parallel_target (sub-agents) and anneal_fraction (of the budget).
    budget_steps: environment steps in all, credit re-rollouts included; the run stops at the first
        iteration boundary at or past it.
    seed: seeds the network's initialisation, the tasks and the episodes.
    episodes_per_iteration: episodes played per iteration, in groups of `group_size` sharing a task.
    lr: Adam learning rate. epochs, minibatch_size, clip: PPO update. gae_lambda: GAE's lambda.
    entropy_coef, value_coef, continuation_coef: loss weights (the entropy bonus is annealed with the
        orchestration terms, `anneal_factor`). hidden: torso width.
    max_steps: decisions after which SwarmSim stops an episode (the step limit).
    max_agents: most sub-agents alive at once. credit_blocks, credit_samples: see
        `trainer.recipes.train_orchestrator`'s docstring. credit_block_size: decisions per credit
        block (0: `credit_blocks` blocks whatever the episode's length; >= 1: blocks of this many
        decisions, so their number grows with the episode, `trainer.rl.credit.blocks_of`).
    n_subtasks: 0: the level's tasks; else tasks of this many subtasks in the level's layers
        (`task_level`; the credit-diffusion sweep over episode length, bench/credit_diffusion.py).
    stop_points: decisions per episode at which the value of stopping is measured (`stop_targets`).
    sample_episodes: episodes per iteration reported as traces. threads: torch CPU threads.
    """

    policy: str = "mlp"
    level: str = "long"
    algorithm: str = "ppo"
    credit: str = "shared"
    stop: str = "learned"
    answer_credit: str = "all_or_nothing"
    reward_weights: dict = field(default_factory=lambda: dict(DEFAULT_REWARD_WEIGHTS))
    budget_steps: int = 200_000
    seed: int = 0
    episodes_per_iteration: int = 16
    group_size: int = 4
    lr: float = 3e-3
    epochs: int = 4
    minibatch_size: int = 512
    clip: float = 0.2
    gae_lambda: float = 0.95
    entropy_coef: float = 0.003
    value_coef: float = 0.5
    continuation_coef: float = 0.5
    hidden: int = 64
    max_steps: int = 400
    max_agents: int = 64
    credit_blocks: int = 4
    credit_samples: int = 2
    credit_block_size: int = 0
    n_subtasks: int = 0
    stop_points: int = 4
    sample_episodes: int = 1
    threads: int = 1
    llm_model: str = ""
    lora_rank: int = 8
    lora_layers: int = 4
    llm_rollouts: str = "local"
    llm_env: str = "swarmsim"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Validate and build; missing fields take their defaults, `reward_weights` is merged into
        the defaults. Raises ValueError naming the field (`reward_weights.<key>` inside it)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"config: must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        for name in data:
            if name not in known:
                raise ValueError(f"{name}: unknown field (known: {', '.join(sorted(known))})")
        for name, allowed in CHOICES.items():
            if name in data and data[name] not in allowed:
                raise ValueError(f"{name}: must be one of {', '.join(allowed)}, got {data[name]!r}")
        for bound in BOUNDS:
            if bound.field in data:
                check_bound(bound, data[bound.field])
        weights = check_weights(data.get("reward_weights", {}))
        config = cls(**{**{k: v for k, v in data.items() if k != "reward_weights"}, "reward_weights": weights})
        if config.episodes_per_iteration % config.group_size:
            raise ValueError(
                f"group_size: must divide episodes_per_iteration ({config.episodes_per_iteration}), "
                f"got {config.group_size}"
            )
        if config.sample_episodes > config.episodes_per_iteration:
            raise ValueError("sample_episodes: must be <= episodes_per_iteration")
        config.task_level()  # n_subtasks must fit the level's layers
        if not isinstance(config.llm_model, str) or len(config.llm_model) > 1000:
            raise ValueError("llm_model: must be a folder path of at most 1000 characters")
        if config.policy == "llm":
            check_llm(config)
        elif config.credit.startswith("counterfactual_baseline") and config.algorithm != "ppo":
            raise ValueError(
                f"credit: {config.credit} under policy mlp adds w_success x the block credit to GAE on the critic, "
                f"which algorithm ppo has and {config.algorithm} does not: choose ppo, or another credit"
            )
        elif config.llm_rollouts != "local":
            raise ValueError("llm_rollouts: only policy llm plays on a server")
        elif config.llm_env != "swarmsim":
            raise ValueError("llm_env: only policy llm orchestrates language-model workers")
        return config

    def task_level(self) -> str | Level:
        """The level tasks are drawn from: `level`'s name, or with `n_subtasks` a `Level` of
        min(depth, n) layers of n / layers subtasks (the level's difficulty range). Raises
        ValueError naming `n_subtasks` when the layers do not divide it."""
        if not self.n_subtasks:
            return self.level
        spec = LEVELS[self.level]
        depth = min(spec.depth, self.n_subtasks)
        if self.n_subtasks % depth:
            raise ValueError(
                f"n_subtasks: must be a multiple of level {self.level}'s {depth} layers, got {self.n_subtasks}"
            )
        return Level(width=self.n_subtasks // depth, depth=depth, difficulty=spec.difficulty)

    def sim_config(self) -> SimConfig:
        return SimConfig(max_steps=self.max_steps, answer_credit=self.answer_credit)


#: What a run of policy `llm` changes from the MLP's defaults where the form leaves them out: a
#: language model's decision costs a forward pass (~1-5 s on a CPU core for SmolLM2-135M), so
#: iterations are small, steps short and the learning rate a LoRA one.
LLM_DEFAULTS = {
    "algorithm": "grpo",
    "lr": 1e-4,
    "epochs": 1,
    "episodes_per_iteration": 4,
    "group_size": 2,
    "max_steps": 12,
    "max_agents": 8,
}


#: Seconds one decision of policy `llm` costs on this project's 2-CPU machine (SmolLM2-135M-Instruct,
#: torch at 1 thread), as (low, high): sampled on the vLLM server (`server`) or in torch on the worker
#: (`local`), and the update's share per decision (`update`: the old log-probabilities, the step and
#: the re-scoring after it). From bench/RESULTS.md "Issue 31: policy llm played on the vLLM server"
#: (server 1.1-1.4 s at load 6-9; update 4.3-5.5 s) and "a decision's cost is set by torch's thread
#: count" (torch 1.15 s on a quiet machine, 6-14 s at load 7-8 in "first figures"). The New run form's
#: estimate of an iteration's time: decisions x (sampling + update).
LLM_DECISION_S = {"server": (1.1, 1.4), "local": (1.15, 14.0), "update": (4.3, 5.5)}


def check_llm(config: RunConfig) -> None:
    """Raise ValueError naming the field where a policy `llm` run asks for what it cannot do yet."""
    if config.algorithm != "grpo":
        raise ValueError(
            "algorithm: policy llm trains with grpo (group-relative advantages on the action tokens), "
            f"got {config.algorithm!r}"
        )
    if config.credit not in LLM_CREDITS:
        raise ValueError(f"credit: policy llm trains with {', '.join(LLM_CREDITS)} credit, got {config.credit!r}")
    if config.llm_env == "llm_workers" and config.credit in EXACT_CREDITS:
        raise ValueError(
            f"credit: {config.credit} reads SwarmSim's exact E[R], which the llm_workers environment does not "
            "have (its workers are a language model): choose shared or counterfactual_baseline"
        )
    if config.group_size < 2:
        raise ValueError("group_size: policy llm needs groups of at least 2 episodes (group-relative advantages)")
    if config.llm_rollouts == "server" and llm_server.LORA_RANK and config.lora_rank > llm_server.LORA_RANK:
        raise ValueError(
            f"lora_rank: the vLLM server loads adapters of rank at most {llm_server.LORA_RANK} (its --max-lora-rank, "
            f"trainer/llm_server.py LORA_RANK), got {config.lora_rank}: choose {llm_server.LORA_RANK} or less, or play "
            "on the training worker (llm_rollouts local)"
        )
