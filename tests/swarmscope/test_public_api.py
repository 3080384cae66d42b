"""The library's public names: what a notebook user imports from `swarmscope`."""

import subprocess
import sys

import pytest

import swarmscope
from tests.servers import REPO


def test_import_swarmscope_alone_loads_no_framework():
    code = (
        "import sys, swarmscope\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'django', 'channels', 'celery', 'torch', 'daphne'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_every_public_name_exists():
    assert all(hasattr(swarmscope, name) for name in swarmscope.__all__)


def test_read_traces_reads_a_file_and_a_folder(fixtures, tmp_path):
    (trace,) = swarmscope.read_traces(fixtures / "native_small.json")
    assert trace.events and swarmscope.compute_metrics(trace)["critical_steps"] >= 1
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.json").write_bytes((fixtures / "native_small.json").read_bytes())
    (folder / "notes.txt").write_text("not a trace")
    (folder / ".git").mkdir()
    (folder / ".git" / "index").write_bytes(b"\xff\x00 not text")  # hidden folders are left out
    assert [t.identity_key for t in swarmscope.read_traces(folder)] == [trace.identity_key]


def test_read_traces_names_the_bad_file_and_returns_nothing(fixtures, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"events": [{"id": "e1"')
    with pytest.raises(swarmscope.TraceFormatError, match="bad.json"):
        swarmscope.read_traces(fixtures / "native_small.json", bad)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        swarmscope.read_traces(tmp_path / "missing.json")
