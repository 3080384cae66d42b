"""SwarmSim episodes played by the `llm` policy, and one GRPO iteration over groups of them.

At each decision the state is written as text (trainer.llm_policy.text_state), the legal actions'
token sequences are scored by the model under constrained decoding (trainer.llm_policy.constrained)
and one is drawn with u = uniform(seed, "policy/<t>"): SwarmSim's counter-based draws, as the MLP
policy's (trainer.policy.play), so an episode re-played with the same seed shares every draw.
An iteration plays G episodes per task (same task, seeds seed .. seed + G - 1), gives every
decision of episode i the group-relative advantage of its reward (shared credit; GRPO) or, with
counterfactual credit, the group-relative advantage of its outcome-free reward plus its block's
counterfactual credit of the outcome (re-rollouts forked at the block, played by `LLMPlayer` at the
episode's seed; trainer.rl.credit.outcome_credit), and takes `epochs` gradient steps of the
clipped loss (trainer.llm_policy.grpo) on the adapter.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from peft import PeftModel

from trainer.llm_policy.constrained import action_logprobs, sample_action
from trainer.llm_policy.grpo import CLIP, baselined_advantages, group_advantages, grpo_loss
from trainer.llm_policy.text_state import chat, legal_actions
from trainer.policy import STOP_MODES, OrchestratorState, Script
from trainer.recipes.config import DEFAULT_REWARD_WEIGHTS
from trainer.rl.rewards import episode_reward
from trainer.sim.env import Episode, SimConfig, SwarmEnv
from trainer.sim.tasks import Task


@dataclass
class Decision:
    """One decision of the model: its `step` (the episode's action index t), its prompt's token
    ids, the legal actions (move, text) and their token ids (each ending with the end-of-turn
    token), the index it chose, and the chosen action's per-token log-probabilities when it was
    sampled (`logp`: (L,), no gradient; None where a server sampled it: the update computes them)."""

    step: int
    prompt: list[int]
    actions: list[tuple[int, str]]
    candidates: list[list[int]]
    chosen: int
    logp: torch.Tensor | None


@dataclass
class LLMPlayed:
    """A played episode (a `trainer.policy.Game`): its final `env`, the `decisions` the model made
    (the forced ones, with one legal action, and the replayed ones of a script are not recorded:
    nothing was chosen), `env_steps` simulated after the script's fork, and the finished `episode`
    (unset when played with `build=False`)."""

    env: SwarmEnv
    decisions: list[Decision] = field(default_factory=list)
    env_steps: int = 0
    episode: Episode = field(init=False)


def task_reward(episode: Episode) -> float:
    """The MLP recipe's episode reward at its default weights, auxiliary terms at full weight
    (trainer.rl.rewards.episode_reward's `total`: w_success R - w_cs CS + w_parallelism r_parallel +
    w_finish r_finish), so episodes that finish more subtasks score higher even when none succeeds."""
    return episode_reward(episode, DEFAULT_REWARD_WEIGHTS, 1.0)["total"]


def encode(tokenizer, messages: list[dict[str, str]]) -> list[int]:
    """The prompt token ids of `messages` with the model's chat template, ending with the opening
    of the assistant's turn."""
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "input_ids"):  # a BatchEncoding in some versions
        ids = ids["input_ids"]
    return list(ids)


def end_token(tokenizer) -> int:
    """The token that ends the assistant's turn (ChatML's `<|im_end|>` for SmolLM2), else EOS."""
    for name in ("<|im_end|>", "<|eot_id|>"):
        token = tokenizer.convert_tokens_to_ids(name)
        if isinstance(token, int) and token != tokenizer.unk_token_id:
            return token
    return int(tokenizer.eos_token_id)


#: Chooses at a decision: (prompt token ids, the legal actions' token ids, the decision's uniform
#: u) -> (the chosen index, its per-token log-probabilities or None where they were not computed):
#: `local_chooser` on the trainer's model, or a vLLM server's sampler (`server_chooser`).
Chooser = Callable[[Sequence[int], Sequence[Sequence[int]], float], tuple[int, torch.Tensor | None]]


def local_chooser(model: torch.nn.Module) -> Chooser:
    """Inverse-CDF sampling with u over `action_logprobs` on `model` (no gradient)."""

    def choose(prompt, candidates, u):
        with torch.no_grad():
            logps = action_logprobs(model, prompt, candidates)
        chosen = sample_action(logps, u)
        return chosen, logps[chosen]

    return choose


def server_chooser(server) -> Chooser:
    """`server.choose` (trainer.llm_policy.server.ServerPolicy); no log-probabilities (the update
    computes them)."""

    def choose(prompt, candidates, u):
        return server.choose(prompt, candidates, u), None

    return choose


#: Makes an episode's environment: (task, config, seed) -> the env (SwarmSim's `SwarmEnv`, or
#: `functools.partial(trainer.sim.llm_workers.LLMWorkerEnv, worker=...)`: language-model workers).
EnvFactory = Callable[[Task, SimConfig, int], SwarmEnv]


