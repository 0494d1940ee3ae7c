"""A lost peer (issue 33, part 2): when one process of a 2-process job dies, the survivor
exits 75 within a bounded time, with one `error:` line on its terminal naming what failed,
the last good checkpoint and the restart command; JAX's traces go to a log file."""

import os
import signal
import subprocess
import sys
import time

import pytest
from run_helpers import ROOT
from test_preemption import CALLS, _free_port, _wait_for_row

from galax.runtime import peers, supervise

PEER_TIMEOUT_S = 10
BOUND_S = PEER_TIMEOUT_S + 20  # the watchdog's timeout, its period and the exit


def _job(tmp_path):
  port = _free_port()
  env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
  return [
    subprocess.Popen(
      [
        sys.executable,
        os.path.join(ROOT, "run.py"),
        *CALLS,
        "--config.total_env_steps=10000000",
        "--config.num_learners=4",
        "--config.envs_per_learner=4",
        "--config.combine=gossip",
        "--config.distributed=True",
        f"--peer_timeout_s={PEER_TIMEOUT_S}",
        f"--coordinator_address=localhost:{port}",
        "--num_processes=2",
        f"--process_id={i}",
        f"--workdir={tmp_path}",
      ],
      cwd=ROOT,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.PIPE,
      text=True,
    )
    for i in range(2)
  ]


@pytest.mark.slow
@pytest.mark.parametrize("victim", [1, 0])  # 0 hosts JAX's coordination service
def test_the_survivor_of_a_killed_process_exits_75_with_one_line(tmp_path, victim):
  procs = _job(tmp_path)
  _wait_for_row(tmp_path / "metrics.csv", procs)
  procs[victim].kill()  # SIGKILL: its training child dies with it
  killed_at = time.monotonic()
  survivor = procs[1 - victim]
  try:
    out, err = survivor.communicate(timeout=BOUND_S)
  except subprocess.TimeoutExpired:
    survivor.kill()
    raise AssertionError(
      f"the survivor still ran {BOUND_S} s after its peer died: "
      + survivor.communicate()[1][-2000:]
    ) from None
  took = time.monotonic() - killed_at
  procs[victim].communicate()
  assert survivor.returncode == peers.EXIT_LOST_PEER, (out[-2000:], err[-3000:])
  errors = [l for l in err.splitlines() if l.strip()]
  assert len(errors) == 1 and errors[0].startswith(f"error: process {1 - victim}"), err[-3000:]
  assert "last good checkpoint: " in errors[0]
  assert "restart every process with --resume" in errors[0]
  assert "Traceback" not in out + err and "client.h" not in out + err
  log = tmp_path / "logs" / f"process{1 - victim}.stderr.log"
  assert log.exists() and str(tmp_path / "logs") in errors[0]
  assert took < BOUND_S


def test_a_runtime_abort_is_named_with_the_lost_peer_status():
  fatal = (
    "Terminating process because the JAX distributed service detected fatal errors. "
    "absl::Status: UNAVAILABLE: Failed to send RPC to coordination service."
  )
  what, status = supervise.describe_death(signal.SIGABRT, fatal)
  assert status == peers.EXIT_LOST_PEER and "lost process 0" in what and "SIGABRT" in what
  what, status = supervise.describe_death(signal.SIGSEGV, "")
  assert status == 128 + signal.SIGSEGV and "SIGSEGV" in what


def test_the_service_error_names_the_unhealthy_processes():
  message = (
    "UNAVAILABLE: The following tasks are unhealthy (stopped sending heartbeats):\n"
    "1\n3\nThe tasks have crashed."
  )
  assert peers._unhealthy(message) == [1, 3]
  assert peers._unhealthy("Connection reset by peer") == []
