"""The installed training command: `galax` (pyproject's [project.scripts]), `python -m
galax` and run.py are one command."""

import os
import subprocess
import sys
import tomllib

import forked_runs
import pytest
from run_helpers import ROOT, run_cli

from galax.config import cli, config_names
from galax.config import load as load_config


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


@pytest.mark.parametrize(
  "arg, hint",
  [
    ("--seed=1", "did you mean --config.seed=1?"),
    ("--env-id=Pong-v5", "did you mean --config.env.id=Pong-v5?"),
    ("--total-timesteps=100000", "did you mean --config.total_env_steps=100000?"),
    ("--num_envs=8", "did you mean --config.envs_per_learner=8?"),
    ("--learning-rate=3e-4", "did you mean --config.optimizer.learning_rate=3e-4?"),
    ("--algo=ppo", "did you mean --config.algorithm=ppo?"),
    ("--sed=1", None),
  ],
)
def test_cleanrl_and_sb3_flags_point_to_their_config_field(arg, hint):
  assert cli.habit(arg) == (f"unknown flag {arg.split('=')[0]}: {hint}" if hint else None)


def test_an_integral_float_becomes_an_int_for_an_int_field():
  config = load_config("cartpole_a2c")
  assert cli._integral(config, "--config.total_env_steps=1e5") == "--config.total_env_steps=100000"
  assert cli._integral(config, "--config.total_env_steps=1.5e3") == "--config.total_env_steps=1500"
  kept = ["--config.total_env_steps=1.5", "--config.gamma=1e-1", "--config.tensorboard=1"]
  assert [cli._integral(config, a) for a in kept] == kept  # not integral, a float, a bool


BAD_INPUT = [
  (None, ["--seed=1"], "error: unknown flag --seed: did you mean --config.seed=1?"),
  (
    "from galax.config import base_config\ndef get_config():\n  c = base_config()\n"
    "  c.envs_per_lerner = 3\n  return c\n",
    [],
    "line 4: no field 'envs_per_lerner'. Did you mean 'config.envs_per_learner'?",
  ),
  ("def get_config(:\n  pass\n", [], "line 1: invalid syntax"),
]


@pytest.fixture(scope="module")
def bad_input_answers(tmp_path_factory):
  """run.py with each bad flag or config file, in forks of one interpreter."""
  root = tmp_path_factory.mktemp("bad_input")
  commands = {}
  for i, (source, args, expected) in enumerate(BAD_INPUT):
    if source is not None:
      (root / f"bad{i}.py").write_text(source)
      args = [f"--config={root / f'bad{i}.py'}"]
    commands[expected] = [os.path.join(ROOT, "run.py"), *args, f"--workdir={root / f'run{i}'}"]
  return forked_runs.run(commands, root, preload=forked_runs.CLI_PRELOAD)


@pytest.mark.slow  # CLI subprocesses
@pytest.mark.parametrize("source, args, expected", BAD_INPUT)
def test_bad_flags_and_config_files_are_one_line(bad_input_answers, source, args, expected):
  proc = bad_input_answers[expected]
  lines = proc["stderr"].strip().splitlines()
  assert proc["returncode"] == 2 and len(lines) == 1 and expected in lines[0], proc["stderr"]


@pytest.mark.slow  # a CLI subprocess
def test_a_step_count_written_1e3_runs(tmp_path):
  proc = run_cli(
    "--config.env.id=gymnax/CartPole-v1",
    "--config.total_env_steps=1.6e3",
    "--config.updates_per_call=10",
    "--config.target_return=0",
    f"--workdir={tmp_path}",
  )
  assert proc.returncode == 0 and "done: 1600 steps" in proc.stdout, proc.stderr[-1000:]


_CTRL_C_AT_EXIT = """
import atexit, os, signal, time
from absl import app
from galax.config import cli

def main(argv):  # the command's work done; jax's own exit handlers run after this one
  atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(5)))

app.run(cli.guarded(main))
"""


def test_a_ctrl_c_after_the_command_ends_the_process_without_a_traceback():
  """Ctrl-C just after a run's `done:` line landed in an exit handler: Python printed
  "Exception ignored in atexit callback" and a KeyboardInterrupt traceback (at 6f91954)."""
  proc = subprocess.run(
    [sys.executable, "-c", _CTRL_C_AT_EXIT], capture_output=True, text=True, timeout=60
  )
  assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
  assert proc.returncode == -2  # ended by the signal, as a shell's Ctrl-C ends a program
