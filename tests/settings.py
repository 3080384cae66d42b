"""Test settings: the app's settings, minus what must not leak into tests from a developer's shell."""

import os

# Tests never talk to a developer's running `manage.py up`: only a REDIS_URL set on purpose counts.
os.environ["SWARMSCOPE_IGNORE_EMBEDDED_REDIS"] = "1"

from webapp.config.settings import *  # noqa: E402,F401,F403
from webapp.config.settings import DATABASES  # noqa: E402

# Websocket tests run queries in worker threads; persistent connections would outlive the test
# database and block its teardown on PostgreSQL.
DATABASES["default"]["CONN_MAX_AGE"] = 0

# A real Celery worker (another process) must see the test database: on SQLite, a file.
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-swarmscope.sqlite3")}  # noqa: F405
