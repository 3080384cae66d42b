"""Policy `llm` on the real model: one GRPO iteration of SmolLM2-135M-Instruct (built from the
package by trainer/llm_server.py) on a SwarmSim task, the LoRA update moving the chosen actions'
log-probabilities with their advantages. Runs in CI's live_llm stage, where the model is built;
skips without it (and fails there, SWARMSCOPE_REQUIRE_LLM=1)."""

import pytest
import torch

from trainer.llm_policy.model import LoraSettings, load
from trainer.llm_policy.play import grpo_iteration, update_direction
from trainer.llm_server import MODEL_DIR, model_built
from trainer.sim.env import SimConfig
from trainer.sim.tasks import generate_task


@pytest.mark.live_llm
def test_one_grpo_iteration_of_smollm2_moves_its_actions_with_their_advantages():
    if not model_built():
        pytest.skip(f"SmolLM2 is not built in {MODEL_DIR} (python trainer/llm_server.py install build-model)")
    torch.manual_seed(0)
    # One intra-op thread: beside the vLLM server and a second pytest worker, two threads per process
    # oversubscribe the 2 cores (2.6x slower a decision here, bench/RESULTS.md "Issue 31").
    torch.set_num_threads(1)
    model, tokenizer = load(MODEL_DIR, LoraSettings(rank=8, alpha=16, layers=2))
    optimiser = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    # Two episodes of a two-subtask task, 5 decisions at most, scored by the task reward (its finish
    # and critical-steps terms tell episodes apart even where neither answers); a task whose two
    # episodes tie gives no advantage and no update, so the next task is played (3 at most).
    for k in range(3):
        stats = grpo_iteration(model, tokenizer, optimiser, [generate_task("tiny", k)], 2, SimConfig(max_steps=5))
        if any(stats.advantages):
            break
    assert stats.decisions > 0 and any(stats.advantages), stats.rewards
    assert len(stats.loss) == 1
    moved = update_direction(stats)
    assert moved["gain"] > 0 and moved["up"] > moved["down"], moved
