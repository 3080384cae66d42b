"""`swarmscope`, the console script of the full distribution (pyproject.toml `[project.scripts]`):
a thin front for the management commands a user types, beside `manage.py`.

    swarmscope up [--host H] [--port P] [--no-worker]   # = manage.py up
    swarmscope import PATH... [--project NAME] [--reward-score NAME]   # = manage.py import_traces

Each command's own options and `--help` are the management command's (`swarmscope up --help`).
Settings come from the environment as for manage.py (DJANGO_SETTINGS_MODULE defaults to the app's).
Exit status: the command's (1 when it fails with a CommandError), 2 for an unknown command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import django
from django.core.management import get_commands, load_command_class

#: The console script's command -> the management command it runs.
COMMANDS = {"up": "up", "import": "import_traces"}


def main(argv: Sequence[str] | None = None) -> int:
    """Run `swarmscope COMMAND ARGS...` (`argv` without the program name; default sys.argv[1:])."""
    parser = argparse.ArgumentParser(
        prog="swarmscope",
        description="Swarmscope: start the app, import traces.",
        epilog="Options of a command: swarmscope COMMAND --help.",
    )
    parser.add_argument(
        "command",
        choices=list(COMMANDS),
        help="up: start the whole app (= manage.py up); import: import trace files and folders",
    )
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parsed = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.config.settings")
    django.setup()
    name = COMMANDS[parsed.command]
    command = load_command_class(get_commands()[name], name)
    # argv[0] and argv[1] name the program in the command's usage line: "swarmscope import".
    command.run_from_argv(["swarmscope", parsed.command, *parsed.args])
    return 0


if __name__ == "__main__":
    sys.exit(main())
