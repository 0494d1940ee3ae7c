"""Reliability around runs (issue 14): divergence, resume after a kill, damaged checkpoints,
Ctrl-C, config names, bad workdirs, finished runs, strict result.json and honest headers.

New galax names are imported inside the tests, so that against older code each test
fails on its own assertion rather than the whole module on an import.
"""

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from run_helpers import (
  ROOT,
  STEPS_PER_CALL,
  csv_rows,
  csv_steps,
  run_cli,
  tensorboard_series,
  tiny_config,
)

import galax.training.loop as train_lib
from galax.config import make_algorithm
from galax.parallel.layout import to_host
from galax.runtime import checkpoint as ckpt_lib
from galax.training.loop import train

quiet = lambda _: None


def _diverging(**overrides):
  return tiny_config(
    optimizer__name="sgd", optimizer__learning_rate=1e6, optimizer__max_grad_norm=0.0, **overrides
  )


def _step_wrapper(monkeypatch, wrap):
  """Makes `train` build its algorithm with `step` replaced by wrap(real_step)."""
  real_make = train_lib.make_algorithm

  def make(config):
    algorithm = real_make(config)
    return dataclasses.replace(algorithm, step=wrap(algorithm.step))

  monkeypatch.setattr(train_lib, "make_algorithm", make)


# 1. Divergence.


@pytest.mark.slow
def test_divergence_stops_without_saving_a_nonfinite_checkpoint(tmp_path):
  """The issue's command: sgd at lr 1e6 without clipping."""
  config = _diverging(total_env_steps=40_000)
  with pytest.raises(RuntimeError, match=r"diverged: update \d+ .*non-finite loss"):
    train(config, workdir=str(tmp_path), log=quiet)
  result = json.loads((tmp_path / "result.json").read_text())
  assert result["diverged"] is True and "non-finite" in result["stopped"]
  assert result["env_steps"] < 40_000
  assert not [s for s in os.listdir(tmp_path / "checkpoints") if s.isdigit()]


@pytest.mark.slow
def test_divergence_names_update_and_last_good_checkpoint(tmp_path, monkeypatch):
  """Parameters poisoned before the third call: updates 1-20 are fine, 21 is not."""

  def wrap(step):
    calls = []

    def poisoned_step(state):
      calls.append(1)
      if len(calls) == 3:
        state = state.replace(params=jax.tree.map(lambda x: x * jnp.nan, state.params))
      return step(state)

    return poisoned_step

  _step_wrapper(monkeypatch, wrap)
  config = tiny_config(checkpoint_every_steps=STEPS_PER_CALL)
  with pytest.raises(RuntimeError) as error:
    train(config, workdir=str(tmp_path), log=quiet)
  message = str(error.value)
  assert "update 21 (env step 1680)" in message and "\n" not in message
  assert f"Last good checkpoint: {tmp_path / 'checkpoints' / '1600'}." in message
  assert sorted(os.listdir(tmp_path / "checkpoints")) == ["1600", "800"]


def test_first_nonfinite_names_the_update_and_quantity():
  from galax.core.divergence import first_nonfinite

  ok = np.ones((3, 2), bool)
  bad_late = ok.copy()
  bad_late[2, 1] = False
  bad_early = ok.copy()
  bad_early[1, 0] = False
  flags = {"0000:loss/total": ok, "0001:grad_norm": bad_early, "0002:params/w": bad_late}
  assert first_nonfinite(flags) == (1, "grad_norm", 1)
  assert first_nonfinite({"0000:loss/total": ok}) is None


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["a2c", "a3c", "impala", "ppo", "hts_a2c", "hts_ppo"])
def test_every_algorithm_reports_divergence(tmp_path, algorithm):
  config = _diverging(algorithm=algorithm, total_env_steps=80_000, checkpoint_every_steps=0)
  with pytest.raises(train_lib.Diverged, match="non-finite"):
    train(config, workdir=str(tmp_path), log=quiet)


