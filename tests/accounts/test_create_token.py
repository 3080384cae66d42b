"""`manage.py create_token USER --project NAME` (issue 18 item 12): a token only in a project USER
belongs to; an existing project of other people is refused, not joined as its admin."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from webapp.accounts.models import ApiToken, Membership, Project
from webapp.accounts.services import do_add_member, do_create_project, do_get_or_create_project

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def users(django_user_model):
    return {name: django_user_model.objects.create_user(name, password=f"{name}-password-1") for name in ("ann", "bob")}


def roles(project: Project) -> dict[str, str]:
    return dict(Membership.objects.filter(project=project).values_list("user__username", "role"))


def test_a_new_project_is_made_with_the_user_as_its_admin(users, capsys):
    call_command("create_token", "ann", "--project", "Fresh")
    raw = capsys.readouterr().out.strip()
    project = Project.objects.get(name="Fresh")
    assert roles(project) == {"ann": "admin"} and raw.startswith("ssk_")
    assert ApiToken.objects.get(user=users["ann"]).project == project


def test_another_teams_project_is_refused_and_left_as_it_was(users):
    project = do_create_project("Team B", users["bob"])
    with pytest.raises(CommandError) as refused:
        call_command("create_token", "ann", "--project", "Team B")
    assert "'ann' is not a member of project 'Team B'" in str(refused.value)
    assert roles(project) == {"bob": "admin"} and not ApiToken.objects.exists()


def test_a_member_gets_a_token_in_their_role(users, capsys):
    project = do_create_project("Team B", users["bob"])
    do_add_member(project, users["ann"], Membership.Role.VIEWER)
    call_command("create_token", "ann", "--project", "Team B")
    assert roles(project) == {"bob": "admin", "ann": "viewer"}  # not raised to admin
    assert ApiToken.objects.get(user=users["ann"]).project == project


def test_a_project_with_no_members_is_taken_by_the_user(users, capsys):
    project = do_get_or_create_project("Imported")  # as import_traces makes it
    call_command("create_token", "ann", "--project", "Imported")
    assert roles(project) == {"ann": "admin"}
    assert "ann is now the admin of project 'Imported', which had no members" in capsys.readouterr().err
