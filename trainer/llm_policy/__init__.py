"""The `llm` orchestrator policy (issue 31): a causal language model with a LoRA adapter picks each
orchestrator action of SwarmSim from the state written as text, constrained to the legal actions,
and is updated by GRPO on the log-probabilities of its action tokens.

- `text_state`: the orchestration state as a prompt, and the legal moves as action strings;
- `constrained`: the log-probability of each legal action under trie-constrained decoding, and a
  sample from it with SwarmSim's counter-based draws;
- `grpo`: group-relative advantages and the clipped policy-gradient loss on action tokens;
- `model`: the model and its LoRA adapter (transformers + peft).
"""
