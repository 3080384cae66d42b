"""The pieces of the orchestrator training recipe (`trainer.recipes.train_orchestrator`), each small
and tested on tiny inputs: `rewards`, `stop` (hindsight and the stop heads' targets), `credit`
(per-decision credit by re-rollouts, the attribution panel), `losses` (GAE, the PPO update)."""
