"""SwarmSim runs on numpy and the standard library: importing it loads no torch, Django or Celery."""

import subprocess
import sys

from tests.servers import REPO


def test_importing_swarmsim_loads_no_framework():
    code = (
        "import sys, trainer.sim.stream, trainer.sim.suites, trainer.sim.exact; "
        "print(sorted(m for m in ('torch', 'django', 'celery', 'channels') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
