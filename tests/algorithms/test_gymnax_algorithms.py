"""Every algorithm trains on a gymnax env through the normal `Algorithm` path (no
backend-specific algorithm code), bit-reproducibly; HTS-RL's one-step-delayed gradients
and its determinism across actor groups hold on gymnax too."""

import jax
import numpy as np
import pytest
from algorithm_runs import small_mlp_config

from galax.config import load as load_config
from galax.config import make_algorithm, run_settings, validate
from galax.core import networks
from galax.envs import EnvSpec
from galax.envs.gymnax_env import GymnaxCarry
from galax.parallel.layout import to_host


def make_config(**overrides):
  c = small_mlp_config("gymnax/CartPole-v1", (32, 32), envs_per_learner=8, updates_per_call=2)
  c.update(overrides)  # nested dicts update the nested fields they name
  return validate(c)


CASES = {
  "a2c": {},
  "allreduce": {"num_learners": 2, "combine": "allreduce"},
  "gossip": {"num_learners": 4, "num_devices": 2, "combine": "gossip"},
  "ppo": {"algorithm": "ppo"},
  # The config of `_hts_run(num_actors=2)` below, which compiles it with XLA's fusion
  # emitters (the bitwise check), so the compile cache does not serve one from the other.
  "hts_a2c": {
    "algorithm": "hts_a2c",
    "updates_per_call": 1,
    "hts": {"num_actors": 2},
    "optimizer": {"name": "sgd", "learning_rate": 0.05, "max_grad_norm": 0.0},
  },
  "hts_ppo": {"algorithm": "hts_ppo", "hts": {"num_actors": 2}},
  "a3c": {"algorithm": "a3c", "num_learners": 2},
  "impala": {"algorithm": "impala"},
  "ba3c_sharded_stragglers": {
    "num_learners": 4,
    "num_devices": 2,
    "combine": "allreduce",
    "optimizer": {"sharded_state": True},
    "stragglers": {"num_kept": 3},
  },
}


def _train(algorithm, calls):
  state = algorithm.init()
  metrics = []
  for _ in range(calls):
    state, m = algorithm.step(state)
    metrics.append(to_host(m))
  return to_host(state), metrics


@pytest.mark.parametrize(
  "name",
  [
    pytest.param(name, marks=pytest.mark.slow) if name.startswith("hts") else name for name in CASES
  ],
)
@pytest.mark.slow  # every case: a whole training program to compile
def test_algorithm_trains_on_gymnax(name):
  algorithm = make_algorithm(make_config(**CASES[name]))
  initial = to_host(algorithm.init().params)
  state, metrics = _train(algorithm, 2)
  carries = jax.tree.leaves(state.env_state, is_leaf=lambda x: isinstance(x, GymnaxCarry))
  assert any(isinstance(x, GymnaxCarry) for x in carries)
  for m in metrics:
    assert np.all(np.isfinite(m["loss"]["total"]))
  moved = max(
    float(np.max(np.abs(a - b)))
    for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(initial))
  )
  assert moved > 1e-4
  # A seed reproduces the run bit for bit.
  again, _ = _train(algorithm, 2)
  for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(again)):
    np.testing.assert_array_equal(a, b)


def _hts_run(num_actors):
  config = make_config(**{**CASES["hts_a2c"], "hts": {"num_actors": num_actors}})
  algorithm = make_algorithm(config)
  state = algorithm.init()
  states, metrics = [to_host(state)], []
  for _ in range(4):
    state, m = algorithm.step(state)
    states.append(to_host(state))
    metrics.append(to_host(m))
  return states, metrics


