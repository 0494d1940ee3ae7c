"""Issue 74's small ones, each one line or one visible fact: a config file whose
get_config() returns a plain dict, `galax --version`, `--help_config=NAME`'s own fields, and
an evaluation cadence that rounds to whole calls."""

import importlib.metadata
import os
import sys

import pytest
from run_helpers import ROOT

import galax
from galax.config import cli, run_settings
from galax.runtime import provenance


def test_a_config_file_returning_a_dict_is_one_line(tmp_path, capsys):
  path = tmp_path / "plain.py"
  path.write_text("def get_config():\n  return dict(seed=0)\n")
  expected = (
    f"config file {path}: get_config() returned a dict, not the ConfigDict of "
    "galax.config.base_config() with its fields set (as configs/cartpole_a2c.py does)."
  )
  with pytest.raises(ValueError) as caught:
    galax.load_config(str(path))
  assert str(caught.value) == expected
  with pytest.raises(SystemExit) as exited:
    cli.prepare_argv(["galax", f"--config={path}"], "default.py")
  assert exited.value.code == 2
  assert capsys.readouterr().err == f"error: {expected}\n"


def test_version_names_the_distribution_and_the_checkouts_commit(monkeypatch, capsys):
  from galax import __main__ as command

  monkeypatch.setattr(sys, "argv", ["galax", "--version"])
  with pytest.raises(SystemExit) as exited:
    command.run()
  assert exited.value.code == 0
  line = capsys.readouterr().out.strip()
  assert line.startswith(f"galax-rl {importlib.metadata.version('galax-rl')}")
  if os.path.exists(os.path.join(ROOT, ".git")):  # run from a checkout: its commit too
    assert f" at commit {provenance.git_info()['commit'][:12]}" in line


def test_help_config_of_a_config_lists_the_fields_it_changes_first():
  from galax.config import help as config_help

  lines = config_help.describe("pong_fast")
  changed = int(lines[1].split(" changes ")[1].split()[0])
  assert lines[1].startswith("pong_fast changes ") and lines[1].endswith("schema's defaults:")
  own, rest = lines[2 : 2 + changed], lines[3 + changed :]
  assert lines[2 + changed].startswith(f"The other {len(rest)}, at the schema's defaults")
  assert all(" (schema: " in line for line in own) and not [x for x in rest if "(schema: " in x]
  assert "  env.id = 'Pong-v5' (schema: 'CartPole-v1')" in "\n".join(own)
  assert "  target_return = 18.0 (schema: 0.0)" in "\n".join(own)


def test_evaluations_come_evenly_at_whole_calls_and_the_header_says_so():
  """eval.every_steps=10000 in calls of 8000 env steps evaluated at 16k, 24k, 32k, 40k, 56k
  (8k and 16k apart); now every 2 calls, as the header's line says."""
  import types

  from run_helpers import header_lines_for, tiny_config

  from galax.evaluate import periodic

  hook = types.SimpleNamespace(every=10_000)
  due, evaluated = periodic.EvalHook.next_due(hook, 0), []
  for steps in range(8_000, 80_001, 8_000):  # the loop's test after each call
    if steps >= due:
      evaluated.append(steps)
      due = periodic.EvalHook.next_due(hook, steps)
  assert evaluated == [16_000, 32_000, 48_000, 64_000, 80_000]
  lines = header_lines_for(tiny_config(eval__every_steps=1000))
  rounded = "eval.every_steps=1000 rounds up to every 1600 env steps (whole calls of 800 env steps)"
  assert rounded in lines


def test_a_cartpole_video_prints_no_gymnasium_warnings():
  """envpool's CartPole warned (in raw colour codes) about its Box bounds at each video."""
  import warnings

  import numpy as np

  from galax.envs import video

  config = galax.load_config("cartpole_a2c")
  policy = lambda obs, key: np.zeros(len(obs), np.int32)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    frames = video.record(run_settings(config).env, policy, episodes=1, seed=0)
  assert frames and not [str(w.message) for w in caught], [str(w.message) for w in caught]
