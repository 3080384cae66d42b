"""The framework venvs of the `frameworks` tests: one per framework, under `var/frameworks/<name>/`.

Standard library only; runs on its own (`python tests/frameworks/envs.py install [NAME ...]`, all
when none is named; `list` says which are installed) and as a module (`python_of(name)` for the
tests). Each venv installs `tests/frameworks/requirements/<name>.txt` (pinned versions: the ones
docs/otel-mapping.md lists as known to work) and is kept while that file is unchanged: a marker in
the venv holds the file's SHA-256. Installs run a few at a time (`--jobs`, default 3).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REQUIREMENTS = Path(__file__).resolve().parent / "requirements"
HOME = REPO / "var" / "frameworks"


def names() -> list[str]:
    return sorted(p.stem for p in REQUIREMENTS.glob("*.txt"))


def _lock(name: str) -> Path:
    return REQUIREMENTS / f"{name}.lock"


def _digest(name: str) -> str:
    lock = _lock(name)
    text = (REQUIREMENTS / f"{name}.txt").read_bytes() + (lock.read_bytes() if lock.is_file() else b"")
    return hashlib.sha256(text).hexdigest()


def _marker(name: str) -> Path:
    return HOME / name / "venv" / ".swarmscope-installed"


def python_of(name: str) -> Path | None:
    """The venv's interpreter, or None when it is not installed from the current requirements."""
    marker = _marker(name)
    if marker.is_file() and marker.read_text().strip() == _digest(name):
        return HOME / name / "venv" / "bin" / "python"
    return None


def install(name: str) -> str:
    """Create or refresh `var/frameworks/<name>/venv`; a line saying what was done."""
    if python_of(name):
        return f"{name}: up to date"
    venv = HOME / name / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log = HOME / name / "install.log"
    with log.open("w") as out:
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS / f"{name}.txt")]
            + (["-c", str(_lock(name))] if _lock(name).is_file() else []),
        ]
        for step in steps:
            if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode:
                raise SystemExit(f"{name}: install failed, see {log}:\n{log.read_text()[-3000:]}")
    _marker(name).write_text(_digest(name))
    return f"{name}: installed"


def lock(name: str) -> str:
    """Write `<name>.lock` from the installed venv (`pip freeze`); a line saying so."""
    python = HOME / name / "venv" / "bin" / "python"
    frozen = subprocess.run(
        [str(python), "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    _lock(name).write_text(f"# pip freeze of var/frameworks/{name}/venv (`envs.py lock {name}`)\n{frozen}")
    _marker(name).write_text(_digest(name))
    return f"{name}: locked {len(frozen.splitlines())} packages"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["install", "list", "lock"])
    parser.add_argument("names", nargs="*", help="framework venvs (default: all)")
    parser.add_argument("--jobs", type=int, default=3)
    args = parser.parse_args()
    chosen = args.names or names()
    if args.command == "list":
        for name in chosen:
            print(f"{name}: {python_of(name) or 'not installed'}")
        return
    if args.command == "lock":
        for name in chosen:
            print(lock(name))
        return
    with ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(install, chosen):
            print(line, flush=True)


if __name__ == "__main__":
    main()
