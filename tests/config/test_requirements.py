"""An unsupported Python or jax: one line naming what to install (galax/runtime/requirements.py)."""

import glob
import os
import re
import shlex
import subprocess
import sys

import pytest

from galax.runtime import requirements

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_supported_versions_pass():
  assert requirements.problem((3, 12, 1), "0.11.2") is None
  assert requirements.problem((3, 13, 0), "0.11.3") is None


@pytest.mark.parametrize(
  "python, jax, words",
  [
    ((3, 11, 7), "0.11.2", "galax needs Python >= 3.12 (jax 0.11), this is Python 3.11.7"),
    ((3, 12, 1), "0.10.2", "galax needs jax >= 0.11.2, < 0.12 (found jax 0.10.2)"),
    ((3, 12, 1), "0.11.1", "(found jax 0.11.1)"),
    ((3, 12, 1), "0.12.0.1", "(found jax 0.12.0.1)"),
    ((3, 12, 1), "0.11.2rc1", None),  # a release candidate of 0.11.2 counts as 0.11.2
  ],
)
def test_each_problem_is_one_line_naming_what_to_install(python, jax, words):
  message = requirements.problem(python, jax)
  if words is None:
    assert message is None
    return
  assert words in message and "pip install" in message and "\n" not in message


def _command(python: str, env: dict) -> subprocess.CompletedProcess:
  return subprocess.run(
    [python, os.path.join(ROOT, "run.py"), "--help"],
    capture_output=True,
    text=True,
    env=env,
    cwd=ROOT,
    timeout=120,
  )


@pytest.mark.slow
def test_the_command_with_another_jax_says_one_line(tmp_path):
  """The command under an installed jax 0.10.2 (its metadata first on the path)."""
  info = tmp_path / "jax-0.10.2.dist-info"
  info.mkdir()
  (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jax\nVersion: 0.10.2\n")
  env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
  proc = _command(sys.executable, env)
  assert proc.returncode == 2
  assert proc.stderr.strip().splitlines() == [
    "error: galax needs jax >= 0.11.2, < 0.12 (found jax 0.10.2): pip install "
    "'jax>=0.11.2,<0.12' (or pip install -e '.[test]' in a venv of Python >= 3.12 (README))"
  ]


@pytest.mark.slow
def test_the_command_on_python_3_11_says_one_line():
  found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.11*/bin/python3")))
  if not found:
    pytest.skip("no Python 3.11 on this machine")
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
  env["PYTHONPATH"] = ROOT
  proc = _command(found[-1], env)
  assert proc.returncode == 2
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: galax needs Python >= 3.12")


@pytest.mark.slow
def test_the_readme_install_on_python_3_11_says_one_line(tmp_path):
  """The README's first command, up to its pip install, on Python 3.11 in a throwaway venv:
  one ERROR line naming the Python galax needs (the pip that ships with 3.11 resolved jax
  first and listed ~200 jax versions). Needs PyPI, for --upgrade-deps's pip."""
  found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.11*/bin/python3")))
  if not found:
    pytest.skip("no Python 3.11 on this machine")
  with open(os.path.join(ROOT, "README.md")) as f:
    first = f.read().split("```")[1].splitlines()[1]
  install = first.split(" && python run.py")[0]
  command = (
    install.replace("python3 ", f"{found[-1]} ", 1)
    .replace(".venv", str(tmp_path / "venv"))
    .replace("'.[test]'", shlex.quote(ROOT + "[test]"))
  )
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
  proc = subprocess.run(
    ["bash", "-c", command], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
  )
  errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
  if not errors and re.search(r"NewConnectionError|name resolution|Could not fetch", proc.stderr):
    pytest.skip("no network for the venv's pip")
  assert proc.returncode != 0
  assert len(errors) == 1 and re.fullmatch(
    r"ERROR: Package 'galax-rl' requires a different Python: 3\.11\.\d+ not in '>=3\.12'",
    errors[0],
  ), proc.stderr[-2000:]
