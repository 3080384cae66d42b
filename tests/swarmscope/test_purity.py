"""swarmscope stays pure: importing all of it loads no Django, Channels, Celery or torch."""

import subprocess
import sys

from tests.servers import REPO


def test_importing_all_of_swarmscope_loads_no_framework():
    code = (
        "import sys, pkgutil, importlib, swarmscope\n"
        "for m in pkgutil.walk_packages(swarmscope.__path__, 'swarmscope.'): importlib.import_module(m.name)\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'django', 'channels', 'celery', 'torch', 'daphne'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_client_needs_only_the_standard_library():
    code = (
        "import sys, swarmscope.client\n"
        "print(sorted(n for n in sys.modules if n.startswith(('django', 'torch', 'webapp', 'numpy', 'networkx'))))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
