"""Reading trace files and folders from disk: `iter_files` (what a path names) and `read_traces`."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from swarmscope.model import Trace

from . import SourceFile, TraceFormatError, read_files


def natural_key(path: Path) -> list:
    """Sort `2.json` before `10.json`."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def _hidden(relative: Path) -> bool:
    """Whether a file or any folder on its way down from the root is hidden (`.git/`, `.monocle/`)."""
    return any(part.startswith(".") for part in relative.parts)


def iter_files(paths: Iterable[str | os.PathLike]) -> Iterator[Path]:
    """The files the `paths` name: a file itself, a folder's files (recursively, in natural order,
    leaving out hidden files and everything in hidden folders). Raises FileNotFoundError naming a
    path that does not exist."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = (p for p in path.rglob("*") if p.is_file() and not _hidden(p.relative_to(path)))
            yield from sorted(files, key=natural_key)
        elif path.is_file():
            yield path
        else:
            raise FileNotFoundError(f"{raw}: no such file or folder")


def read_traces(*paths: str | os.PathLike) -> list[Trace]:
    """Every trace in the files and folders `paths` (format detected by content; chunks of one span
    trace across files merge). All or nothing: raises TraceFormatError naming the first file that
    failed; files that hold no trace are skipped. `read_files` reports file by file instead."""
    files = list(iter_files(paths))
    result = read_files(SourceFile(str(p), p.read_bytes()) for p in files)
    for report in result.files:
        if report.error:
            raise TraceFormatError(report.name, report.error)
    return result.traces
