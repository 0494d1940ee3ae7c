"""RMSProp in both conventions against a hand-computed step; lr rules."""

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from galax.core import optimizers

GRAD = jnp.array([1.0, -2.0])


def _one_step(opt, steps=1):
  params = jnp.zeros(2)
  state = opt.init(params)
  for _ in range(steps):
    updates, state = opt.update(GRAD, state, params)
    params = optax.apply_updates(params, updates)
  return params


def test_rmsprop_tf_convention_hand_computed():
  # nu = .9 * 1 + .1 g^2 = [1.0, 1.3] (TF1 starts nu at 1); x = -lr g / sqrt(nu + eps)
  opt = optimizers.rmsprop(0.1, decay=0.9, eps=0.1, convention="tf", initial_scale=1.0)
  np.testing.assert_allclose(_one_step(opt), [-0.09534625892, 0.16903085095], rtol=1e-6)


def test_rmsprop_torch_convention_hand_computed():
  # nu = .1 g^2 = [0.1, 0.4]; x = -lr g / (sqrt(nu) + eps)
  opt = optimizers.rmsprop(0.1, decay=0.9, eps=0.1, convention="torch")
  np.testing.assert_allclose(_one_step(opt), [-0.24025307335, 0.27305411899], rtol=1e-6)


def test_rmsprop_torch_second_step_accumulates():
  # nu_2 = .9 * [0.1, 0.4] + .1 g^2 = [0.19, 0.76]
  opt = optimizers.rmsprop(0.1, decay=0.9, eps=0.1, convention="torch")
  first = np.array([-0.24025307335, 0.27305411899])
  second = -0.1 * np.array([1.0, -2.0]) / (np.sqrt([0.19, 0.76]) + 0.1)
  np.testing.assert_allclose(_one_step(opt, 2), first + second, rtol=1e-6)


def test_unknown_convention_is_rejected():
  with pytest.raises(ValueError, match="convention"):
    optimizers.rmsprop(0.1, 0.9, 0.1, "keras")


def test_lr_scaling_rules():
  assert optimizers.scaled_learning_rate(7e-4, "linear_envs", 32, 1) == pytest.approx(0.0224)
  assert optimizers.scaled_learning_rate(7e-4, "sqrt_learners", 16, 4) == pytest.approx(0.0014)
  assert optimizers.scaled_learning_rate(7e-4, "none", 16, 4) == 7e-4
  with pytest.raises(ValueError, match="scaling"):
    optimizers.scaled_learning_rate(1.0, "cubic", 1, 1)


def test_linear_annealing_reaches_zero():
  schedule = optimizers.learning_rate_schedule(1.0, "linear", 10)
  assert schedule(0) == pytest.approx(1.0)
  assert schedule(5) == pytest.approx(0.5)
  assert schedule(10) == pytest.approx(0.0)


def test_make_optimizer_clips_global_norm():
  cfg = optimizers.OptimizerSettings(
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
    max_grad_norm=1.0,
    clip_average_norm=0.0,
    sharded_state=False,
  )
  opt, _ = optimizers.make_optimizer(cfg, num_envs=1, num_learners=1, total_updates=1)
  updates, _ = opt.update(jnp.array([3.0, 4.0]), opt.init(jnp.zeros(2)))
  np.testing.assert_allclose(updates, [-0.6, -0.8], rtol=1e-6)
