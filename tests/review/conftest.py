"""Two projects with members of every role, a trace (the native fixture) and an attribution in each."""

import json

import pytest

from swarmscope import model as core
from webapp.accounts.services import (
    do_add_member,
    do_create_token,
    do_get_or_create_project,
)
from webapp.counterfactuals.models import Attribution
from webapp.traces import ingest as trace_ingest


def ingest(project, path, source_id=None):
    trace = core.trace_from_dict(json.loads(path.read_text()))
    if source_id:
        trace.source_id = source_id
    return trace_ingest.do_ingest(project, trace).trace


def make_attribution(trace, target="event:e5"):
    return Attribution.objects.create(
        trace=trace,
        target=target,
        intervention={"kind": "remove"},
        method="loo",
        estimate=0.25,
        ci_low=0.1,
        ci_high=0.4,
        n_rollouts=64,
        backend="trainer.rollout.sim.SimRollout",
        seed=7,
        environment={},
        code_version="test",
    )


class Team:
    """Project A (admin ann, reviewers rev/bob, viewer vic) and project B (admin zed), with tokens."""

    def __init__(self, django_user_model, fixtures):
        self.a = do_get_or_create_project("Project A")
        self.b = do_get_or_create_project("Project B")
        self.users, self.tokens = {}, {}
        for name, project, role in [
            ("ann", self.a, "admin"),
            ("rev", self.a, "reviewer"),
            ("bob", self.a, "reviewer"),
            ("vic", self.a, "viewer"),
            ("zed", self.b, "admin"),
        ]:
            user = django_user_model.objects.create_user(name, password=f"{name}-password-1")
            do_add_member(project, user, role)
            self.users[name] = user
            self.tokens[name] = do_create_token(user, project, "tests")[1]
        self.trace_a = ingest(self.a, fixtures / "native_small.json")
        self.trace_b = ingest(self.b, fixtures / "native_small.json")
        self.attribution_a = make_attribution(self.trace_a)
        self.attribution_b = make_attribution(self.trace_b)

    def client(self, name):
        from django.test import Client

        client = Client()
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {self.tokens[name]}"
        return client


@pytest.fixture
def team(db, django_user_model, fixtures):
    return Team(django_user_model, fixtures)
