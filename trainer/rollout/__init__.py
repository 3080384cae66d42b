"""Rollout backends (docs/architecture.md "Runtime"): re-rollouts of a trace under an intervention.

Each backend implements the `swarmscope.credit.Rollout` interface, so the estimators of
`swarmscope.credit` run on any of them:

- `sim`: SwarmSim episodes, re-simulated with exact common random numbers (`SimRollout`), and
  a closed-form equivalent for episodes whose credit has a table of coalition values
  (`AggregateRollout`, the credit benchmark's fast path).
- `openai`: LLM traces re-generated through an OpenAI-compatible endpoint (`OpenAIRollout`, and
  `OpenAIVerifierRollout` scored by a verifier prompt), over the client of `chat`; what a rollout
  sends is planned by `llm_plan` (also the cost estimate's plan) and the trace is read by `llm_trace`
  (speakers, the orchestrator, final answers, exact match).
"""
