"""Benchmark: is the web app responsive while a training run trains on this machine?

Serves the app as the browser tests do (`manage.py up --no-worker`: Daphne, embedded Redis, SQLite
in a temporary SWARMSCOPE_DATA_DIR) and starts one Celery worker of the `training` queue (prefork,
one pool process), as `manage.py up` would. A logged-in client (session cookie, as a browser)
and an API client (`Authorization: Bearer`) then request, round robin at `--rate` requests/s for
`--seconds` seconds, over fresh connections:

* pages: the runs list, the run page, the New run form, the trace list, a trace page;
* API: `GET /api/runs/<id>/`, `GET /api/runs/<id>/snapshot/`, `GET /api/runs/`, `GET /api/traces/`,
  and `POST /api/runs/<id>/iterations/` of an external run (a stored iteration re-sent).

Latency = time from sending the request to reading the whole response (`time.perf_counter`).
Phases: `idle` (no run), then one run of the real recipe (`long` level, the form's defaults)
started through the New run form, per worker setting in `--settings` (`nice:threads` pairs:
SWARMSCOPE_TRAINING_NICE and SWARMSCOPE_TRAINING_THREADS of the worker). Each training phase
waits for the run's first stored iteration before measuring, and checks the run kept training
meanwhile (its env steps grew). Reported per phase: p50/p95/max of pages and of API requests,
errors, and the 1-minute load average. Target: p95 < 200 ms for both.

    .venv/bin/python bench/bench_training_responsiveness.py [--seconds 45] [--rate 8] [--settings 10:1,0:2]
"""

from __future__ import annotations

import argparse
import http.client
import http.cookiejar
import json
import os
import re
import signal
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_render import machine, percentile, running_app  # noqa: E402

from tests.servers import start, stop  # noqa: E402

TARGET_P95_MS = 200.0
REQUEST_TIMEOUT_S = 30


class Session:
    """A logged-in browser-like client (Django session and CSRF cookies)."""

    def __init__(self, url: str, password: str):
        self.url = url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.post_form("/accounts/login/", {"username": "admin", "password": password})

    def csrf(self) -> str:
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def get(self, path: str) -> tuple[int, bytes]:
        with self.opener.open(self.url + path, timeout=REQUEST_TIMEOUT_S) as response:
            return response.status, response.read()

    def post_form(self, path: str, fields: dict) -> str:
        """POST a form (GET first for the CSRF cookie, when there is none yet); returns the URL it
        redirected to."""
        if not any(c.name == "csrftoken" for c in self.jar):
            self.get(path)
        data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": self.csrf()}).encode()
        request = urllib.request.Request(self.url + path, data=data, headers={"Referer": self.url + path})
        with self.opener.open(request, timeout=REQUEST_TIMEOUT_S) as response:
            response.read()
            return response.url

    def cookie_header(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


def timed(url: str, method: str, path: str, headers: dict, body: bytes | None = None) -> tuple[float, int]:
    """One request on a fresh connection: (milliseconds to the last byte, status)."""
    parts = urllib.parse.urlsplit(url)
    started = time.perf_counter()
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=REQUEST_TIMEOUT_S)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        response.read()
        status = response.status
    finally:
        connection.close()
    return (time.perf_counter() - started) * 1000, status


def measure(app, session: Session, targets: dict, seconds: float, rate: float) -> dict:
    """Round robin over page and API requests at `rate` per second; latencies per kind."""
    cookie = {"Cookie": session.cookie_header()}
    api = {"Authorization": f"Bearer {app.token}", "Content-Type": "application/json"}
    requests = [("page", "GET", p, cookie, None) for p in targets["pages"]]
    requests += [("api", "GET", p, api, None) for p in targets["api_get"]]
    requests += [("api", "POST", targets["api_post"][0], api, targets["api_post"][1])]
    latencies: dict[str, list[float]] = {"page": [], "api": []}
    by_request: dict[str, list[float]] = {}
    errors: list[str] = []
    interval = 1.0 / rate
    deadline = time.monotonic() + seconds
    next_at = time.monotonic()
    i = 0
    while time.monotonic() < deadline:
        kind, method, path, headers, body = requests[i % len(requests)]
        i += 1
        try:
            ms, status = timed(app.url, method, path, headers, body)
            if status >= 400:
                errors.append(f"{method} {path}: {status}")
            latencies[kind].append(ms)
            by_request.setdefault(f"{method} {path}", []).append(ms)
        except OSError as exc:
            errors.append(f"{method} {path}: {exc}")
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    return {"latencies": latencies, "by_request": by_request, "errors": errors, "load": os.getloadavg()[0]}


def report(name: str, result: dict) -> bool:
    ok = True
    for kind in ("page", "api"):
        values = result["latencies"][kind]
        p95 = percentile(values, 0.95)
        ok &= p95 < TARGET_P95_MS
        print(
            f"  {name:24s} {kind:5s} n={len(values):4d}  p50 {percentile(values, 0.5):6.1f} ms  "
            f"p95 {p95:6.1f} ms  max {max(values):7.1f} ms  {'ok' if p95 < TARGET_P95_MS else 'MISSED'}"
        )
    slowest = sorted(result["by_request"].items(), key=lambda kv: -percentile(kv[1], 0.95))[:3]
    print("  " + " " * 24 + " slowest p95: " + ", ".join(f"{k} {percentile(v, 0.95):.0f} ms" for k, v in slowest))
    print(
        f"  {name:24s} errors {len(result['errors'])}  load(1 min) {result['load']:.2f}"
        + (f"  first errors: {result['errors'][:3]}" if result["errors"] else ""),
        flush=True,
    )
    return ok


