"""Returns and advantages against hand-computed values (terminations and truncations
in the middle of a rollout), each with and without jit (chex variants)."""

import functools

import chex
import jax.numpy as jnp
import numpy as np
from absl.testing import parameterized
from trajectories import random_return_inputs

from galax.core import returns

# One env, T = 5, gamma = 0.5. Terminated at t = 1, truncated (time limit) at t = 3.
REWARDS = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
TERMINATED = jnp.array([0, 1, 0, 0, 0], bool)
TRUNCATED = jnp.array([0, 0, 0, 1, 0], bool)
VALUES = jnp.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])  # V(o_0) .. V(o_5)
GAMMA = 0.5
DISCOUNTS = GAMMA * (1.0 - TERMINATED)


class ReturnsTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_nstep_returns_hand_computed(self):
    # G4 = 5 + .5 * V5 = 35          (bootstrap from the last value)
    # G3 = 4 + .5 * V4 = 29          (truncated: bootstrap from V(final obs), not from G4)
    # G2 = 3 + .5 * G3 = 17.5
    # G1 = 2                          (terminated: no bootstrap)
    # G0 = 1 + .5 * G1 = 2
    g = self.variant(returns.nstep_returns)(REWARDS, DISCOUNTS, VALUES, TRUNCATED)
    np.testing.assert_allclose(g, [2.0, 2.0, 17.5, 29.0, 35.0])

  @chex.variants(with_jit=True, without_jit=True)
  def test_nstep_returns_without_episode_end_is_discounted_sum_plus_bootstrap(self):
    r = jnp.array([1.0, 0.0, 2.0])
    v = jnp.array([0.0, 0.0, 0.0, 8.0])
    g = self.variant(returns.nstep_returns)(r, jnp.full(3, 0.9), v, jnp.zeros(3, bool))
    expected = [1 + 0.9**2 * 2 + 0.9**3 * 8, 0.9 * 2 + 0.9**2 * 8, 2 + 0.9 * 8]
    np.testing.assert_allclose(g, expected, rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_gae_hand_computed(self):
    # delta = r + d V' - V = [1, -18, -7, -11, -15]; lambda_t = .5 (0 where truncated)
    # A4 = -15; A3 = -11; A2 = -7 + .5*.5*A3 = -9.75; A1 = -18; A0 = 1 + .5*.5*A1 = -3.5
    a = self.variant(returns.gae_advantages)(REWARDS, DISCOUNTS, VALUES, TRUNCATED, 0.5)
    np.testing.assert_allclose(a, [-3.5, -18.0, -9.75, -11.0, -15.0])

  @chex.variants(with_jit=True, without_jit=True)
  def test_lambda_returns_hand_computed_and_equal_to_gae_plus_values(self):
    g = self.variant(returns.lambda_returns)(REWARDS, DISCOUNTS, VALUES, TRUNCATED, 0.5)
    np.testing.assert_allclose(g, [6.5, 2.0, 20.25, 29.0, 35.0])
    a = self.variant(returns.gae_advantages)(REWARDS, DISCOUNTS, VALUES, TRUNCATED, 0.5)
    np.testing.assert_allclose(g, a + VALUES[:-1])

  @chex.variants(with_jit=True, without_jit=True)
  def test_lambda_zero_is_one_step_td_target(self):
    g = self.variant(returns.lambda_returns)(REWARDS, DISCOUNTS, VALUES, TRUNCATED, 0.0)
    np.testing.assert_allclose(g, REWARDS + DISCOUNTS * VALUES[1:])

  @chex.variants(with_jit=True, without_jit=True)
  @parameterized.named_parameters(
    ("nstep", returns.nstep_returns),
    ("gae", functools.partial(returns.gae_advantages, lambda_=0.9)),
  )
  def test_batched_equals_per_env(self, fn):
    b = 3
    r, d, v, trunc = random_return_inputs(0, steps=6, envs=b)
    fn = self.variant(fn)
    batched = fn(r, d, v, trunc)
    for j in range(b):
      np.testing.assert_allclose(
        batched[:, j], fn(r[:, j], d[:, j], v[:, j], trunc[:, j]), rtol=1e-6
      )

  @chex.variants(with_jit=True, without_jit=True)
  def test_shape_mismatch_is_rejected(self):
    with self.assertRaises(AssertionError):
      self.variant(returns.nstep_returns)(REWARDS, DISCOUNTS, VALUES[:-1], TRUNCATED)
