"""An OpenAI-compatible chat-completions client (any server that speaks `/v1/chat/completions`,
e.g. `vllm serve`) over the `openai` package, and the judge client factory of settings'
SWARMSCOPE_JUDGE_CLIENT.

Configuration from the environment (`ChatClient.from_env`): SWARMSCOPE_OPENAI_BASE_URL,
SWARMSCOPE_OPENAI_API_KEY (none: "EMPTY", vLLM's placeholder), SWARMSCOPE_OPENAI_MODEL,
SWARMSCOPE_OPENAI_TEMPERATURE (1.0), _MAX_TOKENS (512, an agent's turn), _CHOICE_MAX_TOKENS (16, a
speaker pick), _VERDICT_MAX_TOKENS (32, a verdict), _TIMEOUT_S (120), _ATTEMPTS (3: tries of a
request; the package retries HTTP 408, 409, 429 and 5xx, timeouts and dropped connections),
_RETRY_BASE_S (1.0: the wait before try k + 1 is base · 2^(k - 1), or the server's Retry-After),
_MAX_IN_FLIGHT (4: concurrent requests of one rollout step) and _MAX_MODEL_LEN (the context length
to check prompts against where the server does not report one in `/v1/models`).

One `openai.OpenAI` per client, shared by the threads that send a rollout's requests concurrently
(its connection pool keeps connections alive). The server is asked once what it is (`server()`:
`/v1/models`, vLLM's `/version` at the root): on vLLM, constrained answers (`chat(...,
choices=[...])` or `structured={"regex": ...}` / `{"choice": [...]}` / `{"json": schema}`) are sent
in `extra_body` as `structured_outputs` (vLLM 0.11 on; `guided_regex` / `guided_choice` /
`guided_json` before), elsewhere not at all (the caller parses the free answer). Answers are read as
JSON here, not through the package's models, so a malformed one fails naming what it holds.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import openai

#: Seconds the one-off `/v1/models`, `/version` and `/tokenize` requests may take (tried once).
INFO_TIMEOUT_S = 10.0
#: The API key sent where none is configured (vLLM without --api-key accepts any).
NO_API_KEY = "EMPTY"


class OpenAIError(RuntimeError):
    """A request to the OpenAI-compatible endpoint failed; the message names the URL, the cause and the tries."""


class VerdictError(OpenAIError):
    """The verifier answered something other than the strict verdict; the message holds the answer."""


class PromptTooLongError(OpenAIError, ValueError):
    """A prompt does not fit the model's context; the message names the agent and turn."""


class Cancelled(OpenAIError):
    """The caller's `should_stop` said stop before a request (a job cancelled while it ran)."""


@dataclass
class Usage:
    """Token usage as the server reports it (`usage` of each answer), summed: `requests` answered,
    `prompt_tokens`, `completion_tokens`, `cached_tokens` (prompt tokens served from the prefix
    cache, `usage.prompt_tokens_details.cached_tokens`, where reported), `length_cut` (completions
    cut at max_tokens: finish_reason "length") and `retries` (HTTP attempts of a chat request after
    its first, answered or not)."""

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
        """The request parameter of constrained answers: `structured_outputs` (vLLM >= 0.11),
        `guided_choice` (older vLLM; `guided_regex`, `guided_json` alike), None off vLLM."""
        if not self.vllm:
            return None
        try:
            major, minor = (int(x) for x in self.version.split(".")[:2])
        except ValueError:
            return "structured_outputs"
        return "structured_outputs" if (major, minor) >= (0, 11) else "guided_choice"

    def structured_body(self, structured: dict[str, Any] | None) -> dict[str, Any]:
        """The request's extra body that constrains the answer to `structured` (one of `choice`: a
        list of strings, `regex`: a pattern the whole answer matches, `json`: a JSON schema): on
        vLLM >= 0.11 `{"structured_outputs": structured}`, on older vLLM `{"guided_<key>": value}`,
        off vLLM {} (nothing is sent; the caller parses the free answer)."""
        parameter = self.choice_parameter
        if not structured or parameter is None:
            return {}
        if parameter == "structured_outputs":
            return {"structured_outputs": dict(structured)}
        return {f"guided_{key}": value for key, value in structured.items()}


