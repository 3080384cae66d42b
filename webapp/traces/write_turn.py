"""Turns at SQLite's write lock for the OTLP stream's writers: its requests and its derivations.

SQLite gives its one write lock to whichever connection asks at the instant it is free: a writer
that waits sleeps in SQLite's busy handler (1, 2, 5, … then 100 ms between tries) while a writer
that commits and begins again at once takes the lock back each time. So a request arriving while a
derivation writes chunk after chunk (`span_ingest._stage_added_events`) waited for most of the
derivation, not for one chunk. `write_turn` queues those writers on two `flock`s beside the
database file (a turnstile: take the gate, take the lock, let go of the gate): a writer that waits
holds the gate, so the one that just wrote cannot take the lock again before it. Kernel locks are
let go when their process dies. Other writers (imports, metrics) keep SQLite's own waiting;
PostgreSQL needs none of this (its row locks queue). In one process, threads take turns through a
`threading.Lock` as well (an `flock` is held per open file, not per thread).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

_THREADS = threading.Lock()
#: (process id, path) -> (gate fd, lock fd): opened once per process, again in a forked child (an
#: `flock` is shared by the processes that share its open file).
_FILES: dict[tuple[int, str], tuple[int, int]] = {}
_HELD = threading.local()  # `depth`: this thread's nested turns


def database_path() -> str | None:
    """The file of this connection's SQLite database; None for another database or an in-memory one."""
    if connection.vendor != "sqlite":
        return None
    name = str(connection.settings_dict["NAME"])
    if not name or name == ":memory:" or name.startswith("file:") or "mode=memory" in name:
        return None
    return name


@contextmanager
def write_turn() -> Iterator[None]:
    """Hold this process's turn at the SQLite write lock (see the module docstring) around a write
    transaction: open it inside. Does nothing but yield on PostgreSQL and in-memory databases."""
    path = database_path()
    if path is None:
        yield
    else:
        with turn(path):
            yield


@contextmanager
def turn(path: str) -> Iterator[None]:
    """Hold the turn of `path` (the files `<path>-gate` and `<path>-turn`, created 0600 when
    missing). Nested calls in one thread (a task run eagerly after the commit of a request that
    holds the turn) hold it once. Raises OSError when the files cannot be opened."""
    if getattr(_HELD, "depth", 0):
        _HELD.depth += 1
        try:
            yield
        finally:
            _HELD.depth -= 1
        return
    files = _FILES.get((os.getpid(), path))
    if files is None:
        gate_fd = os.open(f"{path}-gate", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        turn_fd = os.open(f"{path}-turn", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        files = _FILES[(os.getpid(), path)] = (gate_fd, turn_fd)
    gate, lock = files
    with _THREADS:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        _HELD.depth = 1
        try:
            yield
        finally:
            _HELD.depth = 0
            fcntl.flock(lock, fcntl.LOCK_UN)
