"""The client distribution (clients/python) as a user gets it, against the running app (Daphne on
its own SQLite data folder, free port): installed alone into a fresh virtualenv it pulls no torch
and no Django, and `Client()` and `register()` work from environment variables alone; and
`register()` with a real instrumentor (OpenInference's OpenAI instrumentor, calling the fake
OpenAI server of tests/fake_openai.py) delivers its spans to /v1/traces."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

from swarmscope.client import Client
from tests.fake_openai import FakeOpenAIServer
from tests.servers import REPO, app_env, free_port, manage, start, stop, wait_http

pytestmark = [pytest.mark.processes, pytest.mark.timeout(300)]

#: Installed distributions that would mean the client drags in the server or the library.
HEAVY = {"torch", "django", "numpy", "networkx", "channels", "celery", "daphne", "swarmscope"}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """(base URL, API token) of a Daphne of the app on a migrated SQLite database of its own."""
    workdir = tmp_path_factory.mktemp("app")
    env = app_env(workdir / "data", DJANGO_SETTINGS_MODULE="webapp.config.settings")
    for args in (("migrate", "-v0"), ("createsuperuser", "--noinput", "--username", "ops", "--email", "o@x.org")):
        done = manage(*args, env={**env, "DJANGO_SUPERUSER_PASSWORD": "ops-password-1"}, timeout=180)
        assert done.returncode == 0, done.stderr
    done = manage("create_token", "ops", env=env)
    assert done.returncode == 0, done.stderr
    port, log = free_port(), workdir / "daphne.log"
    daphne = start(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "webapp.config.asgi:application"], env, log
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", daphne, log)
        yield f"http://127.0.0.1:{port}", done.stdout.strip()
    finally:
        stop(daphne)


def only_settings(base: str, token: str, **extra: str) -> dict[str, str]:
    """A bare environment: PATH, HOME and the client's two variables (plus `extra`), nothing of the app."""
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return {**keep, "SWARMSCOPE_URL": base, "SWARMSCOPE_API_KEY": token, **extra}


def otlp_trace_with(client: Client, text: str, timeout: float = 30) -> dict:
    """The snapshot of the OTLP trace that mentions `text` (a span's name, a model's), waiting up to
    `timeout` s; fails listing what did arrive."""
    deadline = time.monotonic() + timeout
    while True:
        listed = client._request("GET", "/api/traces/?page_size=200")["results"]
        snapshots = [
            client._request("GET", f"/api/traces/{summary['id']}/snapshot/")
            for summary in listed
            if summary["source_format"] == "otlp"
        ]
        found = [snapshot for snapshot in snapshots if text in json.dumps(snapshot)]
        if found:
            return found[0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no OTLP trace mentions {text!r} after {timeout}s; traces: {listed}")
        time.sleep(0.3)


def test_the_client_installs_alone_and_works_from_environment_variables(app, tmp_path):
    base, token = app
    source = tmp_path / "client-src"  # a copy: pip builds in the source folder, which stays clean
    shutil.copytree(REPO / "clients" / "python", source, ignore=shutil.ignore_patterns("*.egg-info", "build"))
    venv = tmp_path / "venv"  # without pip of its own (seconds, not tens): this pip installs into it
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    installed = subprocess.run(
        [*pip, "install", "--quiet", f"{source}[otel]"], capture_output=True, text=True, timeout=240
    )
    assert installed.returncode == 0, installed.stderr
    listed = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True, timeout=60)
    names = {d["name"].lower() for d in json.loads(listed.stdout)}
    assert "swarmscope-client" in names and "opentelemetry-sdk" in names
    assert not names & HEAVY, names & HEAVY
    site = next((venv / "lib").glob("python3*/site-packages"))
    size_mb = sum(f.stat().st_size for f in site.rglob("*") if f.is_file()) / 2**20
    print(f"client venv site-packages: {size_mb:.1f} MiB, {len(names)} distributions")
    assert size_mb < 40, size_mb  # torch alone is over 500

    script = textwrap.dedent(
        """
        import json
        from swarmscope_client import Client, register
        client = Client()
        with client.stream(name="from the environment", system="client-dist") as trace:
            trace.event(id="e1", t=0.0, type="spawn", agent="orchestrator", to="worker")
            trace.event(id="e2", t=0.5, type="message", agent="worker", to="orchestrator", content="done")
            trace.edge("e1", "e2", "spawn")
        provider = register()
        with provider.get_tracer("client-dist").start_as_current_span("invoke_agent fresh-venv"):
            pass
        assert provider.force_flush(10000)
        print(json.dumps({"trace": trace.trace_id}))
        """
    )
    ran = subprocess.run(
        [python, "-c", script], env=only_settings(base, token), capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stderr
    trace_id = json.loads(ran.stdout.strip().splitlines()[-1])["trace"]
    client = Client(base, token)
    assert client.get_trace(trace_id)["event_count"] == 2
    otlp_trace_with(client, "fresh-venv")


def test_register_with_the_openinference_openai_instrumentor_delivers_its_spans(app, tmp_path):
    pytest.importorskip("openinference.instrumentation.openai")
    base, token = app
    script = textwrap.dedent(
        """
        import sys
        import openai
        from swarmscope_client import register
        provider = register(project=int(sys.argv[2]), auto_instrument=True)
        answer = openai.OpenAI(base_url=sys.argv[1], api_key="sk-fake").chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "What is six times seven?"}]
        )
        assert provider.force_flush(10000)
        print(answer.choices[0].message.content)
        """
    )
    with FakeOpenAIServer() as fake:
        client = Client(base, token)
        project = client.create_trace("which project", system="tests")["project"]
        ran = subprocess.run(
            [sys.executable, "-c", script, fake.base_url, str(project)],
            env=only_settings(base, token, OTEL_SERVICE_NAME="openai-app"),
            capture_output=True,
            text=True,
            timeout=90,
            cwd=tmp_path,
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == "FINAL ANSWER: 42" and len(fake.requests) == 1
    snapshot = otlp_trace_with(client, "ChatCompletion")
    assert snapshot["trace"]["system"] == "openai-app"  # OTEL_SERVICE_NAME, read by the SDK's resource
    (event,) = snapshot["events"]  # the instrumented call, with what the OpenInference span carried
    assert event["attributes"]["span_name"] == "ChatCompletion" and event["attributes"]["model"] == "fake-model"
    assert event["content"] == "FINAL ANSWER: 42" and "six times seven" in event["attributes"]["input"]
    urllib.request.urlopen(f"{base}/healthz", timeout=5)  # the app still answers
