"""Training recipes: one readable script per workflow (STYLE.md 9), e.g. `train_orchestrator`."""
