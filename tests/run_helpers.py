"""Helpers for tests of whole runs: a tiny CartPole config, the CLI, metrics files."""

import csv
import glob
import os
import struct
import subprocess
import sys
import types

from galax.config import from_data, run_settings
from galax.config import load as load_config
from galax.training.settings import loop_settings

ROOT = os.path.join(os.path.dirname(__file__), "..")
STEPS_PER_CALL = 800  # 10 updates x 16 envs x t_max 5


def tiny_config(**overrides):
  """CartPole A2C in calls of 800 env steps, a row per call, checkpoints every 2 calls.

  On gymnax's CartPole, not envpool's: an envpool program carries its pool's handle, so
  the suite's compile cache never serves a rebuild of it, while the runs of this config
  in both workers share one compile. Tests of envpool itself ask for it."""
  defaults = dict(
    updates_per_call=10,
    total_env_steps=4 * STEPS_PER_CALL,
    log_every_steps=STEPS_PER_CALL,
    checkpoint_every_steps=2 * STEPS_PER_CALL,
    keep_checkpoints=10,
    target_return=0.0,
    tensorboard=False,
  )
  config = load_config("cartpole_a2c", **{"env__id": "gymnax/CartPole-v1", **defaults, **overrides})
  return config


def run_cli(*args, module=None, timeout=180):
  """Runs run.py (or `python -m module`) with args; returns the CompletedProcess."""
  command = (
    [sys.executable, "-m", module] if module else [sys.executable, os.path.join(ROOT, "run.py")]
  )
  return subprocess.run(
    [*command, *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
  )


def csv_rows(path):
  with open(path, newline="") as f:
    return list(csv.DictReader(f))


def csv_steps(path):
  return [int(row["env_steps"]) for row in csv_rows(path)]


def tensorboard_events(logdir):
  """Every event of the event files in `logdir`, in file order (TFRecord framing)."""
  from tensorboardX.proto import event_pb2

  events = []
  for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
    with open(path, "rb") as f:
      data = f.read()
    i = 0
    while i + 12 <= len(data):
      (length,) = struct.unpack("<Q", data[i : i + 8])
      event = event_pb2.Event()
      event.ParseFromString(data[i + 12 : i + 12 + length])
      events.append(event)
      i += 12 + length + 4
  return events


def tensorboard_series(logdir, tag):
  """The steps TensorBoard shows for `tag`: a purge (session START at step s) drops >= s."""
  from tensorboardX.proto import event_pb2

  steps = []
  for event in tensorboard_events(logdir):
    if event.HasField("session_log") and event.session_log.status == event_pb2.SessionLog.START:
      steps = [s for s in steps if s < event.step]
    for value in event.summary.value:
      if value.tag == tag:
        steps.append(event.step)
  return steps


def header_lines_for(config, obs_shape=(4,), plan=None):
  """`galax.training.header.header_lines` for `config` on a stand-in algorithm (1 learner x
  16 envs, 40 updates of 80 env steps, 10 a call; `plan` default: a CPU plan): no JAX
  program is built."""
  from galax.training.header import header_lines

  algorithm = types.SimpleNamespace(
    setup=types.SimpleNamespace(settings=run_settings(config)),
    total_updates=40,
    env_steps_per_update=80,
    updates_per_call=10,
    layout=types.SimpleNamespace(num_learners=1, envs_per_learner=16, num_devices=1),
    plan=plan or types.SimpleNamespace(platform="cpu", describe=lambda: "..."),
    env=types.SimpleNamespace(spec=types.SimpleNamespace(obs_shape=obs_shape)),
  )
  planned = dict(requested_env_steps=3200, planned_env_steps=3200)
  return header_lines(
    algorithm, loop_settings(from_data(config), algorithm.setup.settings), planned
  )


def fake_run_record(name, seed, values, minutes=1.0, offset=0.0, config=None, workdir=""):
  """A run record (`galax.results.experiment`'s kind) of Breakout-MinAtar with one
  evaluation per value, 10 equal episodes of value + offset each, `minutes` apart."""
  evaluations = [
    dict(
      env_steps=320 * (e + 1),
      train_time_s=10.0 + 60.0 * minutes * (e + 1),
      returns=[v + offset] * 10,
    )
    for e, v in enumerate(values)
  ]
  return dict(
    kind="galax-run",
    name=name,
    method=name,
    env_id="gymnax/Breakout-MinAtar",
    seed=seed,
    evaluations=evaluations,
    compile_time_s=10.0,
    steps_per_second=100.0,
    env_steps=320 * len(values),
    config=config or {},
    workdir=workdir,
  )


def pip_installed(target, packages):
  """`packages` pip-installed once into `target` (--no-deps --target; a marker file says it
  is done), for tests that put them on PYTHONPATH; skips the test where pip cannot."""
  import pytest

  marker = os.path.join(target, ".installed")
  if not os.path.exists(marker):
    proc = subprocess.run(
      [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", target, *packages],
      capture_output=True,
      text=True,
      timeout=900,
    )
    if proc.returncode != 0:
      pytest.skip(f"could not install {packages}: {proc.stderr.strip()[-300:]}")
    open(marker, "w").close()
  return target


def plan_of(config, target, spec=None):
  """The execution plan of `config` on a `PlanContext` (its algorithm's spec by default)."""
  from galax.algorithms import spec_for
  from galax.framework.plan import make_plan

  spec = spec or spec_for(config.algorithm)
  return make_plan(run_settings(config, spec), spec, target)
