"""`write_turn.turn`: writers that wait for SQLite's write lock take turns with one that writes
again and again, across processes (real `flock`s on real files, real forked processes)."""

import multiprocessing
import os
import time

from webapp.traces.write_turn import database_path, turn, write_turn


def _lines(log: str) -> list[str]:
    with open(log) as lines:
        return lines.read().splitlines()


def _wait_for(log: str, line: str) -> None:
    while line not in _lines(log):
        time.sleep(0.001)


def _holder(path: str, log: str, rounds: int) -> None:
    """Take the turn `rounds` times back to back, as a derivation writes its chunks; in turn 5, wait
    for the waiter to ask, then go on writing for a second (time for it to queue)."""
    for i in range(rounds):
        with turn(path):
            with open(log, "a") as out:
                out.write(f"holder {i}\n")
            if i == 5:
                _wait_for(log, "waiter asks")
                time.sleep(1)
            time.sleep(0.005)  # writing a chunk


def _waiter(path: str, log: str) -> None:
    """While the holder writes its turn 5, ask for one turn, as a request does."""
    _wait_for(log, "holder 5")
    with open(log, "a") as out:
        out.write("waiter asks\n")
    with turn(path):
        with open(log, "a") as out:
            out.write("waiter writes\n")


def test_a_waiting_writer_gets_the_next_turn(tmp_path):
    """Without the gate the holder, still running when it lets go, takes the lock back first."""
    path, log = str(tmp_path / "db.sqlite3"), str(tmp_path / "log")
    open(log, "w").close()
    fork = multiprocessing.get_context("fork")
    holder = fork.Process(target=_holder, args=(path, log, 12))
    waiter = fork.Process(target=_waiter, args=(path, log))
    holder.start()
    waiter.start()
    for process in (holder, waiter):
        process.join(60)
        assert process.exitcode == 0
    lines = _lines(log)
    assert lines[5:8] == ["holder 5", "waiter asks", "waiter writes"], lines
    assert lines[8:] == [f"holder {i}" for i in range(6, 12)]


def test_nested_turns_in_one_thread_are_one_turn(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    with turn(path):
        with turn(path):  # a task run eagerly inside a request's turn: no deadlock
            pass
        assert os.path.exists(f"{path}-gate") and os.path.exists(f"{path}-turn")
    with turn(path):  # and the turn was let go
        pass


def test_turns_are_taken_only_on_a_sqlite_database_file(monkeypatch, tmp_path):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "NAME", str(tmp_path / "db.sqlite3"))
    assert database_path() == (str(tmp_path / "db.sqlite3") if connection.vendor == "sqlite" else None)
    for memory in (":memory:", "file:memorydb_default?mode=memory&cache=shared", ""):
        monkeypatch.setitem(connection.settings_dict, "NAME", memory)
        assert database_path() is None
        with write_turn():  # nothing to take
            pass
