"""Per-tensor clipping by average norm (TF's clip_by_average_norm) against hand values."""

import jax.numpy as jnp
import numpy as np
import pytest

from galax.core import optimizers


def test_clip_by_average_norm_hand_computed():
  grads = dict(big=jnp.array([3.0, 4.0]), small=jnp.array([0.01, 0.0, 0.0]), zero=jnp.zeros(4))
  clipped, _ = optimizers.clip_by_average_norm(0.1).update(grads, ())
  # big: ||g|| = 5, size 2, average norm 2.5 > 0.1 -> g * 0.1 / 2.5 = g * 0.04
  np.testing.assert_allclose(clipped["big"], [0.12, 0.16], rtol=1e-6)
  # small: average norm 0.01 / 3 < 0.1 -> unchanged; an all-zero tensor stays zero.
  np.testing.assert_array_equal(clipped["small"], grads["small"])
  np.testing.assert_array_equal(clipped["zero"], grads["zero"])


def test_average_norm_is_norm_over_size_not_rms():
  # g = [0.3] * 4: ||g|| = 0.6, average norm 0.15 (an RMS would be 0.3) -> scale 0.1 / 0.15.
  g = jnp.full(4, 0.3)
  clipped, _ = optimizers.clip_by_average_norm(0.1).update(g, ())
  np.testing.assert_allclose(clipped, np.full(4, 0.3 * 0.1 / 0.15), rtol=1e-6)
  # At an average norm of exactly 0.1 nothing changes: g = [0.2] * 4 has 0.4 / 4 = 0.1.
  same, _ = optimizers.clip_by_average_norm(0.1).update(jnp.full(4, 0.2), ())
  np.testing.assert_allclose(same, np.full(4, 0.2), rtol=1e-6)


def _sgd(**overrides):
  cfg = dict(
    name="sgd",
    learning_rate=1.0,
    lr_scaling="none",
    anneal="none",
    eps=1e-5,
    rmsprop_decay=0.99,
    rmsprop_convention="torch",
    rmsprop_initial_scale=0.0,
    adam_b1=0.9,
    adam_b2=0.999,
    max_grad_norm=0.0,
    clip_average_norm=0.0,
    sharded_state=False,
  )
  cfg.update(overrides)
  opt, _ = optimizers.make_optimizer(optimizers.OptimizerSettings(**cfg), 1, 1, 1)
  return opt


def test_make_optimizer_clips_per_tensor_then_globally():
  grads = dict(a=jnp.array([3.0, 4.0]), b=jnp.array([0.01, 0.0, 0.0]))
  params = dict(a=jnp.zeros(2), b=jnp.zeros(3))
  opt = _sgd(clip_average_norm=0.1)
  updates, _ = opt.update(grads, opt.init(params), params)
  np.testing.assert_allclose(updates["a"], [-0.12, -0.16], rtol=1e-6)
  np.testing.assert_allclose(updates["b"], [-0.01, 0.0, 0.0], rtol=1e-6)
  # Then the global norm: sqrt(0.2^2 + 0.01^2) = 0.200249... > 0.1 -> scale 0.1 / 0.200249.
  opt = _sgd(clip_average_norm=0.1, max_grad_norm=0.1)
  updates, _ = opt.update(grads, opt.init(params), params)
  scale = 0.1 / np.sqrt(0.2**2 + 0.01**2)
  np.testing.assert_allclose(updates["a"], -scale * np.array([0.12, 0.16]), rtol=1e-5)
  np.testing.assert_allclose(updates["b"], -scale * np.array([0.01, 0.0, 0.0]), rtol=1e-5)


def test_negative_clip_is_rejected():
  from galax.config import load, validate

  config = load("cartpole_a2c")
  config.optimizer.clip_average_norm = -1.0
  with pytest.raises(ValueError, match="clip_average_norm"):
    validate(config)
