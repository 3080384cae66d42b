"""The last-admin rule under concurrency: two admins of a project demoting or removing each other at
the same moment (two threads, two database connections) must leave the project an admin. CI runs
this again on PostgreSQL (a `services` test), where it guards the row lock of
webapp.accounts.services._lock_memberships; on SQLite the IMMEDIATE transactions serialise."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from webapp.accounts.models import Membership, Project
from webapp.accounts.services import do_add_member, do_change_role, do_remove_member

TRIES = 100
#: (what the first admin does to the second, what the second does to the first), cycled over tries.
ACTIONS = (("demote", "demote"), ("remove", "remove"), ("demote", "remove"))


def act(action: str, membership: Membership) -> None:
    if action == "demote":
        do_change_role(membership, Membership.Role.VIEWER)
    else:
        do_remove_member(membership)


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300)
def test_two_admins_demoting_or_removing_each_other_at_once_leave_an_admin(django_user_model):
    first = django_user_model.objects.create(username="ada")
    second = django_user_model.objects.create(username="bob")
    without_admin = []
    outcomes: dict[str, int] = {}
    for attempt in range(TRIES):
        project = Project.objects.create(name=f"race {attempt}", slug=f"race-{attempt}")
        a = do_add_member(project, first, "admin")
        b = do_add_member(project, second, "admin")
        # Each thread holds its own copy of the other's membership, read before either acts.
        targets = (Membership.objects.get(pk=b.pk), Membership.objects.get(pk=a.pk))
        actions = ACTIONS[attempt % len(ACTIONS)]
        barrier = threading.Barrier(2)
        results: list[str] = ["", ""]

        def run(i: int) -> None:
            try:
                barrier.wait(timeout=30)
                act(actions[i], targets[i])
                results[i] = "done"
            except ValueError as exc:
                results[i] = f"refused: {exc}"
            finally:
                connection.close()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in threads), f"try {attempt}: a thread hung"
        key = " / ".join(sorted(results))
        outcomes[key] = outcomes.get(key, 0) + 1
        if not Membership.objects.filter(project=project, role=Membership.Role.ADMIN).exists():
            without_admin.append((attempt, actions, results))
        # Exactly one of the two went through: the other saw it and was refused.
        assert sorted(r.split(":")[0] for r in results) == ["done", "refused"], (attempt, actions, results)
    assert not without_admin, f"{len(without_admin)} of {TRIES} tries left no admin: {without_admin[:3]}"
