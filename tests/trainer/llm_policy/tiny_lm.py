"""A language model the size of nothing for the `llm` policy's tests: a byte-level BPE tokenizer
trained here on the policy's own prompt vocabulary, with a ChatML template, and a random 2-layer
Llama over it. It answers noise; the tests that use it check mechanics (legal actions, common
random numbers, the direction of an update), never what a model says."""

from __future__ import annotations

import torch
from tokenizers import ByteLevelBPETokenizer
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from trainer.llm_policy.text_state import SYSTEM_PROMPT

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    SYSTEM_PROMPT,
    "Task subtasks difficulty easy hard open delegated answered needs Team nobody yet solver expert verifier",
    "Answer given not given Budget spent of actions Your action",
    "spawn(solver) spawn(expert) spawn(verifier) delegate(0, solver_1) message(solver_1) aggregate() stop()",
]


def tiny_llama(vocab_size: int, layers: int = 2, seed: int = 0) -> LlamaForCausalLM:
    """A random Llama of `layers` layers, hidden size 32, over `vocab_size` tokens, in eval mode."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
    )
    return LlamaForCausalLM(config).eval()


def tiny_lm(seed: int = 0):
    """(model, tokenizer): a random 2-layer Llama (`tiny_llama`) over a ~400-token vocabulary."""
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=400, special_tokens=["<|im_start|>", "<|im_end|>", "<unk>"])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", unk_token="<unk>")
    tokenizer.chat_template = CHATML
    return tiny_llama(len(tokenizer), seed=seed), tokenizer