@pytest.mark.slow
def test_train_closes_its_envs_when_it_finishes_or_diverges(tmp_path, monkeypatch):
  """No env step outlives the run's pools: `train` waits for its programs and closes
  its envs itself, whether it finishes, stops, or fails before its first call (before,
  the pools were left to the garbage collector, and one collected under a running step
  crashed a later program)."""
  closed = []
  real_make = train_lib.make_algorithm

  def make(config):
    algorithm = real_make(config)
    real_close = algorithm.env.close
    algorithm.env.close = lambda: closed.append(config.optimizer.name) or real_close()
    return algorithm

  monkeypatch.setattr(train_lib, "make_algorithm", make)
  config = tiny_config(total_env_steps=STEPS_PER_CALL)
  train(config, workdir=str(tmp_path / "ok"), log=quiet)
  with pytest.raises(train_lib.Diverged):
    train(_diverging(total_env_steps=40_000), workdir=str(tmp_path / "nan"), log=quiet)
  assert closed == ["rmsprop", "sgd"]
  # Before the first call too: a resume of the finished run, and a failure while writing
  # the header (both left the pools open while restore and prepare ran outside `finally`).
  train(config, workdir=str(tmp_path / "ok"), resume=True, log=quiet)

  def full_disk(*args, **kwargs):
    raise OSError("No space left on device")

  monkeypatch.setattr(train_lib.metrics_lib, "MetricsWriter", full_disk)
  with pytest.raises(OSError, match="No space left"):
    train(config, workdir=str(tmp_path / "full"), log=quiet)
  assert closed == ["rmsprop", "sgd", "rmsprop", "rmsprop"]


# 2. Resume after a kill: no duplicated rows, statistics and clocks continue.


def test_a_writer_opened_in_the_same_second_keeps_the_last_ones_events(tmp_path, monkeypatch):
  """tensorboardX names an events file by the second and the host: a resume opened within
  the second of the run before it (a short run, its programs in the compile cache) wrote
  over that run's file, and TensorBoard lost the steps before the checkpoint."""
  import types

  import tensorboardX.event_file_writer as event_file_writer

  from galax.training.metrics import MetricsWriter

  one_second = types.SimpleNamespace(time=lambda: 1_700_000_000.5)
  monkeypatch.setattr(event_file_writer, "time", one_second)
  first = MetricsWriter(str(tmp_path))
  for step in (800, 1600, 2400):
    first.write(step, {"mean_return": 1.0})
  first.close()
  resumed = MetricsWriter(str(tmp_path), resume_step=1600)
  resumed.write(2400, {"mean_return": 2.0})
  resumed.close()
  assert len(os.listdir(tmp_path / "tb")) == 2
  assert tensorboard_series(tmp_path / "tb", "charts/episodic_return") == [800, 1600, 2400]


@pytest.mark.slow
def test_resume_after_kill_drops_rows_after_the_checkpoint(tmp_path):
  config = tiny_config(tensorboard=True)
  first = train(config, workdir=str(tmp_path), log=quiet)
  before = {int(r["env_steps"]): r for r in csv_rows(tmp_path / "metrics.csv")}
  # As if killed after the row at 3200 but before its checkpoint: only 1600 survives.
  for step in ("2400", "3200"):
    shutil.rmtree(tmp_path / "checkpoints" / step, ignore_errors=True)
  (tmp_path / "result.json").unlink()
  second = train(config, workdir=str(tmp_path), resume=True, log=quiet)
  steps = csv_steps(tmp_path / "metrics.csv")
  assert steps == [800, 1600, 2400, 3200]
  for tag in ("charts/episodic_return", "charts/episodes"):  # CleanRL's names
    assert tensorboard_series(tmp_path / "tb", tag) == steps
  rows = {int(r["env_steps"]): r for r in csv_rows(tmp_path / "metrics.csv")}
  # Episodes continue from the checkpoint's count (envs restart, so later counts differ).
  assert int(rows[2400]["episodes"]) > int(before[1600]["episodes"])
  assert float(rows[2400]["wall_time_s"]) > float(before[1600]["wall_time_s"])
  result = json.loads((tmp_path / "result.json").read_text())
  assert result["episodes"] == int(rows[3200]["episodes"]) == second.episodes
  assert result["wall_time_s"] >= float(rows[3200]["wall_time_s"]) > 0
  assert second.episodes > first.episodes / 2


