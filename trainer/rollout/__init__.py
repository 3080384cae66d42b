"""Rollout backends (docs/architecture.md "Runtime"): re-rollouts of a trace under an intervention.

Each backend implements the `swarmscope.credit.Rollout` interface, so the estimators of
`swarmscope.credit` run on any of them:

- `sim`: SwarmSim episodes, re-simulated with exact common random numbers (`SimRollout`), and
  a closed-form equivalent for episodes whose credit has a table of coalition values
  (`AggregateRollout`, the credit benchmark's fast path).
"""
