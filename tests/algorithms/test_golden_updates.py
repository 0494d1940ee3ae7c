"""Golden updates: the parameters after 3 updates of every algorithm, to a tolerance, on CPU.

Refactors of the algorithms must not change their updates. tests/data/golden_updates.npz
holds, per case, every learner's initial parameters and their values after one call of 3
updates (fixed seed, CartPole MLP, few envs), recorded before a refactor by running this file:

  python tests/algorithms/test_golden_updates.py          # each case's deviation, compared
  python tests/algorithms/test_golden_updates.py --write  # (re)record tests/data/golden_updates.npz

A deliberate change of semantics re-records its entries in a commit of its own that says why.

The conv cases (`CONV_CASES`, named conv_*) run image networks (MinAtar Breakout through the
MinAtar conv torso; HTS-PPO on envpool Pong through archnips), because on CPU the execution
plan (galax/framework/plan.py) sends convolutions down code paths the MLP cases never take:
gradients in chunks, the 'host' update loop (PPO's and HTS's units unrolled), learners
unrolled or looped, patch convolutions, HTS units inline and in microbatches. Each pins every
plan field, so its path does not hang on the 'auto' rules.

Why a tolerance, not a hash: XLA:CPU compiles for the host's vector units (AVX2, AVX-512,
NEON), and their fused multiply-adds and reduction orders change the last bits of every
update; a hash of the bytes checked the machine rather than galax. A case's deviation is

  max_i |p_i - g_i| / max_i |g_i - g0_i|

(p: parameters after the updates here; g, g0: the recorded ones after and before them): the
error relative to the largest parameter change the 3 updates made. `TOLERANCE` sits far above
what another instruction set gives (`test_other_instruction_set_stays_within_tolerance` runs
the cases with XLA's CPU code capped at SSE4.2) and far below what a planted bug gives
(`test_planted_mutations_exceed_tolerance`: a sign, a missing term, a wrong discount, a wrong
mixing weight, ...). `GALAX_GOLDEN_BITWISE=1` compares exactly instead, for the machine
that recorded the file. The values hold for the jax version they were recorded with; with
another version the test is skipped.

The initial parameters are drawn by `portable_init` (threefry normals, no LAPACK): flax's
orthogonal init runs a QR decomposition in the host's OpenBLAS, whose kernels depend on the
CPU, and a different start would move every case by far more than the tolerance.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
from typing import Callable, Iterator
from unittest import mock

if __name__ == "__main__":  # as a script: the test setup of conftest.py
  sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
      os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()

import jax
import numpy as np
import pytest
from algorithm_runs import small_mlp_config
from xla_options import fast_compile_flags

from galax.config import base_config, make_algorithm, set_fields, validate

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "data", "golden_updates.npz")
UPDATES = 3
# Measured against the AVX2 recording: code capped at SSE4.2 or AVX deviates by at most
# 4.5e-5 (hts_a2c_clip_average_norm; most cases ~1e-6), 11x below; the mildest planted
# mutation (no entropy term) by 7.2e-3, 14x above (the test asserts > 10x).
TOLERANCE = 5e-4

A2C_RMSPROP = {"optimizer.name": "rmsprop", "optimizer.learning_rate": 1e-2}
HTS = {"t_max": 2, "hts.alpha": 4, "envs_per_learner": 16}
CASES: dict[str, dict] = {
  "a2c": {},
  "a2c_gae_sum_over_time": {"returns": "gae", "loss.sum_over_time": True},
  "a2c_clip_average_norm": {"optimizer.clip_average_norm": 0.01},
  "allreduce": {"num_learners": 2, "combine": "allreduce"},
  "allreduce_clip_average_norm": {
    "num_learners": 2,
    "combine": "allreduce",
    "optimizer.clip_average_norm": 0.01,
  },
  "allreduce_sharded_state": {
    "num_learners": 4,
    "combine": "allreduce",
    "optimizer.sharded_state": True,
    "optimizer.clip_average_norm": 0.01,
    **A2C_RMSPROP,
  },
  "allreduce_stragglers": {
    "num_learners": 4,
    "combine": "allreduce",
    "stragglers.num_kept": 3,
    "grad_similarity": True,
  },
  "gossip_delay0": {"num_learners": 4, "combine": "gossip", "gossip.metrics": True},
  "gossip_delay1": {"num_learners": 4, "combine": "gossip", "gossip.delay": 1},
  "gossip_delay2_two_peers": {
    "num_learners": 4,
    "combine": "gossip",
    "gossip.delay": 2,
    "gossip.peers": 2,
  },
  "independent_per_learner": {"num_learners": 2, "initial_params": "per_learner"},
  "a3c": {"algorithm": "a3c", "num_learners": 2, "a3c.max_staleness": 1, **A2C_RMSPROP},
  "impala": {"algorithm": "impala", "impala.policy_lag": 1},
  "impala_allreduce_sum": {
    "algorithm": "impala",
    "num_learners": 2,
    "combine": "allreduce",
    "impala.reduction": "sum",
    "optimizer.clip_average_norm": 0.01,
  },
  "ppo": {"algorithm": "ppo"},
  "ppo_allreduce_clip_average_norm": {
    "algorithm": "ppo",
    "num_learners": 2,
    "combine": "allreduce",
    "optimizer.clip_average_norm": 0.01,
  },
  "hts_a2c": {"algorithm": "hts_a2c", **HTS},
  "hts_a2c_actors_microbatches": {
    "algorithm": "hts_a2c",
    "hts.num_actors": 2,
    "hts.microbatches": 2,
    "num_learners": 2,
    "combine": "allreduce",
    **HTS,
  },
  "hts_a2c_clip_average_norm": {
    "algorithm": "hts_a2c",
    "num_learners": 2,
    "combine": "allreduce",
    "optimizer.clip_average_norm": 0.01,
    **HTS,
  },
  "hts_a2c_not_delayed": {"algorithm": "hts_a2c", "hts.delayed": False, **HTS},
  "hts_ppo": {"algorithm": "hts_ppo", **HTS},
  "hts_ppo_actors_microbatches_gossip": {
    "algorithm": "hts_ppo",
    "hts.num_actors": 2,
    "hts.microbatches": 2,
    "num_learners": 2,
    "combine": "gossip",
    **HTS,
  },
  "hts_ppo_clip_average_norm": {"algorithm": "hts_ppo", "optimizer.clip_average_norm": 0.01, **HTS},
}

# Conv paths: image networks on CPU, one case per path of the execution plan that only
# convolutions take (module docstring). CONV_BASE replaces the CartPole MLP config: MinAtar
# Breakout (gymnax, 10x10x4 images) through the MinAtar conv torso, t_max 4, 4 envs per
# learner. Every plan field is set, not 'auto'; each case's plan is in its comment
# (learner_map, conv_impl, update_loop, grad_chunks, unit_call, microbatches). The torsos'
# fc is 8 wide: every parameter is recorded twice per case, and at the MinAtar torso's own
# 128 the conv entries took 19.6 MB of tests/data (1.2 MB at 8). Adam's eps is 1e-3: at fc
# 128 many fc weights got gradients near 1e-5 from MinAtar's sparse images, and eps 1e-5
# amplified their rounding (LLVM level 0 or SSE4.2 code deviated by up to 2.5e-4; 7e-6 at
# eps 1e-3). As recorded, either deviates by at most 5.3e-6.
CONV_BASE = {
  "env.id": "gymnax/Breakout-MinAtar",
  "network.name": "minatar",
  "network.fc_width": 8,
  "envs_per_learner": 4,
  "t_max": 4,
  "ppo.epochs": 2,
  "ppo.minibatches": 2,
  "optimizer.name": "adam",
  "optimizer.learning_rate": 1e-2,
  "optimizer.eps": 1e-3,
  "updates_per_call": UPDATES,
  "total_env_steps": 100_000,
  "seed": 3,
}
XLA_HOST = {"network.conv_impl": "xla", "update_loop": "host"}
CONV_HTS = {"t_max": 2, "hts.alpha": 4}
CONV_CASES: dict[str, dict] = {
  # vmap, xla, host, 2 chunks, inline, 1
  "conv_a2c_chunks_host": {**XLA_HOST, "learner_map": "vmap", "grad_chunks": 2},
  # loop, patches, scan, 1, inline, 1
  "conv_a2c_patches_loop": {
    "num_learners": 2,
    "initial_params": "per_learner",
    "learner_map": "loop",
    "network.conv_impl": "patches",
    "update_loop": "scan",
    "grad_chunks": 1,
  },
  # unroll, xla, host, 2, inline, 1
  "conv_allreduce_unroll": {
    **XLA_HOST,
    "num_learners": 2,
    "combine": "allreduce",
    "learner_map": "unroll",
    "grad_chunks": 2,
  },
  # unroll, xla, host, 1, inline, 1
  "conv_gossip_unroll": {
    **XLA_HOST,
    "num_learners": 4,
    "combine": "gossip",
    "gossip.delay": 1,
    "learner_map": "unroll",
    "grad_chunks": 1,
  },
  # vmap, xla, host (2 epochs x 2 minibatches unrolled), 2, inline, 1
  "conv_ppo_host": {**XLA_HOST, "algorithm": "ppo", "grad_chunks": 2},
  # vmap, xla, host, 2, inline, 1
  "conv_impala_host": {
    **XLA_HOST,
    "algorithm": "impala",
    "impala.policy_lag": 1,
    "grad_chunks": 2,
  },
  # vmap, xla, host, 1, inline, 2
  "conv_hts_a2c_inline": {
    **XLA_HOST,
    **CONV_HTS,
    "algorithm": "hts_a2c",
    "hts.microbatches": 2,
    "grad_chunks": 1,
  },
  # envpool Pong (84x84x4 uint8 frames, archnips with fc 8), 2 envs: vmap, xla, host, 1, inline, 2
  "conv_hts_ppo_pong": {
    **XLA_HOST,
    **CONV_HTS,
    "env.id": "Pong-v5",
    "env.num_threads": 1,
    "network.name": "archnips",
    "envs_per_learner": 2,
    "algorithm": "hts_ppo",
    "ppo.epochs": 1,
    "hts.microbatches": 2,
    "grad_chunks": 1,
  },
}


def _negated_advantages(real):
  def negated(*args, **kwargs):
    return -real(*args, **kwargs)

  return negated


def _no_bootstrap(real):
  def no_bootstrap(rewards, discounts, values, *rest):  # V(x_{t+n}) dropped
    return real(rewards, discounts, values.at[-1].set(0.0), *rest)

  return no_bootstrap


@contextlib.contextmanager
def _patched(target: str, wrap) -> Iterator[None]:
  module_name, attr = target.rsplit(".", 1)
  module = (
    sys.modules[module_name]
    if module_name in sys.modules
    else __import__(module_name, fromlist=[attr])
  )
  with mock.patch.object(module, attr, wrap(getattr(module, attr))):
    yield


@contextlib.contextmanager
def _wrong_mixing_weight() -> Iterator[None]:
  from galax.parallel import topology

  with mock.patch.object(
    topology.Topology, "weight", property(lambda self: 0.95 / (1 + len(self.shifts)))
  ):
    yield


# (case, config overrides, code patch or None): each a bug an update could acquire.
MUTATIONS: dict[str, tuple[str, dict, object]] = {
  "a2c_discount_0.98": ("a2c", {"gamma": 0.98}, None),
  "a2c_entropy_sign": ("a2c", {"loss.entropy_coef": -0.01}, None),
  "a2c_no_entropy_term": ("a2c", {"loss.entropy_coef": 0.0}, None),
  "a2c_value_coef_halved": ("a2c", {"loss.value_coef": 0.25}, None),
  "a2c_lr_plus_10pct": ("a2c", {"optimizer.learning_rate": 1.1e-2}, None),
  "a2c_no_bootstrap": (
    "a2c",
    {},
    lambda: _patched("galax.core.returns.nstep_returns", _no_bootstrap),
  ),
  "gae_lambda_0.9": ("a2c_gae_sum_over_time", {"gae_lambda": 0.9}, None),
  "gossip_mixing_weight": ("gossip_delay0", {}, _wrong_mixing_weight),
  "allreduce_grad_clip_off": (
    "allreduce_clip_average_norm",
    {"optimizer.clip_average_norm": 0.0},
    None,
  ),
  "ppo_clip_0.1": ("ppo", {"ppo.clip": 0.1}, None),
  "ppo_advantage_sign": (
    "ppo",
    {},
    lambda: _patched("galax.core.losses.normalize_advantages", _negated_advantages),
  ),
  "impala_rho_bar_0.5": ("impala", {"impala.rho_bar": 0.5}, None),
  "hts_a2c_not_delayed": ("hts_a2c", {"hts.delayed": False}, None),
}


def case_config(overrides: dict):
  c = small_mlp_config("CartPole-v1", (16, 16), envs_per_learner=8, updates_per_call=UPDATES)
  c.total_env_steps = 100_000
  c.seed = 3
  set_fields(c, overrides)
  return validate(c)


def conv_case_config(overrides: dict):
  """A conv case's config: the schema's defaults, `CONV_BASE`, then `overrides`."""
  c = base_config()
  set_fields(c, {**CONV_BASE, **overrides})
  return validate(c)


def case_of(name: str) -> tuple[dict, Callable]:
  """A case's overrides and the config builder they apply to."""
  return (CONV_CASES[name], conv_case_config) if name in CONV_CASES else (CASES[name], case_config)