# 3. Damaged checkpoints.


def _two_checkpoints_config():
  return tiny_config(total_env_steps=2 * STEPS_PER_CALL, checkpoint_every_steps=STEPS_PER_CALL)


@pytest.fixture(scope="module")
def two_checkpoints_run(tmp_path_factory):
  """A finished run with checkpoints at 800 and 1600 (trained once, copied per test)."""
  workdir = tmp_path_factory.mktemp("two_checkpoints")
  train(_two_checkpoints_config(), workdir=str(workdir), log=quiet)
  return workdir


@pytest.fixture
def two_checkpoints(tmp_path, two_checkpoints_run):
  shutil.copytree(two_checkpoints_run, tmp_path, dirs_exist_ok=True)
  return _two_checkpoints_config(), tmp_path / "checkpoints"


def _largest_file(directory):
  files = [os.path.join(d, f) for d, _, names in os.walk(directory) for f in names]
  return max(files, key=os.path.getsize)


def _truncate(path):
  with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) // 2)


@pytest.mark.parametrize(
  "damage", ["array_file", "meta/metadata", "state/_METADATA", "commit_success.txt"]
)
@pytest.mark.slow
def test_resume_falls_back_past_a_damaged_checkpoint(two_checkpoints, damage, capsys):
  config, ckpt_dir = two_checkpoints
  latest = ckpt_dir / "1600"
  if damage == "array_file":
    _truncate(_largest_file(latest / "state" / "d"))
  elif damage == "commit_success.txt":  # what an unfinished save would lack
    (latest / damage).unlink()
  else:
    _truncate(latest / damage)
  algorithm = make_algorithm(config)
  checkpointer = ckpt_lib.Checkpointer(str(ckpt_dir))
  capsys.readouterr()
  _, meta = checkpointer.restore(algorithm.init())  # warns with print
  checkpointer.close()
  algorithm.env.close()
  warnings = capsys.readouterr().out.strip().splitlines()
  assert meta["env_steps"] == 800
  assert len(warnings) == 1 and str(latest) in warnings[0] and "damaged" in warnings[0]
  assert "\n" not in warnings[0]
  assert not latest.exists()  # moved aside, so that step 1600 can be saved again


@pytest.mark.slow
def test_resume_with_no_restorable_checkpoint_names_the_directory(tmp_path, two_checkpoints):
  config, ckpt_dir = two_checkpoints
  for step in ("800", "1600"):
    _truncate(ckpt_dir / step / "meta" / "metadata")
  with pytest.raises(FileNotFoundError, match=f"no checkpoint in {ckpt_dir} restores"):
    train(config, workdir=str(tmp_path), resume=True, log=quiet)


@pytest.mark.slow
def test_a_checkpoint_of_another_layout_is_named_and_left_in_place(tmp_path, two_checkpoints):
  """A whole checkpoint that an older galax wrote (layout 1: no `checkpoint_format` in its
  metadata) is not damage: resume stops with one line naming it and moves nothing."""
  config, ckpt_dir = two_checkpoints
  for step in ("800", "1600"):
    meta_file = ckpt_dir / step / "meta" / "metadata"
    meta = json.loads(meta_file.read_text())
    assert meta.pop("checkpoint_format") == ckpt_lib.FORMAT
    meta_file.write_text(json.dumps(meta))
  with pytest.raises(ckpt_lib.FormatError) as error:
    train(config, workdir=str(tmp_path), resume=True, log=quiet)
  message = str(error.value)
  assert "\n" not in message and str(ckpt_dir / "1600") in message and "layout 1" in message
  assert (ckpt_dir / "1600").exists() and (ckpt_dir / "800").exists()


