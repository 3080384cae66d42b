"""The pieces of the orchestrator training recipe (`trainer.recipes.train_orchestrator`), each small
and tested on tiny inputs: `rewards`, `stop` (the stop regrets and the stop heads' targets), `credit`
(per-decision credit by re-rollouts, the attribution panel with its removal-effect free riders),
`losses` (GAE, the PPO update)."""