@contextlib.contextmanager
def portable_init():
  """Within it, `networks.init_params` returns parameters of the network's shapes with leaf
  i ~ 0.1 N(0, 1) from fold_in(key, i): the same values on every CPU (module docstring)."""
  from galax.core import networks

  real = networks.init_params

  def portable(network, spec, key):
    leaves, tree = jax.tree.flatten(jax.eval_shape(lambda: real(network, spec, key)))
    return jax.tree.unflatten(
      tree,
      [
        0.1 * jax.random.normal(jax.random.fold_in(key, i), x.shape, x.dtype)
        for i, x in enumerate(leaves)
      ],
    )

  with mock.patch.object(networks, "init_params", portable):
    yield


def flat_params(params) -> np.ndarray:
  """Every learner's parameters as one float64 vector, in pytree leaf order."""
  return np.concatenate([np.asarray(x, np.float64).ravel() for x in jax.tree.leaves(params)])


def run_case(overrides: dict, make_config=case_config) -> tuple[np.ndarray, np.ndarray]:
  """(initial, after UPDATES updates) parameters of every learner, flattened (the config:
  `make_config(overrides)`)."""
  with portable_init():
    algo = make_algorithm(make_config(overrides))
    initial = algo.init()
  try:
    before = flat_params(initial.params)
    state, _ = algo.step(initial)
    return before, flat_params(state.params)
  finally:
    algo.env.close()