@pytest.mark.slow
def test_a_save_killed_before_its_rename_is_ignored(tmp_path, two_checkpoints):
  """Orbax's tmp directory (what a kill mid-save leaves) is never taken for a checkpoint."""
  config, ckpt_dir = two_checkpoints
  shutil.copytree(ckpt_dir / "1600", ckpt_dir / "2400.orbax-checkpoint-tmp-1")
  lines = []
  train(config, workdir=str(tmp_path), resume=True, log=lines.append)
  assert "at 1600 env steps" in lines[0]


# 4. Ctrl-C.


def _interrupt_on_call(n):
  def wrap(step):
    calls = []

    def interrupted_step(state):
      calls.append(1)
      if len(calls) == n:
        raise KeyboardInterrupt
      return step(state)

    return interrupted_step

  return wrap


@pytest.mark.slow
def test_ctrl_c_saves_and_says_where(tmp_path, monkeypatch):
  _step_wrapper(monkeypatch, _interrupt_on_call(3))
  lines = []
  with pytest.raises(KeyboardInterrupt):
    train(tiny_config(checkpoint_every_steps=0), workdir=str(tmp_path), log=lines.append)
  assert lines[-1] == (
    f"interrupted: saved checkpoint at step 1600 in {tmp_path / 'checkpoints'}; rerun with --resume"
  ), lines[-1]
  assert sorted(os.listdir(tmp_path / "checkpoints")) == ["1600"]


def test_ctrl_c_during_compilation_saves_nothing(tmp_path, monkeypatch):
  _step_wrapper(monkeypatch, _interrupt_on_call(1))
  lines = []
  with pytest.raises(KeyboardInterrupt):
    train(tiny_config(), workdir=str(tmp_path), log=lines.append)
  assert os.listdir(tmp_path) == []  # a fresh run that saved nothing leaves nothing
  assert "nothing new to save" in lines[-1]


@pytest.fixture
def default_ctrl_c():
  """Python's own Ctrl-C handler for the test: a pytest-xdist worker may hold another one
  (e.g. left by a library's event loop), which would swallow the signal."""
  if threading.current_thread() is not threading.main_thread():
    pytest.skip("signal handlers live in the main thread")
  previous = signal.signal(signal.SIGINT, signal.default_int_handler)
  yield
  signal.signal(signal.SIGINT, previous)


def test_ctrl_c_while_a_checkpoint_is_written_is_delivered_after_it(default_ctrl_c):
  """A Ctrl-C that lands mid-save must not cut a periodic save short, nor be dropped
  (ignoring it let the run go on); during the save of a stopping run it is dropped."""
  from galax.runtime.preemption import sigint_deferred

  finished = []
  with pytest.raises(KeyboardInterrupt):
    with sigint_deferred():
      signal.raise_signal(signal.SIGINT)
      finished.append("save")
  assert finished == ["save"]
  assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
  with sigint_deferred(deliver=False):  # the save of a run that is already stopping
    signal.raise_signal(signal.SIGINT)
    finished.append("final save")
  assert finished == ["save", "final save"]
  assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# Slow tier: a whole training run (about 2-8 s). The fast tier checks the mechanism, the
# deferred Ctrl-C around a save, in test_ctrl_c_while_a_checkpoint_is_written_is_delivered_after_it.
@pytest.mark.slow
def test_ctrl_c_during_a_periodic_save_stops_the_run_after_it(
  tmp_path, monkeypatch, default_ctrl_c
):
  real_save = ckpt_lib.Checkpointer.save

  saves = []

  def save_hit_by_ctrl_c(self, env_steps, state, meta):
    saves.append("start")
    signal.raise_signal(signal.SIGINT)  # the user presses Ctrl-C while orbax writes
    real_save(self, env_steps, state, meta)
    saves.append("done")

  monkeypatch.setattr(ckpt_lib.Checkpointer, "save", save_hit_by_ctrl_c)
  lines = []
  with pytest.raises(KeyboardInterrupt):
    train(tiny_config(), workdir=str(tmp_path), log=lines.append)
  # The first periodic save (call 2) ran whole, uncut, and the run stopped right after it.
  assert saves == ["start", "done"]
  steps = sorted(int(s) for s in os.listdir(tmp_path / "checkpoints") if s.isdigit())
  assert steps == [2 * STEPS_PER_CALL]
  assert "interrupted" in lines[-1] and "rerun with --resume" in lines[-1]


