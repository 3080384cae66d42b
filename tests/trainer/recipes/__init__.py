"""Tests of trainer.recipes' modules besides the recipe itself: config, report, app reporting."""
