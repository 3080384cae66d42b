"""Training recipes: one readable script per workflow, e.g. `train_orchestrator`, with its config and app reporting."""
