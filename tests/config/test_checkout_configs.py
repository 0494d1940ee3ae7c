"""Configs that import other configs (`from galax.configs import ...`) run from a checkout
without `pip install`, where nothing maps configs/ to galax.configs."""

import os
import re
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_IMPORTING = sorted(
  f[:-3]
  for f in os.listdir(os.path.join(ROOT, "configs"))
  if f.endswith(".py")
  and re.search(r"^from galax\.configs import", open(os.path.join(ROOT, "configs", f)).read(), re.M)
)


def _uninstalled(args: list[str], cwd: str) -> subprocess.CompletedProcess:
  """Python without site (-S): the dependencies on PYTHONPATH but no .pth files, so an
  editable install's finder for galax.configs is not there; galax comes from ROOT."""
  paths = sysconfig.get_paths()
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, paths["purelib"], paths["platlib"]]))
  return subprocess.run(
    [sys.executable, "-S", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
  )


def test_the_checkout_sees_no_installed_galax_configs(tmp_path):
  """The premise of the test below: without site, `galax.configs` is not importable."""
  probe = (
    "import importlib.util, galax; print(galax.__file__); "
    "print(importlib.util.find_spec('galax.configs'))"
  )
  out = _uninstalled(["-c", probe], str(tmp_path)).stdout.splitlines()
  assert out == [os.path.join(ROOT, "galax", "__init__.py"), "None"]


@pytest.mark.parametrize("name", _IMPORTING)
def test_a_config_importing_a_config_runs_from_a_checkout(name, tmp_path):
  """The CLI loads the config (ml_collections' loader) and reaches validation: a bad
  total_env_steps is the one error, not ModuleNotFoundError."""
  proc = _uninstalled(
    [
      os.path.join(ROOT, "run.py"),
      f"--config={name}",
      "--config.total_env_steps=0",
      f"--workdir={tmp_path / 'run'}",
    ],
    str(tmp_path),
  )
  assert proc.returncode == 2, proc.stderr[-2000:]
  assert proc.stderr.strip().splitlines()[-1] == (
    "error: config.total_env_steps must be > 0, got 0."
  ), proc.stderr[-2000:]


def test_configs_importing_configs_are_found():
  assert {"minatar_gala", "minatar_hts_a2c", "gala_a2c"} <= set(_IMPORTING)