@functools.lru_cache(maxsize=None)
def _frozen_run(frozen: tuple) -> tuple[np.ndarray, np.ndarray]:
  return run_case(dict(frozen))


def cached_run_case(overrides: dict) -> tuple[np.ndarray, np.ndarray]:
  """`run_case` once per process for each config (without code patches): a mutation whose
  config is a case's own (hts_a2c_not_delayed) reuses that case's run. envpool programs
  hold the pool's handle, so no compile cache serves a second build."""
  return _frozen_run(tuple(sorted(overrides.items())))


def deviation(
  after: np.ndarray,
  golden_before: np.ndarray,
  golden_after: np.ndarray,
  expected: np.ndarray | None = None,
) -> float:
  """max |after - expected| (expected: golden_after) relative to the largest recorded
  parameter change, max |golden_after - golden_before|."""
  expected = golden_after if expected is None else expected
  assert after.shape == expected.shape, (after.shape, expected.shape)
  change = np.max(np.abs(golden_after - golden_before))
  assert change > 0, "the recorded updates changed no parameter"
  return float(np.max(np.abs(after - expected)) / change)


def load_golden() -> dict[str, np.ndarray]:
  with np.load(GOLDEN) as data:
    return {k: data[k] for k in data.files}


def golden_jax_version(golden: dict[str, np.ndarray]) -> str:
  return str(golden["jax_version"])


