"""A resume changes nothing the run learns unless the command names it (issue 74, items 3
and 4): a longer `total_env_steps` keeps the linear lr anneal's end, and `time_limit_s`
counts each sitting's training time, both recorded in config_changes.json.

At d776273 the first test fails (the lr after the resume is above 0: the anneal was
stretched to the new length) and so does the second (the resume said "nothing to do:
... already finished (time limit ...)": the limit counted the run's earlier sittings).
"""

import json

import pytest
from run_helpers import STEPS_PER_CALL, csv_rows, tiny_config

from galax.config import load
from galax.training.loop import train

# minatar_a2c in calls of 2 updates of 4 envs x t_max 16 (128 agent steps): a budget of
# 1000 steps is 8 calls (1024 steps, 16 updates), where the linear anneal reaches 0.
CALL = 128


def _minatar(total_env_steps):
  return load(
    "minatar_a2c",
    envs_per_learner=4,
    updates_per_call=2,
    total_env_steps=total_env_steps,
    log_every_steps=CALL,
    checkpoint_every_steps=0,
    tensorboard=False,
  )


def _rates(workdir):
  return {int(r["env_steps"]): float(r["learning_rate"]) for r in csv_rows(workdir / "metrics.csv")}


def _changes(workdir):
  return json.loads((workdir / "config_changes.json").read_text())


@pytest.mark.slow
def test_a_longer_resume_keeps_the_lr_anneal_s_end(tmp_path):
  train(_minatar(1000), workdir=str(tmp_path), log=lambda _: None)
  assert _rates(tmp_path)[1024] == 0.0  # the anneal's end: the run's last update
  lines = []
  train(_minatar(2000), workdir=str(tmp_path), resume=True, log=lines.append)
  rates = _rates(tmp_path)
  assert rates[1024 + CALL] == 0.0 and rates[2048] == 0.0  # past its end, it stays 0
  said = [line for line in lines if line.startswith("resume changes optimizer.anneal_steps")]
  assert said == [
    "resume changes optimizer.anneal_steps null -> 1024 (kept: the lr anneal still ends at "
    "agent step 1024, the run's length as it started; --config.optimizer.anneal_steps=N "
    "moves it) from env step 1024 (config_changes.json)"
  ]
  assert [(c["field"], c["saved"], c["new"], c["env_steps"]) for c in _changes(tmp_path)] == [
    ("total_env_steps", 1000, 2000, 1024),
    ("optimizer.anneal_steps", None, 1024, 1024),
  ]
  assert json.loads((tmp_path / "config.json").read_text())["optimizer"]["anneal_steps"] == 1024
  # A command that names the end moves it, recorded too: the lr is above 0 again.
  moved = _minatar(3000)
  moved.optimizer.anneal_steps = 4096
  train(moved, workdir=str(tmp_path), resume=True, log=lambda _: None)
  assert _rates(tmp_path)[2048 + CALL] > 0.0
  assert _changes(tmp_path)[-1] == dict(
    env_steps=2048, field="optimizer.anneal_steps", saved=1024, new=4096
  )


@pytest.mark.slow
def test_the_time_limit_counts_each_sitting(tmp_path):
  """Each sitting stops at its own limit (a resume trains again), and a changed limit is
  recorded with the step it took effect."""
  limit = 1e-6  # stops after each sitting's first call
  first = train(tiny_config(time_limit_s=limit), workdir=str(tmp_path), log=lambda _: None)
  assert (first.stopped, first.env_steps) == ("time limit", STEPS_PER_CALL)
  lines = []
  again = train(
    tiny_config(time_limit_s=limit), workdir=str(tmp_path), resume=True, log=lines.append
  )
  assert not any(line.startswith("nothing to do") for line in lines), lines
  assert (again.stopped, again.env_steps) == ("time limit", 2 * STEPS_PER_CALL)
  longer = train(
    tiny_config(time_limit_s=2 * limit), workdir=str(tmp_path), resume=True, log=lines.append
  )
  assert longer.env_steps == 3 * STEPS_PER_CALL
  assert _changes(tmp_path) == [
    dict(env_steps=2 * STEPS_PER_CALL, field="time_limit_s", saved=limit, new=2 * limit)
  ]
  assert any(
    line.startswith("resume changes time_limit_s (run 1e-06, command 2e-06)") for line in lines
  )
