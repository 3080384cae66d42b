"""The orchestrator model of policy `llm`: a causal language model from a local Hugging Face
folder (default: SmolLM2-135M-Instruct as trainer/llm_server.py builds it) with a LoRA adapter
(Hu et al. 2021; the `peft` package) on the attention projections of its top layers. The reference
model of the KL term is the same model with the adapter switched off (`peft`'s `disable_adapter`),
so no second copy is held.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

#: The attention projections of Llama-family models (SmolLM2 is one) the adapter is put on.
TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class LoraSettings:
    """`rank` r and `alpha` of the adapter (its update is scaled by alpha / r), on the top `layers`
    decoder layers (None: all). The issue's measurement: 11 s per update of 8 prompts with the top
    4 layers, 23 s with all, on 2 CPU cores."""

    rank: int = 8
    alpha: int = 16
    layers: int | None = 4


def with_adapter(model: PreTrainedModel, settings: LoraSettings = LoraSettings()) -> torch.nn.Module:
    """`model` wrapped with a fresh LoRA adapter (its B matrices zero: the wrapped model starts as
    the base model). Raises ValueError for a rank or layer count below 1."""
    if settings.rank < 1 or (settings.layers is not None and settings.layers < 1):
        raise ValueError("rank and layers must be at least 1")
    n = model.config.num_hidden_layers
    layers = None if settings.layers is None else list(range(max(0, n - settings.layers), n))
    config = LoraConfig(
        r=settings.rank,
        lora_alpha=settings.alpha,
        target_modules=list(TARGET_MODULES),
        layers_to_transform=layers,
        lora_dropout=0.0,
        bias="none",
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def load(path: str | Path, settings: LoraSettings = LoraSettings()):
    """(model with adapter, tokenizer) from the local folder `path` (no hub: `local_files_only`),
    in float32 on the CPU. Raises OSError where the folder holds no model."""
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    return with_adapter(model, settings), tokenizer
