"""Preemption (issue 33, part 1): SIGTERM lets the current call finish, saves it, prints one
`preempted:` line and exits 143; in a multi-process job every process saves the same step.

New galax names are imported inside the tests, so that against older code each test
fails on its own assertion rather than the whole module on an import.
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from run_helpers import ROOT, STEPS_PER_CALL, csv_steps, tiny_config

import galax.training.loop as train_lib
from galax.runtime import checkpoint as ckpt_lib
from galax.training.loop import train

# CartPole in calls of 800 env steps (16 envs x t_max 5 x 10 updates), a row per call, no
# periodic checkpoints. gymnax's CartPole, as run_helpers.tiny_config: the compile cache
# serves its program to every process (an envpool program carries its pool's handle).
CALLS = [
  "--config=cartpole_a2c",
  "--config.env.id=gymnax/CartPole-v1",
  "--config.updates_per_call=10",
  "--config.log_every_steps=800",
  "--config.target_return=0",
  "--config.checkpoint_every_steps=0",
  "--config.tensorboard=False",
]


class SigtermReachedTheTest(Exception):
  """Raised by the test's own handler: nothing in galax caught the SIGTERM."""


def _test_handler(signum, frame):
  del signum, frame
  raise SigtermReachedTheTest


@pytest.fixture
def test_sigterm_handler():
  """A SIGTERM that galax does not handle raises here instead of killing pytest."""
  if threading.current_thread() is not threading.main_thread():
    pytest.skip("signal handlers live in the main thread")
  previous = signal.signal(signal.SIGTERM, _test_handler)
  yield
  assert signal.getsignal(signal.SIGTERM) is _test_handler  # train put it back
  signal.signal(signal.SIGTERM, previous)


def _signal_on_call(monkeypatch, n, signum=signal.SIGTERM, times=1, inside=False):
  """`train`'s step sends this process `signum` `times` times in call n: as the call starts
  (before its jitted work), or `inside` it, after the jitted step has taken (donated) the
  state and before it returns the new one."""
  real_make = train_lib.make_algorithm

  def make(config):
    algorithm = real_make(config)
    calls = []

    def step(state):
      calls.append(1)
      fire = times if len(calls) == n else 0
      for _ in range(0 if inside else fire):
        signal.raise_signal(signum)
      new = algorithm.step(state)  # donates `state`
      for _ in range(fire if inside else 0):
        signal.raise_signal(signum)
      return new

    return dataclasses.replace(algorithm, step=step)

  monkeypatch.setattr(train_lib, "make_algorithm", make)


def _sigterm_on_call(monkeypatch, n):
  """`train`'s step sends this process SIGTERM as call n starts (before its jitted work)."""
  _signal_on_call(monkeypatch, n)


def _checkpoints(tmp_path):
  return sorted(int(s) for s in os.listdir(tmp_path / "checkpoints") if s.isdigit())


def _preempted(config, workdir):
  """Runs `train`; returns (its exit status, its lines) after the SIGTERM stop."""
  lines = []
  with pytest.raises(SystemExit) as stop:
    train(config, workdir=workdir and str(workdir), log=lines.append)
  return stop.value.code, lines


@pytest.mark.slow
@pytest.mark.parametrize("call", [1, 3])  # 1: during compilation
def test_sigterm_finishes_the_call_saves_it_and_exits_143(
  tmp_path, monkeypatch, test_sigterm_handler, call
):
  _sigterm_on_call(monkeypatch, call)
  status, lines = _preempted(tiny_config(checkpoint_every_steps=0), tmp_path)
  step = call * STEPS_PER_CALL
  assert status == 143
  assert lines[-1] == (
    f"preempted: saved checkpoint at step {step} in {tmp_path / 'checkpoints'}; rerun with --resume"
  )
  assert [l for l in lines if l.startswith("preempted")] == lines[-1:]
  assert _checkpoints(tmp_path) == [step]
  assert (tmp_path / "checkpoints" / str(step) / ckpt_lib.COMMIT_MARKER).exists()
  result = json.loads((tmp_path / "result.json").read_text())
  assert result["stopped"] == "preempted" and result["env_steps"] == step


@pytest.mark.slow
def test_sigterm_without_workdir_says_nothing_was_saved(monkeypatch, test_sigterm_handler):
  _sigterm_on_call(monkeypatch, 2)
  status, lines = _preempted(tiny_config(), None)
  assert status == 143
  assert lines[-1] == f"preempted at env step {2 * STEPS_PER_CALL} (no workdir: nothing saved)"


@pytest.mark.slow
def test_a_second_sigterm_while_saving_does_not_cut_the_save(
  tmp_path, monkeypatch, test_sigterm_handler
):
  """The save after a SIGTERM gets another SIGTERM (a scheduler that repeats it): the
  handler only notes it, so the save runs whole and the checkpoint restores."""
  real_save = ckpt_lib.Checkpointer.save
  saves = []

  def save_hit_by_sigterm(self, env_steps, state, meta):
    saves.append("start")
    signal.raise_signal(signal.SIGTERM)
    real_save(self, env_steps, state, meta)
    saves.append("done")

  monkeypatch.setattr(ckpt_lib.Checkpointer, "save", save_hit_by_sigterm)
  _sigterm_on_call(monkeypatch, 2)
  status, lines = _preempted(tiny_config(checkpoint_every_steps=0), tmp_path)
  assert status == 143 and saves == ["start", "done"]
  assert lines[-1].startswith(f"preempted: saved checkpoint at step {2 * STEPS_PER_CALL} ")
  monkeypatch.undo()  # the plain step and save
  lines = []
  resumed = train(
    tiny_config(checkpoint_every_steps=0), workdir=str(tmp_path), resume=True, log=lines.append
  )
  assert lines[0].startswith(f"resumed from {tmp_path / 'checkpoints' / str(2 * STEPS_PER_CALL)}")
  assert resumed.env_steps == 4 * STEPS_PER_CALL


