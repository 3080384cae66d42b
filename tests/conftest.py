"""Shared test fixtures: where ../shared/data is, and whether tests that need it may skip."""

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
    for item in items:
        if item.get_closest_marker("django_db") or DATABASE_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.services)