def play_llm(
    model: torch.nn.Module,
    tokenizer,
    task: Task,
    seed: int,
    config: SimConfig,
    mode: str = "learned",
    max_agents: int = 8,
    choose: Chooser | None = None,
    make_env: EnvFactory = SwarmEnv,
) -> LLMPlayed:
    """Play one episode of `task` at env seed `seed` (in the env `make_env` makes) with the model
    choosing every decision that has more than one legal action under stop `mode`
    (trainer.policy.STOP_MODES), the action picked by `choose` (default: `local_chooser(model)`).
    Raises ValueError for an unknown mode."""
    return play_script(model, tokenizer, Script(task, seed), config, mode, max_agents, choose, make_env=make_env)


def play_script(
    model: torch.nn.Module,
    tokenizer,
    script: Script,
    config: SimConfig,
    mode: str = "learned",
    max_agents: int = 8,
    choose: Chooser | None = None,
    build: bool = True,
    make_env: EnvFactory = SwarmEnv,
) -> LLMPlayed:
    """Play `script` (trainer.policy.Script: a fresh episode, or a re-rollout of a factual one) as
    `trainer.policy.play` plays it for the MLP: decision t replays the script's factual move where
    kept and legal (`Script.replayed`; no model call), else is forced (one legal action) or chosen
    by `choose` (default `local_chooser(model)`) with u = `script.draw(t)`, the counter-based
    uniform of the episode's seed (and salt), so a re-rollout shares every draw it does not change.
    Steps at or after `script.fork` count in `env_steps`. `build=False` leaves `episode` unset (the
    outcome is read from `env`). The env is `make_env(task, config, seed)`. Raises ValueError for
    an unknown mode."""
    if mode not in STOP_MODES:
        raise ValueError(f"stop mode must be one of {STOP_MODES}, got {mode!r}")
    env = make_env(script.task, config, script.seed)
    state = OrchestratorState(env, max_agents)
    played = LLMPlayed(env)
    end = end_token(tokenizer)
    choose = choose or local_chooser(model)
    while not env.done:
        t = len(env.actions)
        mask = script.legal(state, mode)
        move = script.replayed(t, mask)
        if move is None:
            actions = legal_actions(state, mask)
            if len(actions) == 1:
                move = actions[0][0]
            else:
                prompt = encode(tokenizer, chat(state, actions))
                candidates = [list(tokenizer.encode(text, add_special_tokens=False)) + [end] for _, text in actions]
                chosen, logp = choose(prompt, candidates, script.draw(t))
                played.decisions.append(Decision(t, prompt, actions, candidates, chosen, logp))
                move = actions[chosen][0]
        state.apply(move)
        played.env_steps += t >= script.fork
    if build:
        played.episode = env.episode()
    return played


class LLMPlayer:
    """Plays credit re-rollouts with the language model (a `trainer.rl.credit.Player`): each script
    by `play_script` with `choose` (`local_chooser(model)` in torch, `server_chooser` on the vLLM
    server), so the redrawn decisions sample the model and the replayed ones do not call it.
    Counts the model's `decisions` over every call (the re-rollouts' share of the sampling cost)."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer,
        config: SimConfig,
        mode: str,
        max_agents: int,
        choose: Chooser,
        make_env: EnvFactory = SwarmEnv,
    ):
        self.model, self.tokenizer, self.config = model, tokenizer, config
        self.mode, self.max_agents, self.choose, self.make_env = mode, max_agents, choose, make_env
        self.decisions = 0

    def __call__(self, scripts: Sequence[Script], build: bool) -> list[LLMPlayed]:
        games = [
            play_script(
                self.model,
                self.tokenizer,
                s,
                self.config,
                self.mode,
                self.max_agents,
                self.choose,
                build,
                make_env=self.make_env,
            )
            for s in scripts
        ]
        self.decisions += sum(len(g.decisions) for g in games)
        return games


@dataclass
class IterationStats:
    """What one iteration did: `rewards` (groups × G), `loss` per epoch, the chosen actions'
    summed log-probabilities before and after the update per decision (`logp_before`,
    `logp_after`) with their `advantages`, `decisions` in all, the prompt tokens the model read
    while playing (`prompt_tokens`: the prompts' own, once per decision), and the wall seconds of
    the rollouts and of the update (`rollout_s`; `update_s`, with the re-scoring of the chosen
    actions after it that `logp_after` needs); `games`: the played episodes, task by task
    (groups x G), for the run's report. With per-decision `credit`: its wall seconds (`reroll_s`:
    the re-rollouts), the environment steps its re-rollouts took (`credit_env_steps`) and each
    game's (T,) credit per action (`credits`, games in order; empty under shared credit)."""

    rewards: list[list[float]]
    loss: list[float]
    logp_before: list[float]
    logp_after: list[float]
    advantages: list[float]
    decisions: int
    prompt_tokens: int = 0
    rollout_s: float = 0.0
    update_s: float = 0.0
    games: list[LLMPlayed] = field(default_factory=list)
    reroll_s: float = 0.0
    credit_env_steps: int = 0
    credits: list[np.ndarray] = field(default_factory=list)


