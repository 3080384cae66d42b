"""`make run` (`manage.py up`) logs quietly by default: Daphne's access log (a line per request,
static files included) goes to a file in the data folder, not the console, and a worker's task lines
show a bounded part of a task's result."""

import time
import urllib.request

import pytest
from celery.utils.saferepr import saferepr

from tests.servers import app_env, free_port, start, stop, wait_http
from webapp.config.celery import TASK_RESULT_LOG_CHARS
from webapp.traces.tasks import refresh_metrics
from webapp.web.management.commands.up import daphne_command


@pytest.mark.processes
def test_daphne_as_up_starts_it_writes_requests_to_the_access_log_file_not_the_console(tmp_path):
    port, access, console = free_port(), tmp_path / "access.log", tmp_path / "console.log"
    server = start(daphne_command("127.0.0.1", port, str(access)), app_env(tmp_path), console)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", server, console)
        urllib.request.urlopen(f"http://127.0.0.1:{port}/static/css/trace_list.css", timeout=10).read()
        deadline = time.monotonic() + 30
        while "/static/css/trace_list.css" not in (access.read_text() if access.exists() else ""):
            assert time.monotonic() < deadline, "no access log line"
            time.sleep(0.1)
    finally:
        stop(server)
    assert "GET /static" not in console.read_text()


def test_task_results_are_cut_in_the_workers_log_lines():
    assert refresh_metrics.resultrepr_maxsize == TASK_RESULT_LOG_CHARS
    line = saferepr({"metrics": "x" * 1200}, refresh_metrics.resultrepr_maxsize)  # as celery.app.trace logs it
    assert len(line) < 200
