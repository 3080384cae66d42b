"""Tests of trainer.rl, the recipe's pieces, on tiny arrays, tensors and episodes."""
