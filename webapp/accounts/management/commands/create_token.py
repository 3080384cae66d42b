"""`manage.py create_token USER [--project NAME]`: an API token for scripts and clusters (shown once)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

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
            help="the project's name (not its id); made, with USERNAME as its admin, if missing",
        )
        parser.add_argument("--name", default="")

    def handle(self, *args, username, project, name, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        project_row = do_get_or_create_project(project)
        if not user.memberships.filter(project=project_row).exists():
            do_add_member(project_row, user)
        _, raw = do_create_token(user, project_row, name)
        self.stdout.write(raw)
