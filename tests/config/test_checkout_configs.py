"""Configs that build on other configs (`galax.config.load(name)`) or on the presets
(`galax.config.presets`) run from a checkout without `pip install`, where nothing maps
configs/ to galax.configs: no config imports the galax.configs package, and galax binds
no package at import."""

import os
import re
import subprocess
import sys
import sysconfig

import forked_runs
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _builds_on_others(text: str) -> bool:
  """A config that loads another config or uses the presets."""
  return bool(re.search(r"^from galax\.config(\.presets)? import (load|.*atari)", text, re.M))


_IMPORTING = sorted(
  f[:-3]
  for f in os.listdir(os.path.join(ROOT, "configs"))
  if f.endswith(".py") and _builds_on_others(open(os.path.join(ROOT, "configs", f)).read())
)


def _uninstalled_env() -> dict[str, str]:
  """Python without site (-S): the dependencies on PYTHONPATH but no .pth files, so an
  editable install's finder for galax.configs is not there; galax comes from ROOT."""
  paths = sysconfig.get_paths()
  return dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, paths["purelib"], paths["platlib"]]))


def _uninstalled(args: list[str], cwd: str) -> subprocess.CompletedProcess:
  return subprocess.run(
    [sys.executable, "-S", *args],
    capture_output=True,
    text=True,
    cwd=cwd,
    env=_uninstalled_env(),
    timeout=120,
  )


def test_the_checkout_sees_no_installed_galax_configs(tmp_path):
  """The premise of the test below: without site, `galax.configs` is not importable."""
  probe = (
    "import importlib.util, galax; print(galax.__file__); "
    "print(importlib.util.find_spec('galax.configs'))"
  )
  out = _uninstalled(["-c", probe], str(tmp_path)).stdout.splitlines()
  assert out == [os.path.join(ROOT, "galax", "__init__.py"), "None"]


@pytest.fixture(scope="module")
def checkout_runs(tmp_path_factory):
  """run.py with each config and a bad budget, in forks of one -S interpreter."""
  out = tmp_path_factory.mktemp("checkout")
  commands = {
    name: [
      os.path.join(ROOT, "run.py"),
      f"--config={name}",
      "--config.total_env_steps=0",
      f"--workdir={out / name}",
    ]
    for name in _IMPORTING
  }
  return forked_runs.run(
    commands,
    out,
    env=_uninstalled_env(),
    cwd=str(out),
    preload=forked_runs.CLI_PRELOAD,
    python_flags=["-S"],
  )


@pytest.mark.parametrize("name", _IMPORTING)
def test_a_config_importing_a_config_runs_from_a_checkout(checkout_runs, name):
  """The CLI loads the config (ml_collections' loader) and reaches validation: a bad
  total_env_steps is the one error, not ModuleNotFoundError."""
  proc = checkout_runs[name]
  assert proc["returncode"] == 2, proc["stderr"][-2000:]
  assert proc["stderr"].strip().splitlines()[-1] == (
    "error: config.total_env_steps must be > 0, got 0."
  ), proc["stderr"][-2000:]


def test_configs_importing_configs_are_found():
  assert {"minatar_gala", "minatar_hts_a2c", "gala_a2c", "pong_fast"} <= set(_IMPORTING)


def test_no_config_imports_the_galax_configs_package():
  """Configs reach each other through `galax.config.load` (a file loaded by path), so
  nothing needs galax to bind a `galax.configs` package at import."""
  pattern = re.compile(r"^\s*(from|import) galax\.configs", re.M)
  folder = os.path.join(ROOT, "configs")
  importing = [
    f
    for f in sorted(os.listdir(folder))
    if f.endswith(".py") and pattern.search(open(os.path.join(folder, f)).read())
  ]
  assert not importing, importing
  probe = "import sys, galax.config; print('galax.configs' in sys.modules)"
  assert _uninstalled(["-c", probe], ROOT).stdout.split() == ["False"]
