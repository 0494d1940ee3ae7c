"""The wheel, installed into a fresh venv, imports every module it ships and answers each
console script's --help, from a directory outside the checkout.

galax's dependencies (jax, envpool, ...) are not installed again: the fresh venv reads them
from this interpreter's site-packages through a .pth line, placed after its own, so the
galax it imports is the wheel's (checked), never the checkout or an editable install.
"""

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = ("pyproject.toml", "README.md", "galax", "configs", "experiments")

# Imports every module under the installed galax; prints each failure as one line.
IMPORT_ALL = """
import importlib, os, pkgutil, sys, traceback
import galax
print("galax at", os.path.dirname(galax.__file__))
failed = 0
for m in pkgutil.walk_packages(galax.__path__, "galax."):
  try:
    importlib.import_module(m.name)
  except Exception as e:
    failed += 1
    print(f"FAILED {m.name}: {type(e).__name__}: {e}")
print("modules failed:", failed)
"""


def _run(cmd, cwd, **kw) -> subprocess.CompletedProcess:
  return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> str:
  """A fresh venv with the wheel built from this checkout's sources installed."""
  tmp = tmp_path_factory.mktemp("wheel")
  src = tmp / "src"
  src.mkdir()
  for name in SOURCES:  # a copy: building in place would write build/ into the checkout
    path = os.path.join(ROOT, name)
    if os.path.isdir(path):
      shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
      shutil.copy(path, src / name)
  pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", "dist"]
  built = _run([*pip, str(src)], tmp)
  assert built.returncode == 0, built.stdout + built.stderr
  env_dir = tmp / "venv"
  made = _run([sys.executable, "-m", "venv", str(env_dir)], tmp)
  assert made.returncode == 0, made.stderr
  python = str(env_dir / "bin" / "python")
  (wheel,) = (tmp / "dist").glob("galax_rl-*.whl")
  installed = _run([python, "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], tmp)
  assert installed.returncode == 0, installed.stdout + installed.stderr
  site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp)
  deps = sysconfig.get_paths()["purelib"]  # this interpreter's: jax, envpool, ...
  with open(os.path.join(site.stdout.strip(), "zz_galax_deps.pth"), "w") as f:
    f.write(deps + "\n")
  return str(env_dir)


def _outside(tmp_path) -> dict:
  """Run from an empty directory, with nothing of the checkout on the path."""
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
  return dict(cwd=str(tmp_path), env=env)


@pytest.mark.slow
def test_every_module_the_wheel_ships_imports(venv, tmp_path):
  p = _run([os.path.join(venv, "bin", "python"), "-c", IMPORT_ALL], **_outside(tmp_path))
  assert p.returncode == 0, p.stderr
  assert f"galax at {venv}" in p.stdout, p.stdout  # the wheel's galax, not the checkout's
  assert "modules failed: 0" in p.stdout, p.stdout


@pytest.mark.slow
@pytest.mark.parametrize("script", ["galax", "galax-claims"])
def test_console_scripts_answer_help(venv, tmp_path, script):
  p = _run([os.path.join(venv, "bin", script), "--help"], **_outside(tmp_path))
  assert p.returncode == 0, p.stdout + p.stderr
  assert "--" in p.stdout and "Traceback" not in p.stderr  # its flags, listed
