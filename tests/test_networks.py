"""networks: parameters built by one compiled init equal flax's op-by-op init, bit for bit."""

import jax
import numpy as np
import pytest

from galax import networks
from galax.envs import EnvSpec


def _spec(obs_shape, layout, dtype=np.float32):
  return EnvSpec(env_id="test", family="test", obs_shape=obs_shape, obs_dtype=np.dtype(dtype),
                 num_actions=4, obs_layout=layout, max_episode_steps=100)


@pytest.mark.parametrize("name,spec", [
    ("mlp", _spec((6,), "flat")),
    # flax's op-by-op init compiles ~70 programs per image net (5-7 s each case):
    pytest.param("minatar", _spec((10, 10, 4), "HWC"), marks=pytest.mark.slow),
    pytest.param("archnips", _spec((4, 84, 84), "CHW", np.uint8), marks=pytest.mark.slow),
])
@pytest.mark.slow  # flax's eager init is the slow half
def test_init_params_equals_flax_init_and_compiles_once(name, spec):
  network = networks.make_network(name, spec)
  key = jax.random.PRNGKey(3)
  eager = network.init(key, np.zeros((1, *spec.obs_shape), spec.obs_dtype))
  ours = networks.init_params(network, spec, key)
  programs = networks._jitted_init(network)._cache_size()  # pylint: disable=protected-access
  for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(ours)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  # An equal network built again (every run, evaluator and test does) reuses the program.
  networks.init_params(networks.make_network(name, spec), spec, jax.random.PRNGKey(4))
  assert networks._jitted_init(network)._cache_size() == programs  # pylint: disable=protected-access