def _wait_for_row(path, procs, timeout=180):
  """Waits until metrics.csv has a row (the run is past its first call)."""
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if os.path.exists(path) and len(open(path).read().splitlines()) >= 2:
      return
    if any(p.poll() is not None for p in procs):
      break
    time.sleep(0.05)
  for p in procs:
    p.kill()
  raise AssertionError(
    f"no metrics row in {path}: " + " | ".join(p.communicate()[0][-2000:] for p in procs)
  )


def _preempted_lines(text):
  return [l for l in text.splitlines() if l.startswith("preempted")]


@pytest.mark.slow
def test_cli_sigterm_saves_exits_143_and_resume_finishes(tmp_path):
  args = [
    os.path.join(ROOT, "run.py"),
    *CALLS,
    "--config.total_env_steps=160000",
    f"--workdir={tmp_path}",
  ]  # 200 calls: the signal comes long before the end
  proc = subprocess.Popen(
    [sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
  )
  _wait_for_row(tmp_path / "metrics.csv", [proc])
  proc.send_signal(signal.SIGTERM)
  out = proc.communicate(timeout=120)[0]
  assert proc.returncode == 143, out[-3000:]
  assert "Traceback" not in out, out
  (line,) = _preempted_lines(out)
  step = _checkpoints(tmp_path)[-1]
  assert _checkpoints(tmp_path) == [step] and 0 < step < 160000
  assert line == (
    f"preempted: saved checkpoint at step {step} in {tmp_path / 'checkpoints'}; rerun with --resume"
  )
  assert json.loads((tmp_path / "result.json").read_text())["stopped"] == "preempted"
  assert csv_steps(tmp_path / "metrics.csv")[-1] == step

  # The resume finishes 4 calls past the checkpoint (not the 200 calls of the budget above,
  # about 10 s of training; the budget only had to outlast the signal).
  budget = step + 4 * 800
  resumed = subprocess.run(
    [sys.executable, *args, "--resume", f"--config.total_env_steps={budget}"],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert resumed.returncode == 0, resumed.stderr[-3000:]
  assert f"resumed from {tmp_path / 'checkpoints' / str(step)}" in resumed.stdout
  result = json.loads((tmp_path / "result.json").read_text())
  assert result["stopped"] == "budget" and result["env_steps"] == budget
  steps = csv_steps(tmp_path / "metrics.csv")
  assert steps == list(range(800, budget + 1, 800))


def _free_port():
  import socket

  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("service", ["sync_point", "gathered_flag"])
def test_two_processes_save_the_same_step_when_one_gets_sigterm(tmp_path, service):
  """2 processes x 2 CPU devices (as docs/multihost.md runs them); SIGTERM to process 1
  only. With JAX's preemption service (the default) the processes agree on the step
  through its sync point; without it, through a gathered flag."""
  port = _free_port()
  env = dict(
    os.environ,
    XLA_FLAGS="--xla_force_host_platform_device_count=2",
    JAX_PLATFORMS="cpu",
    JAX_ENABLE_PREEMPTION_SERVICE=str(service == "sync_point").lower(),
  )
  procs = [
    subprocess.Popen(
      [
        sys.executable,
        os.path.join(ROOT, "run.py"),
        *CALLS,
        "--config.total_env_steps=10000000",
        "--config.num_learners=4",
        "--config.envs_per_learner=4",
        "--config.distributed=True",
        f"--coordinator_address=localhost:{port}",
        "--num_processes=2",
        f"--process_id={i}",
        f"--workdir={tmp_path}",
      ],
      cwd=ROOT,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      text=True,
    )
    for i in range(2)
  ]
  _wait_for_row(tmp_path / "metrics.csv", procs)
  procs[1].send_signal(signal.SIGTERM)
  try:
    outs = [p.communicate(timeout=120)[0] for p in procs]
  except subprocess.TimeoutExpired:
    for p in procs:
      p.kill()
    raise AssertionError(
      "the job did not stop within 120 s of the SIGTERM: "
      + " | ".join(p.communicate()[0][-2000:] for p in procs)
    ) from None
  assert [p.returncode for p in procs] == [143, 143], [out[-3000:] for out in outs]
  assert not any("Traceback" in out for out in outs), outs
  (step,) = _checkpoints(tmp_path)
  # Process 0 says it (the job's one progress log); process 1 says nothing.
  assert _preempted_lines(outs[0]) == [
    f"preempted: saved checkpoint at step {step} in {tmp_path / 'checkpoints'}; rerun with --resume"
  ]
  assert _preempted_lines(outs[1]) == []
  # JAX's C++ notifier speaks in process 1's log (run.py's supervisor keeps the terminal
  # for galax's lines).
  log = (tmp_path / "logs" / "process1.stderr.log").read_text()
  assert ("SIGTERM caught" in log) == (service == "sync_point")
  assert "SIGTERM caught" not in outs[1]
  # Both processes wrote their shards into that one step, and orbax committed it.
  state = tmp_path / "checkpoints" / str(step) / "state"
  assert (state / "ocdbt.process_0").is_dir() and (state / "ocdbt.process_1").is_dir()
  assert (tmp_path / "checkpoints" / str(step) / ckpt_lib.COMMIT_MARKER).exists()
  result = json.loads((tmp_path / "result.json").read_text())
  assert result["stopped"] == "preempted" and result["env_steps"] == step
  assert csv_steps(tmp_path / "metrics.csv")[-1] == step