def grpo_iteration(
    model: PeftModel,
    tokenizer,
    optimiser: torch.optim.Optimizer,
    tasks: Sequence[Task],
    group: int,
    config: SimConfig,
    seed: int = 0,
    epochs: int = 1,
    mode: str = "learned",
    clip: float = CLIP,
    kl_coef: float = 0.0,
    max_agents: int = 8,
    reward: Callable[[Episode], float] = task_reward,
    choose: Chooser | None = None,
    credit: Callable[[LLMPlayed], tuple[np.ndarray, int]] | None = None,
    make_env: EnvFactory = SwarmEnv,
) -> IterationStats:
    """One GRPO iteration: `group` episodes of every task (seeds seed + k·group + i), scored by
    `reward` (default `task_reward`), `epochs` steps of `optimiser` on the clipped loss (with a k3
    KL to the adapter-off model where `kl_coef` > 0). Credit: without `credit`, shared (every
    decision of an episode gets its group-relative advantage, `group_advantages`); with it,
    per-decision credit replaces the outcome: `credit(game)` gives the played game's (T,) credit
    c_t per action, w_success Δ of its block (the recipe's `outcome_credit` on `LLMPlayer`
    re-rollouts), and the environment steps it took; `reward` must then leave the outcome out, and
    decision d gets `baselined_advantages`' (f_i - mean_g f + c_{t(d)}) / σ.
    The model is in eval mode while it plays (no dropout) and scored the same way when updated.
    `choose` picks the actions elsewhere (`server_chooser`: a vLLM server holding the same
    adapter); the update then computes the chosen actions' old log-probabilities on the local model.
    `make_env` makes each episode's environment (`play_script`).
    Raises ValueError for a group below 2 (no group-relative signal)."""
    if group < 2:
        raise ValueError("group must be at least 2")
    model.eval()
    started = time.perf_counter()
    rewards: list[list[float]] = []
    played: list[LLMPlayed] = []
    for k, task in enumerate(tasks):
        seeds = [seed + k * group + i for i in range(group)]
        games = [play_llm(model, tokenizer, task, s, config, mode, max_agents, choose, make_env) for s in seeds]
        played.extend(games)
        rewards.append([reward(g.episode) for g in games])
    rolled = time.perf_counter()
    credits, credit_steps = [], 0
    if credit is None:
        shared = np.concatenate([group_advantages(r) for r in rewards])
        per_game = [np.full(len(g.decisions), a) for g, a in zip(played, shared, strict=True)]
    else:
        for game in played:
            found, steps = credit(game)
            credits.append(found)
            credit_steps += steps
        chosen = [c[[d.step for d in g.decisions]] for g, c in zip(played, credits, strict=True)]
        per_game = baselined_advantages(rewards, chosen)
    decisions = [d for g in played for d in g.decisions]
    advantages = [float(a) for a in np.concatenate(per_game)] if per_game else []
    rerolled = time.perf_counter()
    with torch.no_grad():
        old = [
            d.logp if d.logp is not None else action_logprobs(model, d.prompt, d.candidates)[d.chosen]
            for d in decisions
        ]
    reference = None
    if kl_coef and decisions:
        with torch.no_grad(), model.disable_adapter():
            reference = [action_logprobs(model, d.prompt, d.candidates)[d.chosen] for d in decisions]
    losses = []
    for _ in range(epochs if decisions and any(advantages) else 0):
        new = [action_logprobs(model, d.prompt, d.candidates)[d.chosen] for d in decisions]
        loss = grpo_loss(new, old, advantages, clip, reference, kl_coef)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    with torch.no_grad():
        after = [float(action_logprobs(model, d.prompt, d.candidates)[d.chosen].sum()) for d in decisions]
    return IterationStats(
        rewards=rewards,
        loss=losses,
        logp_before=[float(lp.sum()) for lp in old],
        logp_after=after,
        advantages=advantages,
        decisions=len(decisions),
        prompt_tokens=sum(len(d.prompt) for d in decisions),
        rollout_s=rolled - started,
        update_s=time.perf_counter() - rerolled,
        games=played,
        reroll_s=rerolled - rolled,
        credit_env_steps=credit_steps,
        credits=credits,
    )


def update_direction(stats: IterationStats) -> dict[str, float]:
    """How the update moved the chosen actions' log-probabilities against their advantages:
    `gain` = mean over decisions of A_d Δ_d (Δ_d = logp_after - logp_before; the first-order
    change of the policy-gradient objective, > 0 for a step that ascends it), and the mean Δ of the
    decisions with A > 0 (`up`) and A < 0 (`down`): nan where there are none. Single decisions
    can move against their own sign (the same action in a similar state had the opposite
    advantage elsewhere; the parameters are shared), so the check is on these aggregates."""
    a = np.asarray(stats.advantages)
    delta = np.asarray(stats.logp_after) - np.asarray(stats.logp_before)
    return {
        "gain": float(np.mean(a * delta)) if a.size else float("nan"),
        "up": float(delta[a > 0].mean()) if (a > 0).any() else float("nan"),
        "down": float(delta[a < 0].mean()) if (a < 0).any() else float("nan"),
    }
