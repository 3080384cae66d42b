"""The streaming CLI (trainer/sim/stream.py): arguments and payloads without a server; one
`services` test against the real embedded stack."""

import json
import re
import signal
import subprocess
import sys

import pytest

from swarmscope.client import SwarmscopeClient
from swarmscope.model import trace_from_dict
from tests.servers import REPO, app_env, free_port, manage, start, stop, wait_http
from trainer.sim import stream
from trainer.sim.baselines import FixedFanOut, run_policy
from trainer.sim.env import SwarmEnv
from trainer.sim.tasks import generate_task


@pytest.fixture
def episode():
    return run_policy(SwarmEnv(generate_task("small", 1), seed=1), FixedFanOut(2, verifier=True))


def test_parse_args(monkeypatch):
    args = stream.parse_args(
        [
            "--url",
            "http://h:1",
            "--token",
            "t",
            "--episodes",
            "3",
            "--level",
            "tiny",
            "--policy",
            "single",
            "--speed",
            "0",
        ]
    )
    assert (args.url, args.token, args.episodes, args.level, args.policy, args.speed) == (
        "http://h:1",
        "t",
        3,
        "tiny",
        "single",
        0.0,
    )
    monkeypatch.setenv("SWARMSCOPE_TOKEN", "from-env")
    assert stream.parse_args([]).token == "from-env"


@pytest.mark.parametrize("argv", [[], ["--token", "t", "--level", "galactic"], ["--token", "t", "--episodes", "0"]])
def test_bad_arguments_exit_2(monkeypatch, argv):
    monkeypatch.delenv("SWARMSCOPE_TOKEN", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        stream.parse_args(argv)
    assert exit_info.value.code == 2


def test_payload_sends_every_edge_after_both_events(episode):
    sent = set()
    pairs = stream.trace_payload(episode)
    for event, edges in pairs:
        sent.add(event["id"])
        assert all(edge["src"] in sent and edge["dst"] in sent for edge in edges)
    assert [e["t"] for e, _ in pairs] == sorted(e["t"] for e, _ in pairs)
    assert sum(len(edges) for _, edges in pairs) == len(episode.trace.edges)


class RecordingClient(SwarmscopeClient):
    """The SDK client with its HTTP layer replaced by a recorder."""

    def __init__(self):
        super().__init__("http://recorder", "token")
        self.requests = []

    def _request(self, method, path, body=None, content_type="application/json", *, idempotency_key=None):
        self.requests.append((method, path, json.loads(body)))
        return {"trace": {"id": 7}} if path == "/api/traces/" else {"seq": len(self.requests)}


def test_stream_episode_builds_valid_batches(episode):
    client = RecordingClient()
    assert stream.stream_episode(client, episode, batch_size=5, speed=0) == 7
    (method, path, created), *batches, close = client.requests
    assert (method, path) == ("POST", "/api/traces/")
    assert close[:2] == ("POST", "/api/traces/7/close/"), "the stream ends with its close signal"
    assert created["source_id"] == episode.trace.source_id and created["system"] == "swarmsim"
    assert created["attributes"]["rewards"] == episode.trace.rewards
    assert created["rewards"] == episode.trace.rewards and created["costs"] == episode.trace.costs  # the list's reward
    assert all(path == "/api/traces/7/events/" for _, path, _ in batches) and len(batches) > 1
    events = [e for _, _, body in batches for e in body["events"]]
    edges = [e for _, _, body in batches for e in body["edges"]]
    rebuilt = trace_from_dict({"source_id": "x", "events": events, "edges": edges})
    assert {e.id for e in rebuilt.events} == {e.id for e in episode.trace.events}
    assert len(rebuilt.edges) == len(episode.trace.edges)


def test_main_streams_each_episode(monkeypatch, capsys):
    clients = []
    monkeypatch.setattr(stream, "SwarmscopeClient", lambda url, token: clients.append(RecordingClient()) or clients[-1])
    stream.main(["--token", "t", "--episodes", "2", "--level", "tiny", "--speed", "0"])
    assert capsys.readouterr().out.count("trace 7") == 2
    assert sum(path == "/api/traces/" for _, path, _ in clients[0].requests) == 2


def test_each_policy_streams_its_own_trace_and_pivot12_streams_messages(monkeypatch, capsys):
    clients = []
    monkeypatch.setattr(stream, "SwarmscopeClient", lambda url, token: clients.append(RecordingClient()) or clients[-1])
    for argv in (["--policy", "fan-out"], ["--policy", "single"], ["--level", "pivot-12"]):
        stream.main(["--token", "t", "--level", "tiny", "--speed", "0", *argv])
    created = [body for client in clients for _, path, body in client.requests if path == "/api/traces/"]
    assert created[0]["source_id"].endswith("/fan-out") and created[1]["source_id"].endswith("/single")
    assert created[0]["source_id"].rsplit("/", 1)[0] == created[1]["source_id"].rsplit("/", 1)[0]
    pivot = [e for _, path, body in clients[2].requests if path.endswith("/events/") for e in body["events"]]
    assert created[2]["source_id"].startswith("pivot-12/0")
    assert sum(e["type"] == "message" for e in pivot) == 12


@pytest.mark.services
@pytest.mark.processes
def test_cli_streams_into_a_running_app(tmp_path):
    """`python -m trainer.sim.stream` against `manage.py up` (embedded stack): every event arrives."""
    port, env, log = free_port(), app_env(tmp_path / "data"), tmp_path / "up.log"
    up = start([sys.executable, "manage.py", "up", "--port", str(port)], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", up, log)
        token = manage("create_token", "admin", env=env).stdout.strip()
        url = f"http://127.0.0.1:{port}"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "trainer.sim.stream",
                "--url",
                url,
                "--token",
                token,
                "--episodes",
                "2",
                "--level",
                "small",
                "--speed",
                "0",
                "--batch-size",
                "7",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        found = re.findall(r"trace (\d+), (\d+) events", done.stdout)
        assert len(found) == 2
        client = SwarmscopeClient(url, token)
        assert [client.get_trace(int(i))["event_count"] for i, _ in found] == [int(n) for _, n in found]
    finally:
        stop(up, signal.SIGINT)
