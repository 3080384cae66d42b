"""Policy `llm` on the real model and the real server: one GRPO iteration of SmolLM2-135M-Instruct
(built from the package by trainer/llm_server.py) on a SwarmSim task, its actions sampled by the
vLLM server (trie-constrained, `allowed_token_ids`) with the LoRA adapter loaded there, the update
moving the chosen actions' log-probabilities with their advantages, and the updated adapter
reloaded on the server. Runs in CI's live_llm stage, where the model is built and served; skips
without them (and fails there, SWARMSCOPE_REQUIRE_LLM=1)."""

import os

import openai
import pytest
import torch

from trainer.llm_policy.constrained import action_logprobs
from trainer.llm_policy.model import LoraSettings, load
from trainer.llm_policy.play import grpo_iteration, server_chooser, update_direction
from trainer.llm_policy.server import ServerPolicy
from trainer.llm_server import MODEL_DIR, model_built
from trainer.sim.env import SimConfig
from trainer.sim.tasks import generate_task

#: Seeded server samples of one decision per adapter (uniforms (i + 0.5) / SAMPLES).
SAMPLES = 16


def local_probs(model, prompt, candidates) -> list[float]:
    with torch.no_grad():
        return [float(lp.sum().exp()) for lp in action_logprobs(model, prompt, candidates)]


@pytest.mark.live_llm
def test_an_iteration_played_on_the_vllm_server_updates_the_adapter_and_the_server_serves_it(llm_endpoint, tmp_path):
    if not model_built():
        pytest.skip(f"SmolLM2 is not built in {MODEL_DIR} (python trainer/llm_server.py install build-model)")
    base_url, name = llm_endpoint
    torch.manual_seed(0)
    # One intra-op thread: beside the vLLM server and a second pytest worker, two threads per process
    # oversubscribe the 2 cores (2.6x slower a decision here, bench/RESULTS.md "Issue 31").
    torch.set_num_threads(1)
    model, tokenizer = load(MODEL_DIR, LoraSettings(rank=8, alpha=16, layers=2))
    server = ServerPolicy(base_url, name)
    tag = f"live-{os.getpid()}"
    server.publish(model, tmp_path / "0", f"{tag}-0")
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    # Three episodes of a two-subtask task, 5 decisions at most, scored by the task reward (its finish
    # and critical-steps terms tell episodes apart even where none answers); a task whose episodes
    # tie gives no advantage and no update, so the next task or seeds are played (8 tries at most:
    # playing on the server is cheap, the update is what costs).
    for k in range(8):
        stats = grpo_iteration(
            model,
            tokenizer,
            optimiser,
            [generate_task("tiny", k % 4)],
            3,
            SimConfig(max_steps=5),
            seed=10 * k,
            choose=server_chooser(server),
        )
        if any(stats.advantages):
            break
    assert stats.decisions > 0 and any(stats.advantages), stats.rewards
    assert server.requests >= stats.decisions, "every decision with a choice was sampled on the server"
    assert all(d.logp is None for g in stats.games for d in g.decisions)
    assert len(stats.loss) == 1
    moved = update_direction(stats)
    assert moved["gain"] > 0 and moved["up"] > moved["down"], moved

    server.publish(model, tmp_path / "1", f"{tag}-1")
    listed = {m.id for m in openai.OpenAI(base_url=base_url, api_key="EMPTY").models.list().data}
    assert f"{tag}-1" in listed and f"{tag}-0" not in listed, listed

    # The adapter reaches the server: push the decision's least likely action hard on the local
    # model, reload, and the server's samples follow (before: rarely; after: nearly always).
    decision = stats.games[0].decisions[0]
    prompt, candidates = decision.prompt, decision.candidates
    before = local_probs(model, prompt, candidates)
    target = min(range(len(candidates)), key=before.__getitem__)
    assert before[target] < 0.2, before
    push = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=5e-3)
    for _ in range(60):
        loss = -action_logprobs(model, prompt, candidates)[target].sum()
        push.zero_grad()
        loss.backward()
        push.step()
        if local_probs(model, prompt, candidates)[target] > 0.95:
            break
    assert local_probs(model, prompt, candidates)[target] > 0.95

    def picks() -> int:
        return sum(server.choose(prompt, candidates, (i + 0.5) / SAMPLES) == target for i in range(SAMPLES))

    old = picks()
    server.publish(model, tmp_path / "2", f"{tag}-2")
    new = picks()
    assert old <= SAMPLES // 2 and new >= SAMPLES - 3, (old, new, before)