def test_ctrl_c_inside_a_tensorboard_write_is_raised_after_it(tmp_path, monkeypatch):
  """tensorboardX puts events on a multiprocessing queue; a Ctrl-C raised inside the put
  could strand the queue's lock, and the close after it waited forever (a CLI run hung
  after "interrupted: saved checkpoint"). The writes hold Ctrl-C back until they end."""
  from tensorboardX import SummaryWriter

  from galax.training.metrics import MetricsWriter

  previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # xdist may ignore it
  writer = MetricsWriter(str(tmp_path))
  finished, add = [], SummaryWriter.add_scalar

  def interrupted_add(self, tag, *args, **kwargs):
    signal.raise_signal(signal.SIGINT)  # Ctrl-C while tensorboardX is writing
    add(self, tag, *args, **kwargs)
    finished.append(tag)

  monkeypatch.setattr(SummaryWriter, "add_scalar", interrupted_add)
  try:
    with pytest.raises(KeyboardInterrupt):
      writer.write(800, {"mean_return": 1.0, "episodes": 3})
    assert finished == ["charts/episodic_return", "charts/episodes"]  # no write cut short
    writer.close()
  finally:
    signal.signal(signal.SIGINT, previous)


@pytest.mark.slow
def test_cli_ctrl_c_is_one_line_and_exit_130(tmp_path):
  proc = subprocess.Popen(
    [
      sys.executable,
      os.path.join(ROOT, "run.py"),
      f"--workdir={tmp_path}",
      "--config.env.id=gymnax/CartPole-v1",
      "--config.total_env_steps=100000000",
      "--config.updates_per_call=10",
      "--config.log_every_steps=800",
      "--config.target_return=0",
    ],
    cwd=ROOT,
    env=dict(os.environ, PYTHONFAULTHANDLER="1"),  # SIGABRT prints every thread's stack
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
    # As from a terminal: a child inherits an ignored SIGINT, and a pytest-xdist worker
    # may ignore it (the run then never stopped, and this test timed out).
    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
  )
  for line in proc.stdout:
    if line.startswith("steps"):
      break
  proc.send_signal(signal.SIGINT)
  try:
    out, err = proc.communicate(timeout=120)
  except subprocess.TimeoutExpired:  # once in a full suite run: say where it hung
    proc.send_signal(signal.SIGABRT)
    out, err = proc.communicate(timeout=30)
    raise AssertionError(f"no exit 120 s after Ctrl-C; stdout: {out!r}; stacks:\n{err}") from None
  assert proc.returncode == 130
  assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
  assert "interrupted: saved checkpoint at step" in out and "rerun with --resume" in out


# 5 and 7. Config names and paths; the experiment CLI shares run.py's guard.


def test_config_path_accepts_names_and_lists_them():
  from galax.config import config_path

  assert config_path("pong_paac").endswith(os.path.join("configs", "pong_paac.py"))
  with pytest.raises(FileNotFoundError, match="not one of .*cartpole_a2c"):
    config_path("configs/nope.py")


