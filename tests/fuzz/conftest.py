"""Hypothesis profiles for the fuzz tests: `ci` (default) keeps them to a few minutes — bounded
examples, no per-example deadline (shared CI machines stall); `thorough` for a long local run:
HYPOTHESIS_PROFILE=thorough .venv/bin/python -m pytest tests/fuzz."""

import os

from hypothesis import HealthCheck, settings

_common = dict(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
    print_blob=True,
)
settings.register_profile("ci", max_examples=int(os.environ.get("SWARMSCOPE_FUZZ_EXAMPLES", 25)), **_common)
settings.register_profile("thorough", max_examples=500, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from tests.review.conftest import team  # noqa: E402,F401  (two projects with members of every role)
