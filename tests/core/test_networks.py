"""networks: parameters built by one compiled init equal flax's op-by-op init, bit for bit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from galax.core import networks
from galax.envs import EnvSpec


def _spec(obs_shape, layout, dtype=np.float32):
  return EnvSpec(
    env_id="test",
    family="test",
    obs_shape=obs_shape,
    obs_dtype=np.dtype(dtype),
    num_actions=4,
    obs_layout=layout,
    max_episode_steps=100,
  )


@pytest.mark.parametrize(
  "name,spec",
  [
    ("mlp", _spec((6,), "flat")),
    # flax's op-by-op init compiles ~70 programs per image net (5-7 s each case):
    pytest.param("minatar", _spec((10, 10, 4), "HWC"), marks=pytest.mark.slow),
    pytest.param("archnips", _spec((4, 84, 84), "CHW", np.uint8), marks=pytest.mark.slow),
  ],
)
@pytest.mark.slow  # flax's eager init is the slow half
def test_init_params_equals_flax_init_and_compiles_once(name, spec):
  network = networks.make_network(name, spec)
  key = jax.random.PRNGKey(3)
  eager = network.init(key, np.zeros((1, *spec.obs_shape), spec.obs_dtype))
  ours = networks.init_params(network, spec, key)
  programs = networks._jitted_init(network)._cache_size()
  for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(ours)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  # An equal network built again (every run, evaluator and test does) reuses the program.
  networks.init_params(networks.make_network(name, spec), spec, jax.random.PRNGKey(4))
  assert networks._jitted_init(network)._cache_size() == programs


@pytest.mark.parametrize(
  "name,spec",
  [  # frames smaller than Atari's 84x84: the same
    ("minatar", _spec((10, 10, 4), "HWC")),  # layers, strides and paddings, less compile
    pytest.param("archnips", _spec((4, 44, 44), "CHW", np.uint8), marks=pytest.mark.slow),
    # archnature: archnips' layer kinds plus a third conv (14 s more on 2 cores).
    pytest.param("ba3c", _spec((52, 52, 12), "HWC", np.uint8), marks=pytest.mark.slow),
  ],
)
@pytest.mark.slow
def test_patch_convolutions_compute_the_xla_network_with_the_same_parameters(name, spec):
  """conv_impl='patches' is the same network: same parameter tree and init, same outputs
  and gradients up to float rounding (it only sums the products in another order)."""
  xla = networks.make_network(name, spec)
  patches = networks.make_network(name, spec, conv_impl="patches")
  key = jax.random.PRNGKey(5)
  params = networks.init_params(xla, spec, key)
  patches_params = networks.init_params(patches, spec, key)
  for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(patches_params)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  assert jax.tree.structure(params) == jax.tree.structure(patches_params)
  obs = jax.random.uniform(jax.random.PRNGKey(6), (3, *spec.obs_shape), maxval=255.0)
  obs = obs.astype(spec.obs_dtype)

  def outputs_and_grads(apply):  # one compile per network (op by op: one per op and shape)
    def loss(p):
      logits, values = apply(p, obs)
      return jnp.sum(jnp.sin(logits)) + jnp.sum(values**2)

    return jax.jit(lambda p: (apply(p, obs), jax.grad(loss)(p)))(params)

  outs_xla, grads_xla = outputs_and_grads(xla.apply)
  outs_patches, grads_patches = outputs_and_grads(patches.apply)
  for out_xla, out_patches in zip(outs_xla, outs_patches):
    np.testing.assert_allclose(out_patches, out_xla, rtol=1e-4, atol=1e-5)
  for a, b in zip(jax.tree.leaves(grads_xla), jax.tree.leaves(grads_patches)):
    # Relative to the leaf's scale: a small entry of a leaf of large sums keeps the
    # rounding of its neighbours (measured: 1.6e-3 next to entries of 200).
    np.testing.assert_allclose(b, a, rtol=1e-3, atol=2e-5 * float(np.abs(a).max()) + 1e-5)


def test_patch_convolutions_are_rejected_where_there_is_no_convolution():
  from galax import config as config_lib

  config = config_lib.base_config()
  config.network.conv_impl = "patches"
  with pytest.raises(ValueError, match="network 'mlp' has none"):
    config_lib.validate(config)
  config.network.conv_impl = "fft"
  with pytest.raises(ValueError, match="network.conv_impl='fft' is not one of"):
    config_lib.validate(config)


@pytest.mark.slow
def test_mlp_flattens_image_observations():
  """network 'mlp' on MinAtar-shaped HWC images is an MLP on the flattened image
  (PureJaxRL's MinAtar shape), with the chosen activation."""
  spec = _spec((10, 10, 4), "HWC")
  net = networks.make_network("mlp", spec, activation="relu")
  params = networks.init_params(net, spec, jax.random.PRNGKey(0))
  kernel = params["params"]["torso"]["Dense_0"]["kernel"]
  assert kernel.shape == (400, 64)
  obs = jax.random.bernoulli(jax.random.PRNGKey(1), 0.3, (2, 3, 10, 10, 4)).astype(jnp.float32)

  @jax.jit  # one compile, not one per op
  def run(params, obs):
    hidden = jax.nn.relu(
      obs.reshape(2, 3, 400) @ params["params"]["torso"]["Dense_0"]["kernel"]
      + params["params"]["torso"]["Dense_0"]["bias"]
    )
    layer1 = params["params"]["torso"]["Dense_1"]
    return (
      net.apply(params, obs),
      net.apply(params, obs, method=lambda m, x: m.torso(x)),
      jax.nn.relu(hidden @ layer1["kernel"] + layer1["bias"]),
    )

  (logits, values), first, by_hand = run(params, obs)
  assert logits.shape == (2, 3, 4) and values.shape == (2, 3)
  assert first.shape == (2, 3, 64)
  np.testing.assert_allclose(first, by_hand, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
  "name,spec", [("mlp", _spec((6,), "flat")), ("minatar", _spec((10, 10, 4), "HWC"))]
)
@pytest.mark.slow
def test_activation_acts_and_default_is_the_networks_own(name, spec):
  obs = jax.random.uniform(jax.random.PRNGKey(2), (5, *spec.obs_shape))
  nets = {a: networks.make_network(name, spec, activation=a) for a in ("", "relu", "tanh")}
  params = {a: networks.init_params(net, spec, jax.random.PRNGKey(3)) for a, net in nets.items()}
  outputs = jax.jit(
    lambda params: {  # the three networks in one compile
      a: net.apply(params[a], obs)[1] for a, net in nets.items()
    }
  )(params)
  outputs = {a: np.asarray(x) for a, x in outputs.items()}
  own = "tanh" if name == "mlp" else "relu"
  other = "relu" if name == "mlp" else "tanh"
  np.testing.assert_array_equal(outputs[""], outputs[own])
  assert np.max(np.abs(outputs[own] - outputs[other])) > 1e-4


def test_unknown_activation_is_one_line():
  with pytest.raises(ValueError, match="Unknown activation 'gelu'"):
    networks.make_network("mlp", _spec((10, 10, 4), "HWC"), activation="gelu")


@pytest.mark.parametrize("name", ["mlp", "minatar"])
@pytest.mark.slow
def test_separate_critic_torso_keeps_the_value_loss_out_of_the_policy_features(name):
  """`shared_torso=False` (PureJaxRL's separate actor and critic): the value's gradient
  reaches only the critic's torso and head, the logits' only the actor's."""
  spec = _spec((10, 10, 4), "HWC")
  net = networks.make_network(name, spec, activation="relu", shared_torso=False)
  params = networks.init_params(net, spec, jax.random.PRNGKey(0))
  assert set(params["params"]) == {"torso", "critic_torso", "Dense_0", "Dense_1"}
  obs = jax.random.bernoulli(jax.random.PRNGKey(1), 0.3, (5, 10, 10, 4)).astype(jnp.float32)
  value_grads, logit_grads = jax.jit(
    lambda p: (  # one compile, not one per op
      jax.grad(lambda p: net.apply(p, obs)[1].sum())(p)["params"],
      jax.grad(lambda p: net.apply(p, obs)[0].sum())(p)["params"],
    )
  )(params)
  norm = lambda tree: float(sum(np.abs(np.asarray(x)).sum() for x in jax.tree.leaves(tree)))
  assert norm(value_grads["torso"]) == 0 and norm(value_grads["critic_torso"]) > 0
  assert norm(logit_grads["critic_torso"]) == 0 and norm(logit_grads["torso"]) > 0
  shared = networks.make_network(name, spec, activation="relu")
  assert "critic_torso" not in networks.init_params(shared, spec, jax.random.PRNGKey(0))["params"]


@pytest.mark.parametrize(
  "name,spec,message",
  [
    ("archnips", _spec((4,), "flat"), "is convolutional and expects image observations"),
    ("ba3c", _spec((4, 42, 42), "CHW", np.uint8), r"convolution 3 \(3x3, stride 1\) leaves no"),
    ("archnature", _spec((4, 24, 24), "CHW", np.uint8), r"convolution 2 \(3x3, stride 1\)"),
  ],
)
def test_a_conv_torso_that_does_not_fit_the_observations_is_one_line(name, spec, message):
  with pytest.raises(ValueError, match=message):
    networks.make_network(name, spec)


@pytest.mark.parametrize(
  "name,shape",
  [
    ("archnips", (4, 42, 42)),
    ("archnature", (4, 42, 42)),
    ("ba3c", (4, 84, 84)),
    ("minatar", (10, 10, 4)),
  ],
)
def test_conv_torsos_take_the_images_they_fit(name, shape):
  spec = _spec(shape, "HWC" if name == "minatar" else "CHW", np.uint8)
  net = networks.make_network(name, spec)
  # Traced, not compiled: a torso that does not fit fails (or gives other shapes) in the
  # trace already; the patch-convolution test above runs these layers.
  logits, value = jax.eval_shape(
    lambda: net.apply(
      networks.init_params(net, spec, jax.random.PRNGKey(0)), jnp.zeros((2, *shape), np.uint8)
    )
  )
  assert logits.shape == (2, 4) and value.shape == (2,)