# run.py's guard answers before jax is imported (fast); galax.results.experiment imports jax first.
_BAD_CONFIGS = [
  (["--config=configs/nope.py"], "not one of"),
  (["--config=pong_paacc"], "cartpole_a2c"),
  (
    ["--config.envs_per_lerner=4"],
    "Unknown config key 'config.envs_per_lerner' (from --config.envs_per_lerner)."
    " Did you mean 'config.envs_per_learner'",
  ),
  (["--config=pong_paac", "--config.optimizer.anneal_steps=0"], "anneal_steps must be > 0"),
  (["--config=pong_paac", "--config.optimizer.anneal_steps=-5"], "anneal_steps must be > 0"),
  (["--config.optimizer.anneal_steps=100"], "acts only with optimizer.anneal='linear'"),
  (["--config=pong_paac", "--config.network.init=xavier"], "network.init='xavier'"),
  (["--config.env.batch_size=6"], "env.batch_size=6 must divide the 16 envs per learner"),
  (["--config.env.batch_size=32"], "env.batch_size=32 must divide the 16 envs per learner"),
  (["--config=hts_a2c_atari", "--config.env.batch_size=8"], "acts in 'a2c' and 'ppo' only"),
  (["--config.num_learners=2", "--config.env.batch_size=8"], "needs num_learners=1"),
]
# galax.results.experiment runs the same two guards as run.py (galax.config.cli.prepare_argv, before
# jax, for args0-2; cli.guarded around the same config checks, for args3-10): one case of
# each there (each took 6-12 s), every message through run.py.
_EXPERIMENT_CASES = (0, 3)


@pytest.mark.parametrize(
  "module,args,message",
  [
    *[(None, *case) for case in _BAD_CONFIGS],
    *[
      pytest.param("galax.results.experiment", *_BAD_CONFIGS[i], marks=pytest.mark.slow)
      for i in _EXPERIMENT_CASES
    ],
  ],
)
def test_cli_bad_config_is_one_line(module, args, message):
  proc = run_cli(*args, module=module)
  assert proc.returncode == 2
  assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# 6. Unwritable workdir: one line, before envs are built.


def test_unwritable_workdir_is_rejected_before_setup(tmp_path, monkeypatch):
  def no_setup(config):
    raise AssertionError("built the algorithm before checking the workdir")

  monkeypatch.setattr(train_lib, "make_algorithm", no_setup)
  a_file = tmp_path / "file"
  a_file.write_text("x")
  with pytest.raises(ValueError, match="is a file, not a directory"):
    train(tiny_config(), workdir=str(a_file), log=quiet)
  with pytest.raises(ValueError, match="not a writable directory"):
    train(tiny_config(), workdir=str(a_file / "sub"), log=quiet)


def test_unknown_url_scheme_is_rejected_not_made_a_local_directory(tmp_path, monkeypatch):
  """Before: gs://b/x became ./gs:/b/x on the local disk (gs:// itself: test_remote_workdir)."""
  monkeypatch.chdir(tmp_path)
  with pytest.raises(ValueError, match="galax writes to local paths, gs:// and s3://"):
    train(tiny_config(), workdir="ftp://host/runs/x", log=quiet)
  assert not (tmp_path / "ftp:").exists()


@pytest.mark.slow
def test_cli_unwritable_workdir_is_one_line(tmp_path):
  a_file = tmp_path / "file"
  a_file.write_text("x")
  proc = run_cli(f"--workdir={a_file}")
  assert proc.returncode == 2
  assert len(proc.stderr.strip().splitlines()) == 1 and "is a file" in proc.stderr, proc.stderr


# 8. Resuming a finished run.


@pytest.mark.parametrize("how", ["budget", "target"])
@pytest.mark.slow
def test_resume_of_a_finished_run_does_nothing(tmp_path, monkeypatch, how):
  config = tiny_config(
    total_env_steps=40 * STEPS_PER_CALL, target_return=10.0, checkpoint_every_steps=0
  )
  if how == "budget":
    config.total_env_steps, config.target_return = 2 * STEPS_PER_CALL, 0.0
  first = train(config, workdir=str(tmp_path), log=quiet)
  calls = []
  _step_wrapper(monkeypatch, lambda step: lambda s: calls.append(1) or step(s))
  lines = []
  second = train(config, workdir=str(tmp_path), resume=True, log=lines.append)
  assert not calls and second.env_steps == first.env_steps
  assert "already finished" in lines[-1]


