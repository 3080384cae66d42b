"""The `frameworks` stage: small multi-agent programs written in the frameworks researchers use,
instrumented as each framework documents, exporting through the real OpenTelemetry SDK to the
running app (pytest-django's `live_server`, and the OTLP/gRPC receiver in process).

Each framework has its venv under `var/frameworks/<name>/` (`python tests/frameworks/envs.py
install`, which `.ci/run` runs); a test whose venv is missing skips with that command as the reason,
and fails with SWARMSCOPE_REQUIRE_FRAMEWORKS=1 (CI). Where a framework's model client speaks HTTP,
`ScriptedOpenAI` (tests/frameworks/scripted_openai.py) answers as the test scripts it: the one
stand-in, at the model boundary.
"""

from __future__ import annotations

import os
import subprocess
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import _require
from tests.frameworks import envs
from tests.frameworks.scripted_openai import ModelRequest, Reply, ScriptedOpenAI

PROGRAMS = Path(__file__).resolve().parent / "programs"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/frameworks/" in str(item.fspath):
            item.add_marker(pytest.mark.frameworks)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """With SWARMSCOPE_REQUIRE_FRAMEWORKS=1, a `frameworks` test that skips fails."""
    report = yield
    if report.skipped and item.get_closest_marker("frameworks") and _require("SWARMSCOPE_REQUIRE_FRAMEWORKS"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"{reason.removeprefix('Skipped: ')}; SWARMSCOPE_REQUIRE_FRAMEWORKS=1 makes this a failure"
    return report


@dataclass
class Ran:
    """What one program run left: the traces stored in the project (core form, in creation order),
    the spans stored for them (their decoded records, for a failing test to show), the model calls
    it made, and its output."""

    traces: list
    spans: list = field(default_factory=list)
    model_requests: list[ModelRequest] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""

    @property
    def trace(self):
        """The one trace the program made (fails when it made several or none)."""
        assert len(self.traces) == 1, [(t.source_id, t.name, len(t.events)) for t in self.traces]
        return self.traces[0]


@pytest.fixture
def grpc_endpoint(transactional_db):
    """The app's OTLP/gRPC receiver, in process on a free port: its endpoint URL."""
    from webapp.traces.otlp_grpc import make_server

    server, port = make_server("127.0.0.1", 0, workers=2)
    yield f"http://127.0.0.1:{port}"
    server.stop(grace=None)


@pytest.fixture
def run_program(live_server, api_token, project, request) -> Callable[..., Ran]:
    """`run_program(venv, program, script=None, *, endpoint=None, protocol="http/protobuf", env={})`
    runs `tests/frameworks/programs/<program>.py` with `var/frameworks/<venv>`'s Python, exporting
    to the app (`endpoint`: the live server, or `grpc_endpoint`'s), with OPENAI_BASE_URL pointing at
    a ScriptedOpenAI answering by `script` when one is given. Fails when the program fails, prints an
    export error, or the script raised."""

    def run(
        venv: str,
        program: str,
        script: Callable[[ModelRequest], Reply] | None = None,
        *,
        endpoint: str | None = None,
        protocol: str = "http/protobuf",
        env: dict[str, str] | None = None,
        timeout: float = 240,
    ) -> Ran:
        from webapp.traces.models import StoredSpan, Trace
        from webapp.traces.services import to_core_trace

        python = envs.python_of(venv)
        if python is None:
            pytest.skip(f"the {venv} venv is not installed: run `python tests/frameworks/envs.py install {venv}`")
        environment = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint or live_server.url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=" + urllib.parse.quote(f"Bearer {api_token}"),
            "OTEL_BSP_SCHEDULE_DELAY": "200",
            "OPENAI_API_KEY": "sk-scripted",
            # no telemetry of the frameworks' own makers, no network
            "CREWAI_DISABLE_TELEMETRY": "true",
            "OTEL_SDK_DISABLED": "false",
            "ANONYMIZED_TELEMETRY": "false",
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            **(env or {}),
        }
        server = ScriptedOpenAI(script or (lambda r: pytest.fail(f"{program} made a model call: {r}")))
        with server:
            environment["OPENAI_BASE_URL"] = server.url
            done = subprocess.run(
                [str(python), str(PROGRAMS / f"{program}.py")],
                env=environment,
                cwd=PROGRAMS,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        assert not server.errors, server.errors[0]
        assert done.returncode == 0, done.stderr[-6000:]
        for failure in ("Failed to export", "Exception while exporting", "Transient error"):
            assert failure not in done.stderr, done.stderr[-6000:]
        rows = Trace.objects.filter(project=project).order_by("id")
        spans = [s.data for s in StoredSpan.objects.filter(trace__in=rows).order_by("id")]
        return Ran([to_core_trace(t) for t in rows], spans, list(server.requests), done.stdout, done.stderr)

    return run
