"""The A2C loss against hand-computed values, and its masking, each with and without jit
(chex variants)."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np

from galax.core import losses


class A2CLossTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_a2c_loss_hand_computed(self):
    # T = 1, B = 2, two actions. Env 0: uniform policy, action 0, G = 2, V = 1 (A = 1).
    # Env 1: logits [log 3, 0] -> pi = [.75, .25], action 1, G = 0, V = 1 (A = -1).
    logits = jnp.array([[[0.0, 0.0], [np.log(3.0), 0.0]]])
    values = jnp.array([[1.0, 1.0]])
    actions = jnp.array([[0, 1]])
    targets = jnp.array([[2.0, 0.0]])
    mask = jnp.ones((1, 2))
    loss = self.variant(functools.partial(losses.a2c_loss, entropy_coef=0.1, value_coef=0.5))
    terms = loss(logits, values, actions, targets, mask)
    log_pi = np.array([np.log(0.5), np.log(0.25)])
    policy = -np.mean(log_pi * np.array([1.0, -1.0]))
    entropy = np.mean([np.log(2.0), -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))])
    value = np.mean([1.0, 1.0])
    np.testing.assert_allclose(terms.policy, policy, rtol=1e-6)
    np.testing.assert_allclose(terms.entropy, entropy, rtol=1e-6)
    np.testing.assert_allclose(terms.value, value, rtol=1e-6)
    np.testing.assert_allclose(terms.total, policy - 0.1 * entropy + 0.5 * value, rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_masked_transitions_contribute_nothing(self):
    rng = np.random.default_rng(0)
    logits = jnp.asarray(rng.normal(size=(3, 2, 4)), jnp.float32)
    values = jnp.asarray(rng.normal(size=(3, 2)), jnp.float32)
    actions = jnp.asarray(rng.integers(0, 4, size=(3, 2)))
    targets = jnp.asarray(rng.normal(size=(3, 2)), jnp.float32)
    mask = jnp.array([[1.0, 1.0], [0.0, 1.0], [1.0, 1.0]])

    def total(lg, v):
      return losses.a2c_loss(lg, v, actions, targets, mask, 0.01, 0.5).total

    g_logits, g_values = self.variant(jax.grad(total, argnums=(0, 1)))(logits, values)
    assert np.all(np.asarray(g_logits[1, 0]) == 0.0)
    assert float(g_values[1, 0]) == 0.0
    # Changing a masked entry's data does not change the loss.
    total = self.variant(total)
    changed = total(logits.at[1, 0].set(100.0), values.at[1, 0].set(-50.0))
    np.testing.assert_allclose(changed, total(logits, values), rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_sum_over_time_scales_by_t(self):
    logits = jnp.zeros((5, 1, 2))
    args = (jnp.zeros((5, 1)), jnp.zeros((5, 1), jnp.int32), jnp.ones((5, 1)), jnp.ones((5, 1)))
    loss = functools.partial(losses.a2c_loss, entropy_coef=0.0, value_coef=0.5)
    mean = self.variant(loss)(logits, *args).total
    summed = self.variant(functools.partial(loss, sum_over_time=True))(logits, *args).total
    np.testing.assert_allclose(summed, 5 * mean, rtol=1e-6)

  @chex.variants(with_jit=True, without_jit=True)
  def test_rank_mismatch_is_rejected(self):
    loss = self.variant(functools.partial(losses.a2c_loss, entropy_coef=0.01, value_coef=0.5))
    with self.assertRaises(AssertionError):
      loss(
        jnp.zeros((5, 2)),
        jnp.zeros((5, 2)),
        jnp.zeros((5, 2), jnp.int32),
        jnp.zeros((5, 2)),
        jnp.ones((5, 2)),
      )
