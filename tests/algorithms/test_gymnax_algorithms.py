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


# A2C, gossip and PPO train as the MinAtar configs (MINATAR_CONFIGS below): one training
# serves both those configs' claim and this one's.
CASES = {
  "allreduce": {"num_learners": 2, "combine": "allreduce"},
  # The config of `_hts_run(num_actors=2)` below: the compile cache serves one to the other.
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


MINATAR_CONFIGS = ["minatar_a2c", "minatar_gala", "minatar_hts_a2c", "minatar_ppo"]


def minatar_config(name):
  """configs/<name>.py at a test's scale: 4 envs x t_max 4, two updates a call (HTS's first
  segment only collects: it has no previous storage to learn from)."""
  config = load_config(name, envs_per_learner=4, t_max=4, updates_per_call=2)
  if config.algorithm == "hts_a2c":
    config.hts.alpha = 4
  if config.algorithm == "ppo":
    config.ppo.minibatches = 2
  if config.combine == "gossip":  # two learners per device, as well as across devices
    config.num_devices = 2
  return validate(config)


def _train(algorithm, calls):
  state = algorithm.init()
  metrics = []
  for _ in range(calls):
    state, m = algorithm.step(state)
    metrics.append(to_host(m))
  return to_host(state), metrics


@pytest.mark.parametrize("name", [*CASES, *MINATAR_CONFIGS])
@pytest.mark.slow  # every case: a whole training program to compile
def test_algorithm_trains_on_gymnax(name):
  """The CartPole cases, and the MinAtar configs at a test's scale."""
  config = minatar_config(name) if name in MINATAR_CONFIGS else make_config(**CASES[name])
  algorithm = make_algorithm(config)
  initial = to_host(algorithm.init().params)
  state, metrics = _train(algorithm, 2)
  carries = jax.tree.leaves(state.env_state, is_leaf=lambda x: isinstance(x, GymnaxCarry))
  assert any(isinstance(x, GymnaxCarry) for x in carries)
  for m in metrics:
    assert np.all(np.isfinite(m["loss"]["total"]))
  assert np.all(metrics[-1]["grad_norm"][-1] > 0)  # HTS's first update only collects
  if name in MINATAR_CONFIGS:  # 'mlp' on the flattened 10x10x4 image
    assert state.params["params"]["torso"]["Dense_0"]["kernel"].shape[-2:] == (400, 64)
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


# (conv_impl, grad_chunks, learner_map, update_loop) of the MinAtar paper's conv network with
# 2 learners on a device: patches for PPO's 32 gradient steps per update; A2C's gradient in
# chunks, its learners unrolled and a host update loop.
CONV_WORKAROUNDS = {
  "minatar_ppo": ("patches", 1, "vmap", "scan"),
  "minatar_a2c": ("xla", 8, "unroll", "host"),
}


@pytest.mark.parametrize("name", CONV_WORKAROUNDS)
def test_mlp_on_minatar_images_keeps_the_conv_workarounds_off(name):
  """network 'mlp' on a MinAtar id (PureJaxRL's shape) takes none of the CPU's convolution
  workarounds where a conv network takes them. (Both train: test_algorithm_trains_on_gymnax.)"""

  def workarounds(network):
    config = load_config(name, num_learners=2, num_devices=1, combine="allreduce")
    config.network.name = network
    p = make_algorithm(validate(config)).plan
    return p.conv_impl, p.grad_chunks, p.learner_map, p.update_loop

  assert workarounds("minatar") == CONV_WORKAROUNDS[name]
  assert workarounds("mlp") == ("xla", 1, "vmap", "scan")
