"""Tests of SwarmSim (trainer/sim)."""
