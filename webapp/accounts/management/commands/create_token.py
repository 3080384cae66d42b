"""`manage.py create_token USER [--project NAME]`: an API token for scripts and clusters (shown once).

The token acts as USER in the project, so USER must be a member of it: a project that does not
exist yet is made with USER as its admin, and so is one that has no members at all (made by
`import_traces`, say); an existing project with members that USER is not one of is refused (its
admins add members on its Members page), never joined as admin behind their backs."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from webapp.accounts.models import Membership, Project
from webapp.accounts.services import (
    DEFAULT_PROJECT,
    do_add_member,
    do_create_token,
    do_get_or_create_project,
)


class Command(BaseCommand):
    help = "Create an API token for USER in a project and print it (it is stored hashed)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--project",
            default=DEFAULT_PROJECT,
            metavar="NAME",
            help="the project's name (not its id); made, with USERNAME as its admin, if missing or memberless; "
            "in an existing project USERNAME must be a member",
        )
        parser.add_argument("--name", default="")

    def handle(self, *args, username, project, name, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        with transaction.atomic():
            existing = Project.objects.select_for_update().filter(name=project).first()
            project_row = existing or do_get_or_create_project(project)
            members = Membership.objects.filter(project=project_row)
            if not members.filter(user=user).exists():
                if members.exists():
                    raise CommandError(
                        f"{username!r} is not a member of project {project!r}; an admin of it adds them on the "
                        "project's Members page (or pass --project with a project of theirs)"
                    )
                do_add_member(project_row, user)
                if existing is not None:
                    self.stderr.write(f"{username} is now the admin of project {project!r}, which had no members")
            _, raw = do_create_token(user, project_row, name)
        self.stdout.write(raw)
