"""Multi-host: 2 processes on localhost (jax.distributed, gloo CPU collectives), 2 virtual
CPU devices each, run all-reduce and gossip updates over the 4 devices of both processes;
every process sees the same results as one process with 4 devices."""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
sys.path.insert(0, HERE)

import multihost_worker

pytestmark = pytest.mark.slow  # subprocesses


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


@pytest.fixture(scope="module")
def multihost_results(tmp_path_factory):
  out = tmp_path_factory.mktemp("multihost")
  port = _free_port()
  env = dict(os.environ, PYTHONPATH=os.path.join(HERE, ".."))
  # The workers set their own 2 devices; the suite's other XLA flags (its optimization
  # level) stay, so that they compile as the one-process reference here does.
  flags = os.environ.get("XLA_FLAGS", "").split()
  env["XLA_FLAGS"] = " ".join(f for f in flags if "device_count" not in f)
  procs = [
    subprocess.Popen(
      [sys.executable, os.path.join(HERE, "multihost_worker.py"), str(i), "2", str(port), str(out)],
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      text=True,
    )
    for i in range(2)
  ]
  logs = []
  for p in procs:
    try:
      logs.append(p.communicate(timeout=240)[0])
    except subprocess.TimeoutExpired:
      for q in procs:
        q.kill()
      raise
  for p, log in zip(procs, logs):
    assert p.returncode == 0, log[-3000:]
  return {
    name: [dict(np.load(out / f"{name}.{i}.npz")) for i in range(2)]
    for name in multihost_worker.RUNS
  }


@pytest.mark.parametrize("name", list(multihost_worker.RUNS))
def test_two_processes_agree_with_one(multihost_results, name):
  reference = multihost_worker.flat(multihost_worker.run(name))
  for process, got in enumerate(multihost_results[name]):
    assert sorted(got) == sorted(reference)
    for key, want in reference.items():
      np.testing.assert_allclose(
        got[key], want, rtol=1e-5, atol=1e-6, err_msg=f"process {process}: {key}"
      )
  params = {k: v for k, v in reference.items() if k.startswith("['params']")}
  if name == "allreduce":
    assert all(np.all(v == v[0]) for v in params.values())
  else:  # gossip: learners differ, and the consensus metrics crossed processes
    assert any(np.any(v != v[0]) for v in params.values())
    assert np.all(reference["['metrics']['gossip']['consensus_distance_total']"] > 0)
  np.testing.assert_array_equal(reference["['update_count']"], 3)
