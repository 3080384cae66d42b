"""Test settings: the app's settings, minus what must not leak into tests from a developer's shell."""

import os
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# Tests never talk to a developer's running `manage.py up`: only a REDIS_URL set on purpose counts.
os.environ["SWARMSCOPE_IGNORE_EMBEDDED_REDIS"] = "1"


def worker_redis_url(url: str, worker: int) -> str:
    """`url` with its Redis database number raised by `worker` (redis://host:port/N or
    unix:///path?db=N; no number means 0). ValueError past database 15, Redis's default last."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    if parts.scheme == "unix":
        db = int(query.get("db", 0)) + worker
        new = f"unix://{parts.path}?{urlencode({**query, 'db': db})}"  # urlunsplit would drop the empty host
    else:
        db = int(parts.path.strip("/") or 0) + worker
        new = urlunsplit(parts._replace(path=f"/{db}"))
    if db > 15:
        raise ValueError(f"xdist worker {worker} would use Redis database {db} of {url}: Redis has 0-15; use fewer")
    return new


# Parallel workers (pytest-xdist) on one Redis each take their own database (REDIS_URL's number +
# the worker's): one worker's flush (a Redis restart played by tests/training/
# test_requeue_after_broker_loss.py), queue lengths, socket counts and channel groups (trace 1 of one
# worker's database is not trace 1 of another's) must not reach another. Set in the environment so
# the Celery workers and servers a test starts use it too.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and os.environ.get("REDIS_URL"):
    os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], int(_WORKER.removeprefix("gw")))

from webapp.config.settings import *  # noqa: E402,F401,F403
from webapp.config.settings import DATABASES  # noqa: E402

# Websocket tests run queries in worker threads; persistent connections would outlive the test
# database and block its teardown on PostgreSQL.
DATABASES["default"]["CONN_MAX_AGE"] = 0

# A real Celery worker (another process) must see the test database: on SQLite, a file, one per
# pytest run (two runs at once must not share it; xdist workers add their own suffix).
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / f"test-swarmscope-{os.getpid()}.sqlite3")}  # noqa: F405

# Failed logins are counted per client address and every test client is 127.0.0.1 (on one Redis in
# CI's PostgreSQL stage): tests that fail a login on purpose must not lock the others out. The
# throttle's own tests set the limit (tests/accounts/test_roles_and_limits.py).
SWARMSCOPE_LOGIN_FAILURES = 0