def golden_for_this_jax() -> dict[str, np.ndarray]:
  """The recorded values; skips the test if they were recorded with another jax."""
  golden = load_golden()
  if golden_jax_version(golden) != jax.__version__:
    pytest.skip(
      f"golden values recorded with jax {golden_jax_version(golden)}, not {jax.__version__}"
    )
  return golden


def assert_matches_golden(name: str, before: np.ndarray, after: np.ndarray) -> None:
  golden = golden_for_this_jax()
  g_before, g_after = golden[f"{name}/before"], golden[f"{name}/after"]
  if os.environ.get("GALAX_GOLDEN_BITWISE") == "1":
    np.testing.assert_array_equal(after, g_after, err_msg=f"{name}: parameters changed")
    return
  assert deviation(before, g_before, g_after, expected=g_before) <= TOLERANCE, (
    f"{name}: initial parameters changed"
  )
  dev = deviation(after, g_before, g_after)
  assert dev <= TOLERANCE, (
    f"{name}: parameters after {UPDATES} updates changed (deviation "
    f"{dev:.3g} of the recorded change > tolerance {TOLERANCE})"
  )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_update_matches_golden(name):
  assert_matches_golden(name, *cached_run_case(CASES[name]))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONV_CASES))
def test_conv_update_matches_golden(name):
  assert_matches_golden(name, *run_case(CONV_CASES[name], conv_case_config))


