"""One process of tests/parallel/test_multihost.py: joins a jax.distributed job on localhost with
2 virtual CPU devices, runs a few all-reduce and gossip updates, saves what it sees.

  python tests/multihost_worker.py PROCESS_ID NUM_PROCESSES PORT OUT_DIR
"""

import os
import sys

import jax

# The programs the test runs, shared with its single-process reference.
RUNS = {
  "allreduce": dict(num_learners=4, envs_per_learner=4, combine="allreduce"),
  "gossip": dict(
    num_learners=8, envs_per_learner=2, combine="gossip", gossip__delay=1, gossip__metrics=True
  ),
}
COMMON = dict(num_devices=4, updates_per_call=3)


def run(name):
  """(final params, metrics) of RUNS[name] as numpy, on every process."""
  from galax.config import load, make_algorithm
  from galax.parallel.layout import to_host

  algorithm = make_algorithm(load("cartpole_a2c", **COMMON, **RUNS[name]))
  state, metrics = algorithm.step(algorithm.init())
  out = to_host(dict(params=state.params, metrics=metrics, update_count=state.update_count))
  algorithm.env.close()
  return out


def flat(tree):
  return {
    jax.tree_util.keystr(path): leaf for path, leaf in jax.tree_util.tree_leaves_with_path(tree)
  }


def main():
  process_id, num_processes, port, out_dir = sys.argv[1:]
  jax.distributed.initialize(
    coordinator_address=f"localhost:{port}",
    num_processes=int(num_processes),
    process_id=int(process_id),
  )
  import numpy as np

  assert jax.process_count() == int(num_processes) and jax.local_device_count() == 2
  for name in RUNS:
    np.savez(os.path.join(out_dir, f"{name}.{process_id}.npz"), **flat(run(name)))
  from jax.experimental import multihost_utils

  multihost_utils.sync_global_devices("results saved")  # both processes have written theirs
  print("worker done", process_id, flush=True)
  # Skip jax.distributed's shutdown at exit: its coordinator's gRPC server aborted there
  # once in a CI-like run ("Check failed: queue.Pop() == nullptr" in grpc_core::Server's
  # destructor, after every result was saved): an XLA runtime crash, not galax's.
  sys.stdout.flush()
  os._exit(0)


if __name__ == "__main__":
  # Before JAX starts its backend (importing the test module must not change the flags).
  # Two devices per process; the caller's other flags (the suite's optimization level) kept.
  os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
  ).strip()
  os.environ["JAX_PLATFORMS"] = "cpu"
  main()
