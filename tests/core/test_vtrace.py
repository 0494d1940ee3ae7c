"""V-trace against hand-computed values; on-policy it is the n-step return of A2C. Each
test runs with and without jit (chex variants)."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
from trajectories import random_return_inputs

from galax.core import losses, returns

# The rollout of tests/core/test_returns.py: T = 5, gamma = 0.5, terminated at t = 1,
# truncated at t = 3.
REWARDS = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
TERMINATED = jnp.array([0, 1, 0, 0, 0], bool)
TRUNCATED = jnp.array([0, 0, 0, 1, 0], bool)
VALUES = jnp.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
DISCOUNTS = 0.5 * (1.0 - TERMINATED)

# T = 3, no episode end, gamma = 0.5; pi / mu = [2, 0.5, 0.25].
R3 = jnp.array([1.0, 2.0, 3.0])
V3 = jnp.array([4.0, 5.0, 6.0, 7.0])
D3 = jnp.full(3, 0.5)
NO_END = jnp.zeros(3, bool)
LOG_RHOS = jnp.log(jnp.array([2.0, 0.5, 0.25]))


class VTraceTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_on_policy_vtrace_is_the_nstep_return(self):
    out = self.variant(returns.vtrace)(REWARDS, DISCOUNTS, VALUES, TRUNCATED, jnp.zeros(5))
    # n-step returns by hand (tests/core/test_returns.py): [2, 2, 17.5, 29, 35].
    np.testing.assert_allclose(out.vs, [2.0, 2.0, 17.5, 29.0, 35.0])
    np.testing.assert_allclose(out.pg_advantages, [-8.0, -18.0, -12.5, -11.0, -15.0])
    np.testing.assert_allclose(out.vs, returns.nstep_returns(REWARDS, DISCOUNTS, VALUES, TRUNCATED))

  @chex.variants(with_jit=True, without_jit=True)
  def test_on_policy_vtrace_equals_nstep_returns_batched(self):
    t, b = 7, 4
    r, d, v, trunc = random_return_inputs(0, steps=t, envs=b)
    vtrace = self.variant(functools.partial(returns.vtrace, rho_bar=1.0, c_bar=1.0))
    out = vtrace(r, d, v, trunc, jnp.zeros((t, b)))
    nstep = returns.nstep_returns(r, d, v, trunc)
    np.testing.assert_allclose(out.vs, nstep, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.pg_advantages, nstep - v[:-1], rtol=1e-5, atol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_off_policy_hand_computed(self):
    # rho = c = [1, .5, .25] (the ratio 2 is truncated at 1)
    # delta = rho (r + .5 V' - V) = [1 * -0.5, .5 * 0, .25 * .5] = [-.5, 0, .125]
    # v - V: a2 = .125; a1 = 0 + .5 * .5 * .125 = .03125; a0 = -.5 + .5 * 1 * .03125 = -.484375
    # A_t = rho (r + .5 v_{t+1} - V): A0 = 1 + 2.515625 - 4; A1 = .5 (2 + 3.0625 - 5);
    #       A2 = .25 (3 + .5 * 7 - 6)
    out = self.variant(returns.vtrace)(R3, D3, V3, NO_END, LOG_RHOS)
    np.testing.assert_allclose(out.vs, [3.515625, 5.03125, 6.125], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantages, [-0.484375, 0.03125, 0.125], rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_rho_bar_and_c_bar_truncate_separately(self):
    # rho_bar = 2 keeps rho_0 = 2, c_bar = 1 still cuts c_0 to 1:
    # delta0 = 2 * (1 + 2.5 - 4) = -1; a0 = -1 + .5 * 1 * .03125 = -.984375;
    # A0 = 2 (1 + 2.515625 - 4) = -.96875
    vtrace = self.variant(functools.partial(returns.vtrace, rho_bar=2.0, c_bar=1.0))
    out = vtrace(R3, D3, V3, NO_END, LOG_RHOS)
    np.testing.assert_allclose(out.vs, [3.015625, 5.03125, 6.125], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantages, [-0.96875, 0.03125, 0.125], rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_truncation_cuts_the_trace_and_bootstraps_from_the_final_value(self):
    # pi / mu = .5 everywhere, truncated at t = 1: rho = [.5, .5, .5], c = [.5, 0, .5]
    # delta = [.5 * -.5, .5 * 0, .5 * .5] = [-.25, 0, .25]
    # a2 = .25; a1 = 0 + .5 * 0 * .25 = 0; a0 = -.25 + .5 * .5 * 0 = -.25
    # A1 bootstraps from V(x_2) = 6, not from v_2 = 6.25: A1 = .5 (2 + 3 - 5) = 0
    truncated = jnp.array([False, True, False])
    out = self.variant(returns.vtrace)(R3, D3, V3, truncated, jnp.log(jnp.full(3, 0.5)))
    np.testing.assert_allclose(out.vs, [3.75, 5.0, 6.25], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantages, [-0.25, 0.0, 0.25], rtol=1e-6, atol=1e-7)

  @chex.variants(with_jit=True, without_jit=True)
  def test_batched_equals_per_env_and_no_gradient_flows(self):
    rng = np.random.default_rng(1)
    t, b = 6, 3
    r = jnp.asarray(rng.normal(size=(t, b)), jnp.float32)
    trunc = jnp.asarray(rng.random((t, b)) < 0.2)
    v = jnp.asarray(rng.normal(size=(t + 1, b)), jnp.float32)
    d = jnp.full((t, b), 0.9)
    log_rhos = jnp.asarray(rng.normal(size=(t, b)), jnp.float32)
    vtrace = self.variant(returns.vtrace)
    batched = vtrace(r, d, v, trunc, log_rhos)
    for j in range(b):
      single = vtrace(r[:, j], d[:, j], v[:, j], trunc[:, j], log_rhos[:, j])
      np.testing.assert_allclose(batched.vs[:, j], single.vs, rtol=1e-6)
      np.testing.assert_allclose(batched.pg_advantages[:, j], single.pg_advantages, rtol=1e-6)
    grads = jax.grad(lambda v_, lr: jnp.sum(returns.vtrace(r, d, v_, trunc, lr).vs), (0, 1))(
      v, log_rhos
    )
    for g in grads:
      np.testing.assert_array_equal(g, 0.0)

  @chex.variants(with_jit=True, without_jit=True)
  def test_shapes_are_checked(self):
    vtrace = self.variant(returns.vtrace)
    with self.assertRaises(AssertionError):
      vtrace(R3, D3, V3[:-1], NO_END, LOG_RHOS)
    with self.assertRaises(AssertionError):
      vtrace(R3, D3, V3, NO_END, LOG_RHOS[:2])

  @chex.variants(with_jit=True, without_jit=True)
  def test_off_policy_loss_with_on_policy_targets_is_the_a2c_loss(self):
    rng = np.random.default_rng(2)
    t, b, a = 4, 3, 5
    logits = jnp.asarray(rng.normal(size=(t, b, a)), jnp.float32)
    values = jnp.asarray(rng.normal(size=(t, b)), jnp.float32)
    actions = jnp.asarray(rng.integers(0, a, size=(t, b)))
    targets = jnp.asarray(rng.normal(size=(t, b)), jnp.float32)
    mask = jnp.asarray(rng.random((t, b)) < 0.8, jnp.float32)
    coefs = dict(entropy_coef=0.01, value_coef=0.5)
    a2c = self.variant(functools.partial(losses.a2c_loss, **coefs))(
      logits, values, actions, targets, mask
    )
    off_policy = {
      reduction: self.variant(
        functools.partial(losses.off_policy_actor_critic_loss, **coefs, reduction=reduction)
      )(logits, values, actions, targets - values, targets, mask)
      for reduction in ("mean", "sum")
    }
    chex.assert_trees_all_close(tuple(a2c), tuple(off_policy["mean"]), rtol=1e-6)
    chex.assert_trees_all_close(
      tuple(off_policy["sum"]), tuple(x * t * b for x in off_policy["mean"]), rtol=1e-5
    )
    with self.assertRaisesRegex(ValueError, "reduction"):
      losses.off_policy_actor_critic_loss(
        logits, values, actions, targets, targets, mask, 0.01, 0.5, "max"
      )