# 9. Strict result.json, steps/s without compile time, workdir and effective step count.


@pytest.mark.slow
def test_single_call_run_writes_strict_json(tmp_path):
  train(tiny_config(total_env_steps=STEPS_PER_CALL), workdir=str(tmp_path), log=quiet)

  def reject(constant):
    raise ValueError(f"non-standard JSON constant {constant}")

  result = json.loads((tmp_path / "result.json").read_text(), parse_constant=reject)
  assert result["steps_per_second"] is None


@pytest.mark.slow
def test_first_row_steps_per_second_excludes_compile(tmp_path, monkeypatch):
  """A fake clock: the first (compiling) call takes 100 s, every later call 1 s."""
  clock = [0.0]
  monkeypatch.setattr(train_lib, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))

  def wrap(step):
    def timed_step(state):
      clock[0] += 100.0 if clock[0] == 0.0 else 1.0
      return step(state)

    return timed_step

  _step_wrapper(monkeypatch, wrap)
  config = tiny_config(log_every_steps=2 * STEPS_PER_CALL, checkpoint_every_steps=0)
  train(config, workdir=str(tmp_path), log=quiet)
  rates = [float(r["steps_per_second"]) for r in csv_rows(tmp_path / "metrics.csv")]
  assert rates == [STEPS_PER_CALL, STEPS_PER_CALL]


@pytest.mark.slow
def test_header_names_workdir_and_effective_steps(tmp_path):
  lines = []
  train(tiny_config(total_env_steps=1000), workdir=str(tmp_path), log=lines.append)
  header = "\n".join(lines[:5])  # run, resolved choices, what stops it, rounding, workdir
  assert f"workdir {os.path.abspath(tmp_path)}" in header
  assert "total_env_steps=1000 rounds up to 1600 env steps" in header
  result = json.loads((tmp_path / "result.json").read_text())
  assert (result["requested_env_steps"], result["planned_env_steps"]) == (1000, 1600)


@pytest.mark.slow
def test_resumed_params_match_the_checkpoint(tmp_path):
  """Sanity for the fault-injection check: a restore is bit-exact."""
  config = tiny_config(total_env_steps=STEPS_PER_CALL)
  result = train(config, workdir=str(tmp_path), log=quiet)
  algorithm = make_algorithm(config)
  checkpointer = ckpt_lib.Checkpointer(str(tmp_path / "checkpoints"))
  state, _ = checkpointer.restore(algorithm.init(), warn=quiet)
  checkpointer.close()
  algorithm.env.close()
  for a, b in zip(
    jax.tree.leaves(to_host(result.state.params)), jax.tree.leaves(to_host(state.params))
  ):
    np.testing.assert_array_equal(a, b)


# The fault-injection script, CI-sized, on gymnax's CartPole: the compile cache serves its
# program to every launch and to the reference (the script's default, envpool's CartPole,
# compiles afresh in each).


@pytest.mark.slow
def test_fault_injection_small(tmp_path):
  proc = subprocess.run(
    [
      sys.executable,
      os.path.join(ROOT, "benchmarks", "fault_injection.py"),
      "--kills=2",
      "--total_env_steps=4000",
      "--env_id=gymnax/CartPole-v1",
      f"--workdir={tmp_path}",
    ],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=1200,
  )
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  assert "rows lost: 0" in proc.stdout and "bitwise equal" in proc.stdout


@pytest.mark.parametrize(
  "overrides,message",
  [
    (["--config.network.activation=gelu"], "config.network.activation='gelu' is not one of"),
  ],
)
@pytest.mark.slow
def test_cli_image_env_with_unknown_activation_is_one_line(tmp_path, overrides, message):
  proc = run_cli(
    "--config=minatar_ppo", "--config.network.name=mlp", f"--workdir={tmp_path}", *overrides
  )
  assert proc.returncode == 2
  lines = proc.stderr.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr
