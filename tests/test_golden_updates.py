"""Golden updates: the parameters after 3 updates of every algorithm, bitwise, on CPU.

Refactors of the algorithms must not change their updates. tests/data/golden_updates.json
holds, per case, the SHA-256 of the parameters' bytes after one call of 3 updates (fixed
seed, CartPole MLP, few envs), recorded before a refactor by running this file:

  python tests/test_golden_updates.py            # print the hashes, compare
  python tests/test_golden_updates.py --write    # (re)record tests/data/golden_updates.json

A deliberate change of semantics updates its entries in a commit of its own that says why.
The hashes hold for the jax version they were recorded with (XLA may round differently in
another); with another version the test is skipped.

The initial parameters are drawn by `portable_init_params` (threefry normals, no LAPACK):
flax's orthogonal init runs a QR decomposition in the host's OpenBLAS, whose kernels depend
on the CPU (the same code gave other bits with OPENBLAS_CORETYPE=Haswell than SkylakeX), so
the hashes would check the machine's BLAS instead of galax's updates.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from unittest import mock

if __name__ == "__main__":  # as a script: the test setup of conftest.py
  os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
  os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import numpy as np
import pytest

from galax.algorithms import make_algorithm
from algorithm_runs import small_mlp_config
from galax.config import set_fields, validate

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "golden_updates.json")
UPDATES = 3

A2C_RMSPROP = {"optimizer.name": "rmsprop", "optimizer.learning_rate": 1e-2}
HTS = {"t_max": 2, "hts.alpha": 4, "envs_per_learner": 16}
CASES: dict[str, dict] = {
    "a2c": {},
    "a2c_gae_sum_over_time": {"returns": "gae", "loss.sum_over_time": True},
    "a2c_clip_average_norm": {"optimizer.clip_average_norm": 0.01},
    "allreduce": {"num_learners": 2, "combine": "allreduce"},
    "allreduce_clip_average_norm": {"num_learners": 2, "combine": "allreduce",
                                    "optimizer.clip_average_norm": 0.01},
    "allreduce_sharded_state": {"num_learners": 4, "combine": "allreduce",
                                "optimizer.sharded_state": True,
                                "optimizer.clip_average_norm": 0.01, **A2C_RMSPROP},
    "allreduce_stragglers": {"num_learners": 4, "combine": "allreduce",
                             "stragglers.num_kept": 3, "grad_similarity": True},
    "gossip_delay0": {"num_learners": 4, "combine": "gossip", "gossip.metrics": True},
    "gossip_delay1": {"num_learners": 4, "combine": "gossip", "gossip.delay": 1},
    "gossip_delay2_two_peers": {"num_learners": 4, "combine": "gossip", "gossip.delay": 2,
                                  "gossip.peers": 2},
    "independent_per_learner": {"num_learners": 2, "initial_params": "per_learner"},
    "a3c": {"algorithm": "a3c", "num_learners": 2, "a3c.max_staleness": 1, **A2C_RMSPROP},
    "impala": {"algorithm": "impala", "impala.policy_lag": 1},
    "impala_allreduce_sum": {"algorithm": "impala", "num_learners": 2,
                             "combine": "allreduce", "impala.reduction": "sum",
                             "optimizer.clip_average_norm": 0.01},
    "ppo": {"algorithm": "ppo"},
    "ppo_allreduce_clip_average_norm": {"algorithm": "ppo", "num_learners": 2,
                                        "combine": "allreduce",
                                        "optimizer.clip_average_norm": 0.01},
    "hts_a2c": {"algorithm": "hts_a2c", **HTS},
    "hts_a2c_actors_microbatches": {"algorithm": "hts_a2c", "hts.num_actors": 2,
                                    "hts.microbatches": 2, "num_learners": 2,
                                    "combine": "allreduce", **HTS},
    "hts_a2c_clip_average_norm": {"algorithm": "hts_a2c", "num_learners": 2,
                                  "combine": "allreduce",
                                  "optimizer.clip_average_norm": 0.01, **HTS},
    "hts_a2c_not_delayed": {"algorithm": "hts_a2c", "hts.delayed": False, **HTS},
    "hts_ppo": {"algorithm": "hts_ppo", **HTS},
    "hts_ppo_actors_microbatches_gossip": {"algorithm": "hts_ppo", "hts.num_actors": 2,
                                           "hts.microbatches": 2, "num_learners": 2,
                                           "combine": "gossip", **HTS},
    "hts_ppo_clip_average_norm": {"algorithm": "hts_ppo", "optimizer.clip_average_norm": 0.01,
                                  **HTS},
}


def case_config(overrides: dict):
  c = small_mlp_config("CartPole-v1", (16, 16), envs_per_learner=8, updates_per_call=UPDATES)
  c.total_env_steps = 100_000
  c.seed = 3
  set_fields(c, overrides)
  return validate(c)


@contextlib.contextmanager
def portable_init():
  """Within it, `networks.init_params` returns parameters of the network's shapes with leaf
  i ~ 0.1 N(0, 1) from fold_in(key, i): the same bits on every CPU (module docstring)."""
  from galax import networks  # pylint: disable=g-import-not-at-top

  real = networks.init_params

  def portable(network, spec, key):
    leaves, tree = jax.tree.flatten(jax.eval_shape(lambda: real(network, spec, key)))
    return jax.tree.unflatten(tree, [
        0.1 * jax.random.normal(jax.random.fold_in(key, i), x.shape, x.dtype)
        for i, x in enumerate(leaves)])

  with mock.patch.object(networks, "init_params", portable):
    yield


def params_digest(overrides: dict) -> str:
  """SHA-256 of every learner's parameters after one call of UPDATES updates."""
  with portable_init():
    algo = make_algorithm(case_config(overrides))
    initial = algo.init()
  try:
    state, _ = algo.step(initial)
    leaves = [np.asarray(x) for x in jax.tree.leaves(state.params)]
  finally:
    algo.env.close()
  digest = hashlib.sha256()
  for leaf in leaves:
    digest.update(str((leaf.shape, leaf.dtype)).encode())
    digest.update(np.ascontiguousarray(leaf).tobytes())
  return digest.hexdigest()


def load_golden() -> dict:
  with open(GOLDEN) as f:
    return json.load(f)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_update_is_bitwise_unchanged(name):
  golden = load_golden()
  if golden["jax"] != jax.__version__:
    pytest.skip(f"golden hashes recorded with jax {golden['jax']}, not {jax.__version__}")
  assert params_digest(CASES[name]) == golden["cases"][name], (
      f"{name}: parameters after {UPDATES} updates changed")


def main(write: bool) -> None:
  digests = {name: params_digest(overrides) for name, overrides in sorted(CASES.items())}
  if write:
    os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
    with open(GOLDEN, "w") as f:
      json.dump(dict(jax=jax.__version__, cases=digests), f, indent=1, sort_keys=True)
      f.write("\n")
  old = load_golden()["cases"] if os.path.exists(GOLDEN) else {}
  for name, digest in digests.items():
    print(f"{name:40s} {digest[:16]} {'same' if old.get(name) == digest else 'CHANGED'}")


if __name__ == "__main__":
  main(write="--write" in sys.argv)
