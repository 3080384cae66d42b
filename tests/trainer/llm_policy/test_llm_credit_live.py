"""Policy `llm`'s counterfactual credit on the real model and the real server (issue 31 item 3): one
iteration of the recipe (trainer.recipes.train_llm_orchestrator.LLMLearner) with SmolLM2-135M-Instruct,
its episodes and their re-rollouts sampled by the vLLM server with the adapter loaded there, the
outcome replaced by each block's exact counterfactual credit, and the update moving the chosen
actions' log-probabilities with their advantages. Runs in CI's live_llm stage; skips without the
server (fails there, SWARMSCOPE_REQUIRE_LLM=1) or the built model."""

import pytest
import torch

from trainer.llm_server import MODEL_DIR, model_built
from trainer.recipes.config import LLM_DEFAULTS, RunConfig
from trainer.recipes.train_llm_orchestrator import LLMLearner


@pytest.mark.live_llm
@pytest.mark.timeout(900)  # an iteration is ~3 min at load 6-9 (bench/RESULTS.md, issue 31 counterfactual credit)
def test_an_iteration_with_re_rollouts_on_the_server_moves_the_actions_with_their_credit(llm_endpoint, monkeypatch):
    if not model_built():
        pytest.skip(f"SmolLM2 is not built in {MODEL_DIR} (python trainer/llm_server.py install build-model)")
    base_url, name = llm_endpoint
    monkeypatch.setenv("SWARMSCOPE_OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("SWARMSCOPE_OPENAI_MODEL", name)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # beside the server on 2 cores (test_llm_policy_live.py)
    config = RunConfig.from_dict(
        {
            **LLM_DEFAULTS,
            "policy": "llm",
            "llm_rollouts": "server",
            "credit": "counterfactual_baseline_exact",
            "level": "tiny",
            "max_steps": 4,
            "lora_layers": 2,
            "episodes_per_iteration": 2,
            "group_size": 2,
            "credit_blocks": 2,
            "credit_samples": 2,
        }
    )
    learner = LLMLearner(config)
    try:
        # An iteration whose advantages are all 0 (no redraw changed E[R], the costs tied) updates
        # nothing; the next one is played (2 at most: the update is what costs).
        for iteration in range(2):
            report, steps = learner.step(iteration, 0)
            llm = report["metrics"]["llm"]
            if llm["up"] is not None or llm["down"] is not None:
                break
    finally:
        learner.close()
    metrics = report["metrics"]
    assert llm["reroll_decisions"] > 0 and metrics["credit_env_steps"] > 0
    assert steps > metrics["credit_env_steps"]  # the episodes' steps and their re-rollouts'
    # every decision of the episodes and of their re-rollouts was sampled on the server
    assert llm["server_requests"] >= llm["decisions"] + llm["reroll_decisions"]
    assert llm["up"] is not None or llm["down"] is not None, "no advantage in 2 iterations"
    assert llm["gain"] > 0, llm
