"""Test settings: the app's settings, minus what must not leak into tests from a developer's shell."""

import os

# Tests never talk to a developer's running `manage.py up`: only a REDIS_URL set on purpose counts.
os.environ["SWARMSCOPE_IGNORE_EMBEDDED_REDIS"] = "1"

from webapp.config.settings import *  # noqa: E402,F401,F403
from webapp.config.settings import DATABASES  # noqa: E402

# Websocket tests run queries in worker threads; persistent connections would outlive the test
# database and block its teardown on PostgreSQL.
DATABASES["default"]["CONN_MAX_AGE"] = 0

# A real Celery worker (another process) must see the test database: on SQLite, a file, one per
# pytest run (two runs at once must not share it; xdist workers add their own suffix).
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / f"test-swarmscope-{os.getpid()}.sqlite3")}  # noqa: F405

# Parallel workers (pytest-xdist) on one Redis must not hear each other's groups: trace 1 of one
# worker's database is not trace 1 of another's.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER and CHANNEL_LAYERS["default"]["BACKEND"].startswith("channels_redis"):  # noqa: F405
    CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = f"asgi-{_WORKER}"  # noqa: F405

# Failed logins are counted per client address and every test client is 127.0.0.1 (on one Redis in
# CI's PostgreSQL stage): tests that fail a login on purpose must not lock the others out. The
# throttle's own tests set the limit (tests/accounts/test_roles_and_limits.py).
SWARMSCOPE_LOGIN_FAILURES = 0
