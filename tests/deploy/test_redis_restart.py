"""A Redis restart (the broker and the channel layer, killed and started empty) in the middle of
everything at once: three training runs trained by the app (one running, two queued behind it on
the `training` queue), an event stream, uploads and counterfactual job requests through the API.

The restart drops every queued broker message and every unacknowledged one. Afterwards every run
and every job must finish (the beat sweeps send the lost work again: `requeue_lost_runs`,
`reap_stale_jobs`), and every write answered 2xx must be stored exactly once, however the writes
around the restart were answered. All on servers the test starts itself (tests/deploy/conftest.py).
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import threading
import time
import urllib.parse
import urllib.request

import psycopg
import pytest
import redis

from swarmscope.client import SwarmscopeClient, SwarmscopeError
from tests.training.conftest import TINY

from .conftest import wait_for

pytestmark = [pytest.mark.services, pytest.mark.processes, pytest.mark.timeout(600)]

#: Seconds: the sweeps' ages (queued runs re-sent, running jobs' chunks re-queued) in this test. A
#: running run is also marked failed past RUN_STALE_S without a heartbeat: on a loaded 2-core
#: machine an iteration of the long run has taken over 12 s, so the age leaves it room.
RUN_STALE_S, JOB_STALE_S = 40, 5


class Browser:
    """A logged-in session of the web pages (cookies and CSRF token), as a user's browser holds one."""

    def __init__(self, base: str, username: str, password: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.opener.open(f"{base}/accounts/login/", timeout=30).read()
        answer = self.post("/accounts/login/", {"username": username, "password": password})
        assert "sessionid" in {c.name for c in self.jar}, answer

    def csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def post(self, path: str, form: dict) -> tuple[int, str]:
        """POST `form`; (final status after redirects, final URL)."""
        data = urllib.parse.urlencode({**form, "csrfmiddlewaretoken": self.csrf()}).encode()
        request = urllib.request.Request(self.base + path, data=data, headers={"Referer": self.base + path})
        with self.opener.open(request, timeout=60) as response:
            response.read()
            return response.status, response.url


def attempt(call):
    """One attempt of a write: ("ok", answer), or ("failed", what went wrong) for an error status
    or a broken connection (nothing is known of what was stored)."""
    try:
        return "ok", call()
    except SwarmscopeError as exc:
        return "failed", f"HTTP {exc.status}"
    except OSError as exc:
        return "failed", type(exc).__name__


def test_a_redis_restart_loses_no_run_job_or_write(  # noqa: C901 - one scenario, read top to bottom
    deployment, redis_server, sim_trace_file, fixtures, tmp_path
):
    env = deployment.env
    env.update(SWARMSCOPE_RUN_STALE_S=str(RUN_STALE_S), SWARMSCOPE_JOB_STALE_S=str(JOB_STALE_S))
    token = deployment.prepare()
    _, default_log = deployment.worker(
        "default", "default,rollouts-cpu", "-B", "--schedule", str(tmp_path / "celerybeat-schedule")
    )
    _, training_log = deployment.worker("training", "training")
    base = deployment.daphne("daphne")
    once = SwarmscopeClient(base, token, retries=0)  # one attempt: the answer the test judges
    client = SwarmscopeClient(base, token)  # the SDK's retries, for re-sending what failed
    database = env["DATABASE_URL"]

    def logs() -> str:
        return "\n".join(f"--- {p.name}:\n{p.read_text()[-3000:]}" for p in (default_log, training_log))

    def query(sql: str, *args):
        with psycopg.connect(database) as conn:
            return conn.execute(sql, args).fetchall()

    # The trace of the job requests, and the project the runs start in.
    sim_path, pivotal = sim_trace_file
    sim_trace = client.upload(sim_path)["files"][0]["traces"][0]
    project = sim_trace["project"] if "project" in sim_trace else client.get_trace(sim_trace["id"])["project"]

    # Three runs of the real recipe: the first long enough to be training through the restart.
    browser = Browser(base, "ops", "ops-password-1")
    form = {k: v for k, v in TINY.items() if k not in ("max_steps", "episodes_per_iteration", "group_size")}
    form.update(project=project, w_success=1, w_parallelism=0.1, w_finish=0.1, w_critical_steps=0.001, name="")
    run_ids = []
    for budget in (40_000, 1_500, 1_500):
        status, url = browser.post("/runs/new/", {**form, "budget_steps": budget})
        assert status == 200 and re.search(r"/runs/(\d+)/$", url), (status, url)
        run_ids.append(int(re.search(r"/runs/(\d+)/$", url).group(1)))

    def run_states():
        rows = dict(query("SELECT id, status FROM runs_run WHERE id = ANY(%s)", run_ids))
        return [rows[i] for i in run_ids]

    def first_is_training():
        [(iterations,)] = query("SELECT iterations_done FROM runs_run WHERE id = %s", run_ids[0])
        return run_states() == ["running", "queued", "queued"] and iterations >= 2

    wait_for(first_is_training, 180, lambda: f"runs {run_states()}, not one training:\n{logs()}")

    # Writes around the restart: an event stream in a thread, uploads and job requests here.
    stream_trace = client.create_trace("events through a Redis restart", system="tests")["id"]
    sent_events: list[str] = []
    stream_outcomes: list[str] = []
    stop_stream = threading.Event()

    def stream():
        for b in range(10_000):
            if stop_stream.is_set():
                return
            events = [
                {"id": f"b{b}-{k}", "t": b + k / 10, "type": "message", "agent": f"w{k}", "to": "lead"}
                for k in range(5)
            ]
            outcome, _ = attempt(lambda: once.send_batch(stream_trace, events))
            stream_outcomes.append(outcome)
            if outcome != "ok":
                client.send_batch(stream_trace, events)  # re-sent: stored events are skipped by id
            sent_events.extend(e["id"] for e in events)
            time.sleep(0.05)

    uploads: dict[str, str] = {}  # source id -> first attempt's outcome
    jobs: dict[int, str] = {}  # job id -> first attempt's outcome (or "retried")
    job_body = json.dumps({"intervention": {"kind": "remove", "events": [pivotal]}, "n": 16, "seed": 5}).encode()

    def upload(n: int) -> None:
        doc = json.loads((fixtures / "native_small.json").read_text())
        doc.update(source_id=f"redis-restart-{n}", name=f"upload {n} around a Redis restart")
        path = tmp_path / f"upload-{n}.json"
        path.write_text(json.dumps(doc))
        outcome, _ = attempt(lambda: once.upload(path))
        if outcome != "ok":
            client.upload(path)  # the same source id: found again, not stored twice
        uploads[doc["source_id"]] = outcome

    def request_job() -> None:
        path = f"/api/traces/{sim_trace['id']}/counterfactuals/"
        outcome, answer = attempt(lambda: once._request("POST", path, job_body))
        if outcome == "ok":
            jobs[answer["id"]] = outcome
        else:  # nothing is known of the first attempt: a second request is a second job
            jobs[client._request("POST", path, job_body)["id"]] = "retried"

    streamer = threading.Thread(target=stream, daemon=True)
    streamer.start()
    upload(0)
    request_job()
    at_restart = run_states()
    redis_server.restart(down_s=2.0)
    queued_messages = redis.Redis.from_url(redis_server.url).llen("training")
    for n in (1, 2):  # right after the restart: the workers are still reconnecting
        upload(n)
        request_job()
    time.sleep(3)
    stop_stream.set()
    streamer.join(60)
    assert redis_server.starts == 2
    # The scenario the test is about: one run training and two queued when Redis went down, and
    # their messages gone with it (the empty Redis holds none).
    assert at_restart == ["running", "queued", "queued"] and queued_messages == 0, (at_restart, queued_messages)

    # Every run and every job finishes.
    def all_done():
        states = run_states()
        assert not {"failed", "cancelled"} & set(states), f"runs {states}:\n{logs()}"
        job_states = dict(query("SELECT id, status FROM experiments_counterfactualjob WHERE id = ANY(%s)", list(jobs)))
        assert not {"failed", "cancelled"} & set(job_states.values()), f"jobs {job_states}:\n{logs()}"
        return states == ["finished"] * 3 and set(job_states.values()) == {"done"}

    wait_for(all_done, 300, lambda: f"runs {run_states()}, jobs not all done:\n{logs()}")

    # Every write answered 2xx is stored once; so is every write re-sent after an error.
    [(stored, distinct)] = query(
        "SELECT count(*), count(DISTINCT event_id) FROM traces_event WHERE trace_id = %s", stream_trace
    )
    assert stored == distinct == len(sent_events), (stored, distinct, len(sent_events), stream_outcomes)
    for source_id in uploads:
        assert query("SELECT count(*) FROM traces_trace WHERE source_id = %s", source_id) == [(1,)], source_id
    stored_jobs = dict(
        query("SELECT id, status FROM experiments_counterfactualjob WHERE trace_id = %s", sim_trace["id"])
    )
    failed_first = sum(o != "ok" for o in jobs.values())  # such a request may have stored a job too
    assert set(jobs) <= set(stored_jobs) and len(stored_jobs) <= len(jobs) + failed_first, (jobs, stored_jobs)
    assert set(stored_jobs.values()) == {"done"}, stored_jobs
    for run_id in run_ids:
        rows = query("SELECT iteration FROM runs_runiteration WHERE run_id = %s ORDER BY iteration", run_id)
        numbers = [n for (n,) in rows]
        assert numbers and numbers == list(range(len(numbers))), (run_id, numbers)
    print(
        f"\nafter the restart: {len(sent_events)} events in {len(stream_outcomes)} batches "
        f"({stream_outcomes.count('failed')} first attempts failed), uploads {uploads}, jobs {jobs}, "
        f"runs {run_states()}"
    )
