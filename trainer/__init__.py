"""The torch side of Swarmscope (no Django): SwarmSim, policies, rollouts, recipes, and the SDK."""
