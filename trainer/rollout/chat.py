"""An OpenAI-compatible chat-completions client over the standard library's `http.client` (any
server that speaks `/v1/chat/completions`, e.g. `vllm serve`), and the judge client factory of
settings' SWARMSCOPE_JUDGE_CLIENT.

Configuration from the environment (`ChatClient.from_env`): SWARMSCOPE_OPENAI_BASE_URL,
SWARMSCOPE_OPENAI_API_KEY, SWARMSCOPE_OPENAI_MODEL, SWARMSCOPE_OPENAI_TEMPERATURE (1.0),
_MAX_TOKENS (512, an agent's turn), _CHOICE_MAX_TOKENS (16, a speaker pick), _VERDICT_MAX_TOKENS
(32, a verdict), _TIMEOUT_S (120), _ATTEMPTS (3: tries of a request on HTTP 429, 5xx, a timeout
or a dropped connection), _RETRY_BASE_S (1.0: the wait before try k + 1 is base · 2^(k - 1)),
_MAX_IN_FLIGHT (4: concurrent requests of one rollout step) and _MAX_MODEL_LEN (the context
length to check prompts against where the server does not report one in `/v1/models`).

Connections are kept alive and reused (a pool, one connection per request in flight). The server
is asked once what it is (`server()`: `/v1/models`, vLLM's `/version`): on vLLM, constrained
answers (`chat(..., choices=[...])`) are sent as `structured_outputs: {"choice": [...]}` (vLLM
0.11 on; `guided_choice` before), elsewhere not at all (the caller parses the free answer).
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

#: HTTP statuses retried with backoff (rate limited, server errors).
RETRIED_STATUSES = (429, 500, 502, 503, 504)
#: Seconds the one-off `/v1/models` and `/version` look-ups may take.
INFO_TIMEOUT_S = 10.0


class OpenAIError(RuntimeError):
    """A request to the OpenAI-compatible endpoint failed; the message names the cause."""


class VerdictError(OpenAIError):
    """The verifier answered something other than the strict verdict; the message holds the answer."""


class PromptTooLongError(OpenAIError, ValueError):
    """A prompt does not fit the model's context; the message names the agent and turn."""


