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


def _digest(name: str) -> str:
    return hashlib.sha256((REQUIREMENTS / f"{name}.txt").read_bytes()).hexdigest()


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
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS / f"{name}.txt")],
        ]
        for step in steps:
            if subprocess.run(step, stdout=out, stderr=subprocess.STDOUT).returncode:
                raise SystemExit(f"{name}: install failed, see {log}:\n{log.read_text()[-3000:]}")
    _marker(name).write_text(_digest(name))
    return f"{name}: installed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["install", "list"])
    parser.add_argument("names", nargs="*", help="framework venvs (default: all)")
    parser.add_argument("--jobs", type=int, default=3)
    args = parser.parse_args()
    chosen = args.names or names()
    if args.command == "list":
        for name in chosen:
            print(f"{name}: {python_of(name) or 'not installed'}")
        return
    with ThreadPoolExecutor(args.jobs) as pool:
        for line in pool.map(install, chosen):
            print(line, flush=True)


if __name__ == "__main__":
    main()
