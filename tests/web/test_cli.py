"""The `swarmscope` console script (webapp/web/cli.py): each command is its management command,
with that command's options and help; `swarmscope up` serves what `swarmscope import` imported."""

import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from swarmscope.client import Client
from tests.servers import app_env, free_port, manage, start, stop, wait_http
from webapp.web import cli

SCRIPT = Path(sys.executable).with_name("swarmscope")


def test_the_full_distribution_declares_the_console_script():
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "swarmscope"]
    assert script.load() is cli.main


@pytest.mark.parametrize(
    ("command", "option"), [("up", "--no-worker"), ("import", "--project"), ("import", "--reward-score")]
)
def test_each_command_shows_its_management_commands_options(command, option, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert exited.value.code == 0 and f"usage: swarmscope {command}" in out and option in out


def test_an_unknown_command_is_refused_with_the_known_ones(capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve"])
    assert exited.value.code == 2 and "choose from 'up', 'import'" in capsys.readouterr().err


@pytest.mark.processes
@pytest.mark.timeout(240)
def test_swarmscope_up_serves_what_swarmscope_import_imported(tmp_path, fixtures):
    assert SCRIPT.exists(), "the console script is missing: make install"
    env = app_env(tmp_path / "data", DJANGO_SETTINGS_MODULE="webapp.config.settings")
    port, log = free_port(), tmp_path / "up.log"
    up = start([str(SCRIPT), "up", "--no-worker", "--port", str(port)], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", up, log, timeout=120)
        imported = start([str(SCRIPT), "import", str(fixtures / "native_small.json")], env, tmp_path / "import.log")
        assert imported.wait(timeout=120) == 0, (tmp_path / "import.log").read_text()
        missing = start([str(SCRIPT), "import", str(tmp_path / "nowhere.json")], env, tmp_path / "missing.log")
        assert missing.wait(timeout=120) == 1 and "nowhere.json" in (tmp_path / "missing.log").read_text()
        token = manage("create_token", "admin", env=env).stdout.strip()
        listed = Client(f"http://127.0.0.1:{port}", token)._request("GET", "/api/traces/")["results"]
        assert len(listed) == 1 and listed[0]["event_count"] > 0
    finally:
        stop(up)
    assert up.returncode is not None
