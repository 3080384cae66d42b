"""An OpenAI-compatible chat-completions client over the standard library's HTTP (any server that
speaks `/v1/chat/completions`, e.g. `vllm serve`), and the judge client factory of settings'
SWARMSCOPE_JUDGE_CLIENT. Configuration from the environment: SWARMSCOPE_OPENAI_BASE_URL,
SWARMSCOPE_OPENAI_API_KEY, SWARMSCOPE_OPENAI_MODEL, and the sampling options of `ChatClient.from_env`.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any


class OpenAIError(RuntimeError):
    """A request to the OpenAI-compatible endpoint failed; the message names the cause."""


class VerdictError(OpenAIError):
    """The verifier answered something other than the strict verdict; the message holds the answer."""


@dataclass
class ChatClient:
    """A minimal OpenAI-compatible chat-completions client over urllib."""

    base_url: str
    model: str
    api_key: str = ""
    temperature: float = 1.0
    max_tokens: int = 512
    timeout_s: float = 120.0
    requests: int = field(default=0, compare=False)

    @classmethod
    def from_env(cls, base_url: str | None = None, model: str | None = None, **overrides: Any) -> ChatClient:
        """From SWARMSCOPE_OPENAI_* (arguments win). Raises ValueError when no base URL or model is set."""
        env = os.environ
        base_url = base_url or env.get("SWARMSCOPE_OPENAI_BASE_URL", "")
        model = model or env.get("SWARMSCOPE_OPENAI_MODEL", "")
        if not base_url:
            raise ValueError("SWARMSCOPE_OPENAI_BASE_URL is not set")
        if not model:
            raise ValueError("SWARMSCOPE_OPENAI_MODEL is not set")
        options: dict[str, Any] = {
            "api_key": env.get("SWARMSCOPE_OPENAI_API_KEY", ""),
            "temperature": float(env.get("SWARMSCOPE_OPENAI_TEMPERATURE", 1.0)),
            "max_tokens": int(env.get("SWARMSCOPE_OPENAI_MAX_TOKENS", 512)),
            "timeout_s": float(env.get("SWARMSCOPE_OPENAI_TIMEOUT_S", 120)),
        }
        options.update(overrides)
        return cls(base_url.rstrip("/"), model, **options)

    def chat(
        self, messages: list[dict[str, str]], *, n: int = 1, seed: int | None = None, temperature: float | None = None
    ) -> list[str]:
        """The `n` completions of `messages` (one request). Raises OpenAIError naming the cause."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "n": n,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }
        if seed is not None:
            body["seed"] = int(seed)
        url = f"{self.base_url}/chat/completions"
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise OpenAIError(f"OpenAI endpoint {url} answered HTTP {exc.code}: {detail}") from exc
        except TimeoutError as exc:
            raise OpenAIError(f"OpenAI endpoint {url} timed out after {self.timeout_s:g}s") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise OpenAIError(f"OpenAI endpoint {url} timed out after {self.timeout_s:g}s") from exc
            raise OpenAIError(f"OpenAI endpoint {url} is unreachable: {exc.reason}") from exc
        try:
            document = json.loads(raw)
        except ValueError as exc:
            raise OpenAIError(f"OpenAI endpoint {url} answered malformed JSON: {raw[:200]!r}") from exc
        try:
            choices = sorted(document["choices"], key=lambda c: c.get("index", 0))
            texts = [choice["message"]["content"] or "" for choice in choices]
        except (KeyError, TypeError, AttributeError) as exc:
            raise OpenAIError(
                f"OpenAI endpoint {url} answered JSON without choices[].message.content: {raw[:200]!r}"
            ) from exc
        if len(texts) != n or not all(isinstance(t, str) for t in texts):
            raise OpenAIError(f"OpenAI endpoint {url} answered {len(texts)} choices for n={n}")
        return texts

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One completion at temperature 0 (the judge's `complete`)."""
        return self.chat(messages, n=1, temperature=0.0)[0]


def judge_client(base_url: str | None = None, model: str | None = None) -> ChatClient:
    """The client of `swarmscope.judge` (SWARMSCOPE_JUDGE_CLIENT): `ChatClient.from_env`."""
    return ChatClient.from_env(base_url, model)