@dataclass
class Usage:
    """Token usage as the server reports it (`usage` of each answer), summed: `requests` answered,
    `prompt_tokens`, `completion_tokens`, `cached_tokens` (prompt tokens served from the prefix
    cache, `usage.prompt_tokens_details.cached_tokens`, where reported), `length_cut` (completions
    cut at max_tokens: finish_reason "length") and `retries` (tries after a failed one)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    length_cut: int = 0
    retries: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

    def minus(self, other: Usage) -> Usage:
        """The usage since snapshot `other` (a `copy` of this one taken earlier)."""
        return Usage(**{k: v - getattr(other, k) for k, v in self.__dict__.items()})

    def copy(self) -> Usage:
        return Usage(**self.__dict__)


@dataclass(frozen=True)
class ServerInfo:
    """What the server says it is: `vllm` (its `/v1/models` entry is `owned_by: "vllm"`),
    `version` (vLLM's `/version`, "" where unknown) and `max_model_len` (tokens; None where unknown)."""

    vllm: bool = False
    version: str = ""
    max_model_len: int | None = None

    @property
    def choice_parameter(self) -> str | None:
        """The request parameter of constrained choices: `structured_outputs` (vLLM >= 0.11),
        `guided_choice` (older vLLM), None off vLLM."""
        if not self.vllm:
            return None
        try:
            major, minor = (int(x) for x in self.version.split(".")[:2])
        except ValueError:
            return "structured_outputs"
        return "structured_outputs" if (major, minor) >= (0, 11) else "guided_choice"


@dataclass
class ChatClient:
    """A minimal OpenAI-compatible chat-completions client (module docstring). `max_in_flight` 1
    (the default here; `from_env` reads 4) sends a rollout's requests one after another."""

    base_url: str
    model: str
    api_key: str = ""
    temperature: float = 1.0
    max_tokens: int = 512
    timeout_s: float = 120.0
    choice_max_tokens: int = 16
    verdict_max_tokens: int = 32
    attempts: int = 3
    retry_base_s: float = 1.0
    max_in_flight: int = 1
    max_model_len: int | None = None
    requests: int = field(default=0, compare=False)
    usage: Usage = field(default_factory=Usage, compare=False, repr=False)
    _lock: Any = field(default_factory=threading.Lock, compare=False, repr=False)
    _pool: list[http.client.HTTPConnection] = field(default_factory=list, compare=False, repr=False)
    _server: ServerInfo | None = field(default=None, compare=False, repr=False)

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
        max_model_len = env.get("SWARMSCOPE_OPENAI_MAX_MODEL_LEN", "")
        options: dict[str, Any] = {
            "api_key": env.get("SWARMSCOPE_OPENAI_API_KEY", ""),
            "temperature": float(env.get("SWARMSCOPE_OPENAI_TEMPERATURE", 1.0)),
            "max_tokens": int(env.get("SWARMSCOPE_OPENAI_MAX_TOKENS", 512)),
            "timeout_s": float(env.get("SWARMSCOPE_OPENAI_TIMEOUT_S", 120)),
            "choice_max_tokens": int(env.get("SWARMSCOPE_OPENAI_CHOICE_MAX_TOKENS", 16)),
            "verdict_max_tokens": int(env.get("SWARMSCOPE_OPENAI_VERDICT_MAX_TOKENS", 32)),
            "attempts": max(1, int(env.get("SWARMSCOPE_OPENAI_ATTEMPTS", 3))),
            "retry_base_s": float(env.get("SWARMSCOPE_OPENAI_RETRY_BASE_S", 1.0)),
            "max_in_flight": max(1, int(env.get("SWARMSCOPE_OPENAI_MAX_IN_FLIGHT", 4))),
            "max_model_len": int(max_model_len) if max_model_len else None,
        }
        options.update(overrides)
        return cls(base_url.rstrip("/"), model, **options)

    # --- transport ---------------------------------------------------------------------------

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """A pooled keep-alive connection (and True), else a new one (and False)."""
        with self._lock:
            if self._pool:
                connection = self._pool.pop()
                connection.timeout = timeout
                if connection.sock is not None:
                    connection.sock.settimeout(timeout)
                return connection, True
        parts = urllib.parse.urlsplit(self.base_url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        return kind(parts.hostname or "localhost", parts.port, timeout=timeout), False

    def _exchange(self, method: str, url: str, body: bytes | None, timeout: float) -> tuple[int, bytes]:
        """One HTTP exchange over a pooled connection; a reused connection the server has closed
        meanwhile is replaced once. Raises OSError / http.client.HTTPException."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        path = urllib.parse.urlsplit(url)
        target = path.path + (f"?{path.query}" if path.query else "")
        while True:
            connection, reused = self._connection(timeout)
            try:
                connection.request(method, target, body=body, headers=headers)
                response = connection.getresponse()
                raw = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()
                if reused:
                    continue
                raise
            except BaseException:
                connection.close()
                raise
            if response.will_close:
                connection.close()
            else:
                with self._lock:
                    self._pool.append(connection)
            return response.status, raw

    def _request(self, method: str, url: str, body: dict[str, Any] | None, attempts: int, timeout: float) -> bytes:
        """The body of a 2xx answer, tried up to `attempts` times with exponential backoff on HTTP
        429 / 5xx, timeouts and dropped connections. Raises OpenAIError naming the URL, the cause
        and the tries; other HTTP errors at once."""
        data = json.dumps(body).encode() if body is not None else None
        cause, detail = "", ""
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                with self._lock:
                    self.usage.retries += 1
                time.sleep(self.retry_base_s * 2 ** (attempt - 2))
            try:
                status, raw = self._exchange(method, url, data, timeout)
            except TimeoutError:
                cause, detail = f"timed out after {timeout:g}s", ""
                continue
            except (OSError, http.client.HTTPException) as exc:
                cause, detail = "is unreachable", f": {exc or type(exc).__name__}"
                continue
            if 200 <= status < 300:
                return raw
            cause, detail = f"answered HTTP {status}", ": " + raw[:300].decode("utf-8", "replace")
            if status not in RETRIED_STATUSES:
                raise OpenAIError(f"OpenAI endpoint {url} {cause}{detail}")
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        raise OpenAIError(f"OpenAI endpoint {url} {cause}{tries}{detail}")

    def server(self) -> ServerInfo:
        """What the server is (`ServerInfo`), asked once (`/v1/models`, then vLLM's `/version`);
        an unreachable or non-answering server is an unknown one (no vLLM, no context length, or
        the configured `max_model_len`)."""
        if self._server is not None:
            return self._server
        info = ServerInfo(max_model_len=self.max_model_len)
        try:
            document = json.loads(self._request("GET", f"{self.base_url}/models", None, 1, INFO_TIMEOUT_S))
            models = [m for m in document.get("data", []) if isinstance(m, dict)]
            entry = next((m for m in models if m.get("id") == self.model), models[0] if models else {})
            vllm = entry.get("owned_by") == "vllm"
            length = entry.get("max_model_len")
            version = ""
            if vllm:
                root = self.base_url.removesuffix("/v1")
                try:
                    version = str(
                        json.loads(self._request("GET", f"{root}/version", None, 1, INFO_TIMEOUT_S))["version"]
                    )
                except (OpenAIError, ValueError, KeyError, TypeError):
                    version = ""
            info = ServerInfo(
                vllm, version, self.max_model_len or (length if isinstance(length, int) and length > 0 else None)
            )
        except (OpenAIError, ValueError, AttributeError, TypeError):
            pass
        self._server = info
        return info

    def count_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """The prompt tokens of `messages` as the server's own tokenizer and chat template count them
        (vLLM's `POST /tokenize`), None off vLLM or where the server does not answer."""
        if not self.server().vllm:
            return None
        root = self.base_url.removesuffix("/v1")
        body = {"model": self.model, "messages": messages}
        try:
            count = json.loads(self._request("POST", f"{root}/tokenize", body, 1, INFO_TIMEOUT_S)).get("count")
        except (OpenAIError, ValueError, AttributeError):
            return None
        return count if isinstance(count, int) and count >= 0 else None

    # --- chat --------------------------------------------------------------------------------

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        seed: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        choices: list[str] | None = None,
    ) -> list[str]:
        """The `n` completions of `messages` (one request, tried up to `attempts` times), at most
        `max_tokens` tokens each (None: `self.max_tokens`); with `choices`, constrained to one of
        them on vLLM (module docstring), unconstrained elsewhere. Adds the server's usage to
        `usage`. Raises OpenAIError naming the cause."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "n": n,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }
        if seed is not None:
            body["seed"] = int(seed)
        if choices:
            parameter = self.server().choice_parameter
            if parameter == "structured_outputs":
                body["structured_outputs"] = {"choice": list(choices)}
            elif parameter:
                body[parameter] = list(choices)
        url = f"{self.base_url}/chat/completions"
        with self._lock:
            self.requests += 1
        raw = self._request("POST", url, body, max(1, self.attempts), self.timeout_s)
        try:
            document = json.loads(raw)
        except ValueError as exc:
            raise OpenAIError(f"OpenAI endpoint {url} answered malformed JSON: {raw[:200]!r}") from exc
        try:
            answers = sorted(document["choices"], key=lambda c: c.get("index", 0))
            texts = [choice["message"]["content"] or "" for choice in answers]
        except (KeyError, TypeError, AttributeError) as exc:
            raise OpenAIError(
                f"OpenAI endpoint {url} answered JSON without choices[].message.content: {raw[:200]!r}"
            ) from exc
        if len(texts) != n or not all(isinstance(t, str) for t in texts):
            raise OpenAIError(f"OpenAI endpoint {url} answered {len(texts)} choices for n={n}")
        self._count(document, answers)
        return texts

    def _count(self, document: dict[str, Any], answers: list[dict[str, Any]]) -> None:
        raw_usage = document.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        raw_details = usage.get("prompt_tokens_details")
        details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}

        def number(value: Any) -> int:
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        with self._lock:
            self.usage.requests += 1
            self.usage.prompt_tokens += number(usage.get("prompt_tokens"))
            self.usage.completion_tokens += number(usage.get("completion_tokens"))
            self.usage.cached_tokens += number(details.get("cached_tokens"))
            self.usage.length_cut += sum(a.get("finish_reason") == "length" for a in answers)

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One completion at temperature 0 (the judge's `complete`)."""
        return self.chat(messages, n=1, temperature=0.0)[0]


def judge_client(base_url: str | None = None, model: str | None = None) -> ChatClient:
    """The client of `swarmscope.judge` (SWARMSCOPE_JUDGE_CLIENT): `ChatClient.from_env`."""
    return ChatClient.from_env(base_url, model)
