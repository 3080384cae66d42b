"""The torch side of Swarmscope (no Django): SwarmSim, the orchestrator policy, RL parts, rollout backends, recipes."""