def run_status(app, run_id: int) -> dict:
    request = urllib.request.Request(f"{app.url}/api/runs/{run_id}/", headers={"Authorization": f"Bearer {app.token}"})
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
        return json.loads(response.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=45)
    parser.add_argument("--rate", type=float, default=8, help="requests per second, pages and API together")
    parser.add_argument("--settings", default="10:1,0:2", help="worker nice:threads pairs, one phase each")
    parser.add_argument("--budget", type=int, default=5_000_000, help="the run's env-step budget (not reached)")
    args = parser.parse_args()
    print(f"machine: {machine()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", flush=True)
    missed = False
    with tempfile.TemporaryDirectory(prefix="bench-training-") as tmp, running_app(Path(tmp)) as app:
        session = Session(app.url, app.password)
        trace = app.import_file(REPO / "tests" / "fixtures" / "native_small.json")
        # An external run with one real iteration: the target of the API's write requests.
        from tests.training.conftest import TINY
        from trainer.recipes import train_orchestrator as recipe

        reports: list[dict] = []
        recipe.train(recipe.RunConfig.from_dict({**TINY, "budget_steps": 100}), on_iteration=reports.append)
        headers = {"Authorization": f"Bearer {app.token}", "Content-Type": "application/json"}
        external = json.loads(
            urllib.request.urlopen(
                urllib.request.Request(
                    f"{app.url}/api/runs/",
                    data=json.dumps({"name": "external", "config": TINY}).encode(),
                    headers=headers,
                ),
                timeout=REQUEST_TIMEOUT_S,
            ).read()
        )["id"]
        iteration = json.dumps(reports[0]).encode()
        targets = {
            "pages": ["/runs/", f"/runs/{external}/", "/runs/new/", "/", f"/traces/{trace}/"],
            "api_get": [f"/api/runs/{external}/", f"/api/runs/{external}/snapshot/", "/api/runs/", "/api/traces/"],
            "api_post": (f"/api/runs/{external}/iterations/", iteration),
        }
        session.get("/runs/new/")  # the first New run form loads the recipe (and torch) into Daphne
        missed |= not report("idle (no training)", measure(app, session, targets, args.seconds, args.rate))

        redis_url = (Path(app.env["SWARMSCOPE_DATA_DIR"]) / "redis" / "url").read_text().strip()
        for setting in args.settings.split(","):
            nice, threads = setting.split(":")
            log = Path(tmp) / f"worker-{nice}-{threads}.log"
            worker = start(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "webapp.config.celery",
                    "worker",
                    "-Q",
                    "training",
                    "-P",
                    "prefork",
                    "-c",
                    "1",
                    "--without-heartbeat",
                    "--without-gossip",
                    "--without-mingle",
                    "-l",
                    "WARNING",
                ],
                {
                    **app.env,
                    "REDIS_URL": redis_url,
                    "SWARMSCOPE_TRAINING_NICE": nice,
                    "SWARMSCOPE_TRAINING_THREADS": threads,
                },
                log,
            )
            try:
                form = recipe.RunConfig().to_dict()
                weights = form["reward_weights"]
                landed = session.post_form(
                    "/runs/new/",
                    {
                        "name": f"bench nice {nice} threads {threads}",
                        "level": "long",
                        "algorithm": "ppo",
                        "credit": "shared",
                        "stop": "learned",
                        "w_success": weights["success"],
                        "w_parallelism": weights["parallelism"],
                        "w_finish": weights["finish"],
                        "w_critical_steps": weights["critical_steps"],
                        "budget_steps": args.budget,
                        "seed": 0,
                    },
                )
                run_id = int(re.search(r"/runs/(\d+)/", landed).group(1))
                targets["pages"][1] = f"/runs/{run_id}/"
                deadline = time.monotonic() + 180
                while run_status(app, run_id)["iterations"] < 1:
                    if time.monotonic() > deadline or worker.poll() is not None:
                        raise RuntimeError(f"the run stored no iteration:\n{log.read_text()[-3000:]}")
                    time.sleep(0.5)
                before = run_status(app, run_id)
                result = measure(app, session, targets, args.seconds, args.rate)
                after = run_status(app, run_id)
                print(
                    f"  training run {run_id}: {after['iterations'] - before['iterations']} iterations, "
                    f"{after['env_steps'] - before['env_steps']} env steps while measuring "
                    f"({(after['env_steps'] - before['env_steps']) / args.seconds:.0f} env steps/s)"
                )
                if after["env_steps"] <= before["env_steps"]:
                    raise RuntimeError("the run did not train while measuring")
                missed |= not report(f"training nice {nice} threads {threads}", result)
                session.post_form(f"/runs/{run_id}/cancel/", {})
            finally:
                stop(worker, signal.SIGTERM)
    print("target p95 < 200 ms:", "MISSED" if missed else "met")


if __name__ == "__main__":
    main()
