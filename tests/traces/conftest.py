from tests.review.conftest import team  # noqa: F401  (two projects with members of every role)
