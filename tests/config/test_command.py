"""The installed training command: `galax` (pyproject's [project.scripts]), `python -m
galax` and run.py are one command."""

import os
import subprocess
import sys
import tomllib

import pytest
from run_helpers import ROOT, run_cli

from galax.config import config_names


def test_pyproject_installs_the_galax_command():
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
    project = tomllib.load(f)["project"]
  assert project["scripts"]["galax"] == "galax.__main__:run"
  assert project["urls"]["Repository"].startswith("https://")


@pytest.mark.slow
def test_galax_command_lists_every_config_in_its_help(tmp_path):
  script = os.path.join(os.path.dirname(sys.executable), "galax")
  if not os.path.exists(script):
    pytest.skip("galax is not installed in this environment (pip install -e .)")
  proc = subprocess.run(
    [script, "--help"], capture_output=True, text=True, cwd=tmp_path, timeout=120
  )
  assert proc.returncode == 0, proc.stderr[-2000:]
  help_text = " ".join(proc.stdout.split())
  for name in config_names():
    assert name in help_text
  assert "--config.<field>=<value>" in help_text and "--resume" in help_text


@pytest.mark.slow
def test_python_m_galax_trains_like_run_py(tmp_path):
  proc = run_cli(
    "--config=cartpole_a2c",
    "--config.env.id=gymnax/CartPole-v1",
    "--config.total_env_steps=800",
    "--config.updates_per_call=10",
    "--config.tensorboard=False",
    f"--workdir={tmp_path}",
    module="galax",
  )
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert "done: 800 steps" in proc.stdout
  assert (tmp_path / "result.json").exists()
