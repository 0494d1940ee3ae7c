"""One writer per run directory (galax/runtime/lock.py): a live holder refuses a second run,
a killed holder's lock is taken over with a warning."""

import json
import os
import signal
import socket
import subprocess
import sys

import pytest
from run_helpers import ROOT, csv_steps, run_cli, tiny_config

from galax.runtime import lock as workdir_lock
from galax.training.loop import train


def test_a_held_workdir_refuses_a_second_holder(tmp_path):
  with workdir_lock.hold(str(tmp_path), log=lambda _: None):
    with pytest.raises(
      workdir_lock.WorkdirLocked, match=f"pid {os.getpid()} on host {socket.gethostname()}"
    ):
      with workdir_lock.hold(str(tmp_path), log=lambda _: None):
        pass


def test_a_released_lock_is_taken_silently(tmp_path):
  said = []
  with workdir_lock.hold(str(tmp_path), log=said.append):
    pass
  with workdir_lock.hold(str(tmp_path), log=said.append):
    pass
  assert said == []


def test_a_lock_left_by_a_dead_process_is_taken_over_with_a_warning(tmp_path):
  (tmp_path / workdir_lock.LOCK_FILE).write_text(json.dumps(dict(pid=999999, host="gone")))
  said = []
  with workdir_lock.hold(str(tmp_path), log=said.append):
    holder = json.loads((tmp_path / workdir_lock.LOCK_FILE).read_text())
  assert holder["pid"] == os.getpid()
  assert len(said) == 1 and "pid 999999 on host gone" in said[0] and "warning" in said[0]


def test_train_on_a_held_workdir_stops_before_writing(tmp_path):
  with workdir_lock.hold(str(tmp_path), log=lambda _: None):
    with pytest.raises(workdir_lock.WorkdirLocked):
      train(tiny_config(), workdir=str(tmp_path), log=lambda _: None)
  assert sorted(os.listdir(tmp_path)) == [workdir_lock.LOCK_FILE]


@pytest.mark.slow
def test_second_cli_run_exits_2_and_resume_takes_over_after_sigkill(tmp_path):
  """run.py holds its workdir: a second run.py (a --resume) exits 2 with one line and
  writes nothing; after SIGKILL of the first, --resume warns, takes over and finishes."""
  workdir = str(tmp_path)
  # gymnax's CartPole (tiny_config's program, which the compile cache serves to each run).
  args = [
    f"--workdir={workdir}",
    "--config.env.id=gymnax/CartPole-v1",
    "--config.updates_per_call=10",
    "--config.log_every_steps=800",
    "--config.checkpoint_every_steps=800",
    "--config.target_return=0",
    "--config.tensorboard=False",
  ]
  first = subprocess.Popen(
    [sys.executable, os.path.join(ROOT, "run.py"), *args, "--config.total_env_steps=100000000"],
    cwd=ROOT,
    stdout=subprocess.PIPE,
    stderr=subprocess.DEVNULL,
    text=True,
  )
  try:
    checkpoints = os.path.join(workdir, "checkpoints")
    for line in first.stdout:  # progress rows, until a whole checkpoint exists
      if (
        line.startswith("steps")
        and os.path.isdir(checkpoints)
        and any(name.isdigit() for name in os.listdir(checkpoints))
      ):
        break
    files = sorted(os.listdir(workdir))
    rows = csv_steps(os.path.join(workdir, "metrics.csv"))
    first.send_signal(signal.SIGSTOP)  # no more writes while the second one tries
    second = run_cli(*args, "--resume", "--config.total_env_steps=100000000")
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), second.stderr
    assert f"pid {first.pid} on host {socket.gethostname()}" in lines[0]
    assert sorted(os.listdir(workdir)) == files
    assert csv_steps(os.path.join(workdir, "metrics.csv")) == rows
  finally:
    first.kill()  # SIGKILL (also wakes a stopped process to die)
    first.wait()
  budget = (max(csv_steps(os.path.join(workdir, "metrics.csv"))) // 800 + 2) * 800
  resumed = run_cli(*args, "--resume", f"--config.total_env_steps={budget}")
  assert resumed.returncode == 0, resumed.stderr
  assert f"taking over the lock of {workdir!r} from pid {first.pid}" in resumed.stdout
  steps = csv_steps(os.path.join(workdir, "metrics.csv"))
  assert steps == sorted(set(steps)) and steps[-1] == budget
  assert (tmp_path / workdir_lock.LOCK_FILE).read_text() == ""  # released at the end