class _OpenAI(openai.OpenAI):
    """`openai.OpenAI` whose retries wait `retry_base_s` · 2^(k - 1) before try k + 1 (the
    package's own waits are 0.5 s · 2^(k - 1), jittered); a server's Retry-After still wins."""

    retry_base_s: float = 1.0

    def _calculate_retry_timeout(self, remaining_retries: int, options: Any, response_headers: Any = None) -> float:
        if response_headers is not None and any(h in response_headers for h in ("retry-after", "retry-after-ms")):
            return super()._calculate_retry_timeout(remaining_retries, options, response_headers)
        retries_taken = options.get_max_retries(self.max_retries) - remaining_retries
        return float(self.retry_base_s * 2.0 ** max(0, retries_taken))


@dataclass
class ChatClient:
    """A minimal OpenAI-compatible chat-completions client (module docstring). `max_in_flight` 1
    (the default here; `from_env` reads 4) sends a rollout's requests one after another. Safe to
    share between threads."""

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
    #: Asked before every chat request; True raises `Cancelled` (a worker's check that its job is still active).
    should_stop: Callable[[], bool] | None = field(default=None, compare=False, repr=False)
    requests: int = field(default=0, compare=False)
    usage: Usage = field(default_factory=Usage, compare=False, repr=False)
    _lock: Any = field(default_factory=threading.Lock, compare=False, repr=False)
    _tries: threading.local = field(default_factory=threading.local, compare=False, repr=False)
    _openai: _OpenAI | None = field(default=None, compare=False, repr=False)
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

    def _client(self) -> _OpenAI:
        """The shared `openai.OpenAI`, made on first use: this client's key, base URL, timeout and
        retries (attempts - 1), over an HTTP client whose request hook counts this thread's tries."""
        with self._lock:
            if self._openai is None:
                client = _OpenAI(
                    api_key=self.api_key or NO_API_KEY,
                    base_url=self.base_url,
                    timeout=self.timeout_s,
                    max_retries=max(1, self.attempts) - 1,
                    http_client=openai.DefaultHttpxClient(event_hooks={"request": [self._count_try]}),
                )
                client.retry_base_s = self.retry_base_s
                self._openai = client
            return self._openai

    def _count_try(self, request: Any) -> None:
        """The HTTP client's request hook: one more try of this thread's request (run in the thread that sends)."""
        self._tries.count = getattr(self._tries, "count", 0) + 1

    def _failure(self, url: str, exc: openai.APIError, timeout: float, tries: int) -> OpenAIError:
        """Our error for the package's `exc`, naming the URL, the cause and the tries."""
        detail = ""
        if isinstance(exc, openai.APITimeoutError):
            cause = f"timed out after {timeout:g}s"
        elif isinstance(exc, openai.APIStatusError):
            cause = f"answered HTTP {exc.status_code}"
            detail = ": " + exc.response.content[:300].decode("utf-8", "replace")
        else:
            reason = exc.__cause__ or exc
            cause, detail = "is unreachable", f": {str(reason) or type(reason).__name__}"
        after = f" (after {tries} attempts)" if tries > 1 else ""
        return OpenAIError(f"OpenAI endpoint {url} {cause}{after}{detail}")

    def _info(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        """The JSON of a one-off GET or POST to `url` (absolute, or relative to the base URL), tried
        once within INFO_TIMEOUT_S. Raises OpenAIError; ValueError for a body that is not JSON."""
        client = self._client()
        options: Any = {"max_retries": 0, "timeout": INFO_TIMEOUT_S}
        try:
            if method == "GET":
                raw = client.get(url, cast_to=bytes, options=options)
            else:
                raw = client.post(url, cast_to=bytes, body=body, options=options)
        except openai.APIError as exc:
            raise self._failure(url, exc, INFO_TIMEOUT_S, 1) from exc
        return json.loads(raw)

    def server(self) -> ServerInfo:
        """What the server is (`ServerInfo`), asked once (`/v1/models`, then vLLM's `/version`);
        an unreachable or non-answering server is an unknown one (no vLLM, no context length, or
        the configured `max_model_len`)."""
        if self._server is not None:
            return self._server
        info = ServerInfo(max_model_len=self.max_model_len)
        try:
            document = self._info("GET", "/models")
            models = [m for m in document.get("data", []) if isinstance(m, dict)]
            entry = next((m for m in models if m.get("id") == self.model), models[0] if models else {})
            vllm = entry.get("owned_by") == "vllm"
            length = entry.get("max_model_len")
            version = ""
            if vllm:
                try:
                    version = str(self._info("GET", f"{self._root()}/version")["version"])
                except (OpenAIError, ValueError, KeyError, TypeError):
                    version = ""
            info = ServerInfo(
                vllm, version, self.max_model_len or (length if isinstance(length, int) and length > 0 else None)
            )
        except (OpenAIError, ValueError, AttributeError, TypeError):
            pass
        self._server = info
        return info

    def _root(self) -> str:
        """The server's root URL (vLLM's `/version` and `/tokenize` are not under `/v1`)."""
        return self.base_url.removesuffix("/v1")

    def count_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """The prompt tokens of `messages` as the server's own tokenizer and chat template count them
        (vLLM's `POST /tokenize`), None off vLLM or where the server does not answer."""
        if not self.server().vllm:
            return None
        try:
            document = self._info("POST", f"{self._root()}/tokenize", {"model": self.model, "messages": messages})
            count = document.get("count")
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
        structured: dict[str, Any] | None = None,
    ) -> list[str]:
        """The `n` completions of `messages` (one request, tried up to `attempts` times), at most
        `max_tokens` tokens each (None: `self.max_tokens`); with `choices` (short for `structured=
        {"choice": choices}`) or `structured`, constrained on vLLM (module docstring), unconstrained
        elsewhere. Adds the server's usage to `usage`. Raises OpenAIError naming the cause, `Cancelled`
        without sending when `should_stop()` is true."""
        if self.should_stop is not None and self.should_stop():
            raise Cancelled(f"stopped before a request to {self.base_url}: the job is no longer active")
        if choices:
            structured = {"choice": list(choices)}
        extra = self.server().structured_body(structured) if structured else {}
        params: dict[str, Any] = {
            "model": self.model,
            "messages": cast(Any, messages),
            "n": n,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }
        if seed is not None:
            params["seed"] = int(seed)
        if extra:
            params["extra_body"] = extra
        url = f"{self.base_url}/chat/completions"
        client = self._client()
        with self._lock:
            self.requests += 1
        self._tries.count = 0
        try:
            raw = client.chat.completions.with_raw_response.create(**params).content
        except openai.APIError as exc:
            raise self._failure(url, exc, self.timeout_s, self._tries.count) from exc
        finally:
            with self._lock:
                self.usage.retries += max(0, self._tries.count - 1)
        return self._answers(url, raw, n)

    def _answers(self, url: str, raw: bytes, n: int) -> list[str]:
        """The `n` texts of a chat-completions answer, in choice order; its usage counted. Raises OpenAIError."""
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

    def complete(self, messages: list[dict[str, str]], *, structured: dict[str, Any] | None = None) -> str:
        """One completion at temperature 0, at most `max_tokens` tokens (the judge's `complete`,
        `swarmscope.judge.Complete`); `structured` constrains it on vLLM (`chat`)."""
        return self.chat(messages, n=1, temperature=0.0, structured=structured)[0]


def judge_client(base_url: str | None = None, model: str | None = None) -> ChatClient:
    """The client of `swarmscope.judge` (SWARMSCOPE_JUDGE_CLIENT): `ChatClient.from_env`."""
    return ChatClient.from_env(base_url, model)
