"""SwarmSim: a CPU swarm environment whose counterfactuals have a known answer.

A Dynamic Dec-POMDP (survey arXiv 2605.02801, §3): an orchestrator spawns sub-agents with roles
and skills, delegates the subtasks of a task DAG to them, routes messages and aggregates; every
episode is an orchestration trace in the `swarmscope.model` form. numpy and the standard library
only (no torch, no Django). Modules, inward first:

- `rng`: counter-based randomness (common random numbers across interventions);
- `tasks`: task DAGs by level, fixed-seed test sets;
- `actions`, `effects`: orchestrator actions; planted message effects, free-riders, pseudo-parallel spawns;
- `rewards`: the survey's reward families, from a trace;
- `env`: the environment (`SwarmEnv`, `simulate`) and its closed-form E[R];
- `policy`: policies, baselines, `BatchedSwarmEnv`;
- `interventions`: remove / mask / resample / replace a message, remove an agent, re-simulation;
- `exact`: exact E[R] by enumeration, coalition values, exact Shapley values;
- `suites`: pivot-12, the long-trace level, the Kimi-scale envelope;
- `games`: the estimator benchmark's game families (higher-order synergy, redundancy, noisy
  subtasks, a coupling knob rho), each game with its exact values;
- `stream`: the CLI that streams episodes into a running app.
"""