@pytest.mark.slow
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_planted_mutations_exceed_tolerance(mutation):
  """Each planted bug moves its case's parameters by more than 10x the tolerance."""
  golden = golden_for_this_jax()
  case, overrides, patch = MUTATIONS[mutation]
  if patch:
    with patch():
      _, after = run_case({**CASES[case], **overrides})
  else:
    _, after = cached_run_case({**CASES[case], **overrides})
  dev = deviation(after, golden[f"{case}/before"], golden[f"{case}/after"])
  assert dev > 10 * TOLERANCE, f"{mutation}: deviation {dev:.3g} is not caught"


@pytest.mark.slow
def test_other_instruction_set_stays_within_tolerance(tmp_path):
  """The cases compiled for SSE4.2 (XLA's CPU code capped below the host's AVX) stay within
  the tolerance of the recorded values: what another machine's vector units do."""
  golden_for_this_jax()  # skips where the recording is another jax version's
  # The three that deviate most (all cases: run this file with --deviations by hand).
  names = [
    "allreduce_sharded_state",
    "hts_a2c_clip_average_norm",
    "ppo_allreduce_clip_average_norm",
  ]
  # The suite's compile flags (tests/conftest.py) travel: the tolerance holds every effect.
  suite = fast_compile_flags(os.environ.get("XLA_FLAGS", ""))
  flags = ["--xla_force_host_platform_device_count=8", "--xla_cpu_max_isa=SSE4_2", *suite]
  env = dict(os.environ, XLA_FLAGS=" ".join(flags), JAX_PLATFORMS="cpu")
  env.pop("JAX_COMPILATION_CACHE_DIR", None)  # compile for the capped ISA, not from cache
  out = tmp_path / "deviations.json"
  subprocess.run(
    [sys.executable, __file__, "--deviations", str(out), *names],
    env=env,
    check=True,
    cwd=os.path.dirname(__file__),
    timeout=600,
  )
  deviations = json.loads(out.read_text())
  assert set(deviations) == set(names)
  for name, dev in deviations.items():
    assert dev <= TOLERANCE, f"{name}: {dev:.3g} under SSE4.2"


def main(argv: list[str]) -> None:
  if "--deviations" in argv:  # the cases named after the output path, as JSON
    i = argv.index("--deviations")
    golden = load_golden()
    result = {
      name: deviation(
        run_case(*case_of(name))[1], golden[f"{name}/before"], golden[f"{name}/after"]
      )
      for name in argv[i + 2 :]
    }
    with open(argv[i + 1], "w") as f:
      json.dump(result, f)
    return
  runs = {name: run_case(*case_of(name)) for name in sorted({**CASES, **CONV_CASES})}
  old = load_golden() if os.path.exists(GOLDEN) else {}
  for name, (before, after) in runs.items():
    if f"{name}/after" in old:
      dev = deviation(after, old[f"{name}/before"], old[f"{name}/after"])
      print(f"{name:40s} deviation {dev:.3g}{'' if dev <= TOLERANCE else '  CHANGED'}")
    else:
      print(f"{name:40s} new")
  if "--write" in argv:
    os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
    arrays = {
      f"{name}/{when}": values
      for name, run in runs.items()
      for when, values in zip(("before", "after"), run)
    }
    np.savez_compressed(GOLDEN, jax_version=np.array(jax.__version__), **arrays)


if __name__ == "__main__":
  main(sys.argv[1:])