@pytest.mark.slow
def test_hts_on_gymnax_one_step_delay_and_actor_group_determinism():
  states, metrics = _hts_run(num_actors=1)
  for k, m in enumerate(metrics):
    v = {key: int(x[0, 0]) for key, x in m["hts"].items()}
    assert v["applied_to_version"] == k and v["new_version"] == k + 1
    assert v["data_version"] == v["grad_version"] == k - 1  # gradient of theta_{k-1}
    assert int(states[k + 1].extra.storage_version[0]) == k
  # Actor groups: the same envs take the same actions (bit for bit). Unlike envpool,
  # whose custom calls fence the policy's forward pass, here XLA fuses it with the env
  # step differently for 1 and 2 groups: values differ in the last bit, parameters ~1e-8.
  grouped, _ = _hts_run(num_actors=2)
  for k in range(1, len(states)):
    one, two = states[k].extra.storage, grouped[k].extra.storage
    for field in ("obs", "actions", "rewards", "valid", "terminated", "truncated"):
      np.testing.assert_array_equal(getattr(one, field), getattr(two, field))
  for a, b in zip(jax.tree.leaves(states[-1].params), jax.tree.leaves(grouped[-1].params)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("env_id, expected", [("gymnax/CartPole-v1", 1), ("CartPole-v1", 4)])
def test_hts_auto_microbatches_is_one_piece_on_gymnax(env_id, expected):
  """Auto splits the learner's work to overlap envpool's host stepping (gcd(alpha 4,
  units 4) = 4 pieces); gymnax steps inside the same program: one piece. Resolved once,
  shown in the header's plan."""
  config = make_config(algorithm="hts_a2c", env={"id": env_id})
  assert config.hts.microbatches == 0
  algorithm = make_algorithm(config)
  algorithm.env.close()
  assert algorithm.plan.microbatches == expected
  assert f"microbatches={expected}" in algorithm.plan.describe()


MINATAR_CONFIGS = ["minatar_a2c", "minatar_gala", "minatar_hts_a2c", "minatar_ppo"]


# Parameters on Breakout-MinAtar (10x10x4 images, 3 actions) of each config's network.
MINATAR_PARAMS = {
  # the MinAtar paper's: conv 16 3x3 on 4 channels, fc 128 on 8x8x16, policy and value heads
  "minatar": (3 * 3 * 4 * 16 + 16) + (8 * 8 * 16 * 128 + 128) + (128 * 3 + 3) + (128 + 1),
  # PureJaxRL's: 64x64 on the flattened 400 inputs, policy and value heads
  "mlp": (400 * 64 + 64) + (64 * 64 + 64) + (64 * 3 + 3) + (64 + 1),
}


@pytest.mark.parametrize("name", MINATAR_CONFIGS)
def test_minatar_configs_validate_with_their_network(name):
  config = validate(load_config(name))
  assert config.env.id == "gymnax/Breakout-MinAtar"
  spec = EnvSpec("gymnax/Breakout-MinAtar", "gymnax", (10, 10, 4), np.float32, 3, "HWC", 1000)
  net = run_settings(config).network.build(spec)
  shapes = jax.eval_shape(lambda: networks.init_params(net, spec, jax.random.PRNGKey(0)))
  expected = MINATAR_PARAMS[config.network.name]
  assert sum(int(np.prod(x.shape)) for x in jax.tree.leaves(shapes)) == expected


@pytest.mark.slow
@pytest.mark.parametrize("name", MINATAR_CONFIGS)
def test_minatar_config_trains_one_call(name):
  # Two updates: HTS's first segment only collects (it has no previous storage to learn from).
  config = load_config(name, envs_per_learner=4, t_max=4, updates_per_call=2)
  if config.algorithm == "hts_a2c":
    config.hts.alpha = 4
  if config.algorithm == "ppo":
    config.ppo.minibatches = 2
  algorithm = make_algorithm(config)
  _, metrics = algorithm.step(algorithm.init())
  metrics = to_host(metrics)
  assert np.all(np.isfinite(metrics["loss"]["total"]))
  assert np.all(metrics["grad_norm"][-1] > 0)


@pytest.mark.slow  # a training call of MinAtar PPO
def test_mlp_on_minatar_images_trains_without_conv_workarounds():
  """network 'mlp' on a MinAtar id (PureJaxRL's shape) builds and trains; the CPU's
  convolution workarounds (patches, gradient chunks, unrolled learners) stay off."""
  c = small_mlp_config("gymnax/Breakout-MinAtar", (64, 64), envs_per_learner=8, updates_per_call=2)
  c.algorithm, c.num_learners, c.combine = "ppo", 2, "allreduce"
  c.network.activation = "relu"
  algorithm = make_algorithm(validate(c))
  choices = algorithm.plan.describe()
  assert "conv_impl=xla" in choices and "grad_chunks=1" in choices, choices
  assert "learner_map=vmap" in choices, choices
  state, metrics = _train(algorithm, 1)
  kernel = state.params["params"]["torso"]["Dense_0"]["kernel"]
  assert kernel.shape[-2:] == (400, 64)
  assert np.all(np.isfinite(metrics[0]["loss"]["total"]))
