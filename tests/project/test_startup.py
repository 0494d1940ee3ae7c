"""The commands' start-up: `--help` (and every command before it needs them) loads no
package that only one path needs; here galax's commands and experiments/reference_ppo.py.
Many tests launch `python run.py` or `python -m galax.evaluate` as subprocesses, and users
pay it on every command (issue 73).

Measured 2026-12-07 on the 2-core EPYC beside a training run (`python -X importtime -c
"import galax.__main__"`): tensorboardX 0.25 s (with google.cloud.storage, which it pulls
in), orbax.checkpoint 0.28 s, of `import galax`'s 1.98 s; jax is 0.85 s of it.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Imported where they are used: the TensorBoard writer (galax/training/metrics.py), the
# checkpoints' save and restore (galax/runtime/checkpoint.py, galax/evaluate/cli.py).
LATE = ("tensorboardX", "google.cloud.storage", "orbax.checkpoint")

# Runs a command's entry point on --help in this process, then prints which of `late` it loaded.
_CODE = """
import importlib, sys
module, function = sys.argv[1].rsplit(":", 1)
sys.argv = [module, "--help"]
try:
  getattr(importlib.import_module(module), function)()
except SystemExit as e:
  assert e.code in (0, None), e.code
print("loaded:", sorted(m for m in {late} if m in sys.modules))
"""


@pytest.mark.parametrize(
  "entry, late",
  [
    ("galax.__main__:run", LATE),
    ("galax.evaluate.cli:run", LATE),
    # gymnax, with the seaborn, pandas and matplotlib it pulls in: 1.7 s of user CPU.
    ("experiments.reference_ppo:main", ("gymnax",)),
  ],
)
def test_help_loads_no_late_package(entry, late):
  """`galax --help` (run.py, `python -m galax`) and `python -m galax.evaluate --help` import
  none of LATE (each did at c77d545, where `import galax` took them all), and the reference
  PPO's --help no gymnax (it did at c1fe357)."""
  out = subprocess.run(
    [sys.executable, "-c", _CODE.format(late=late), entry],
    capture_output=True,
    text=True,
    cwd=ROOT,
    env=dict(os.environ, JAX_PLATFORMS="cpu"),
    timeout=120,
  )
  assert out.returncode == 0, out.stderr[-1000:]
  assert out.stdout.splitlines()[-1] == "loaded: []", out.stdout[-1000:]
