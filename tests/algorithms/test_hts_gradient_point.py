"""HTS-PPO's gradient point (`config.hts.gradient_point`): "current" (the authors' code:
the epochs on D_{k-1} start at theta_k) and "stale" (Eq. 6 read literally: they start at
theta_{k-1} and their change is added to theta_k)."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_hts import delay_off_run, make_config, run

from galax.algorithms.hts.learners import StalePPOSegmentLearner


class _Carry(NamedTuple):
  params: jax.Array
  opt_state: tuple
  anchor: tuple = ()


class _QuadraticSGD:
  """A stand-in for PPOLearner: `epochs` SGD steps on L(theta) = |theta - a|^2 / 2."""

  num_units, combiner = 3, None

  def __init__(self, a, lr):
    self.a, self.lr = a, lr

  def begin(self, params, opt_state, traj, keys):
    del traj, keys
    return _Carry(params, opt_state)

  def unit(self, carry, u):
    del u
    return carry._replace(params=carry.params - self.lr * (carry.params - self.a))

  def finish(self, carry):
    return carry.params, carry.opt_state, {}


def test_stale_point_is_eq6_on_a_toy_quadratic():
  a, lr = jnp.array([1.0, -2.0]), 0.25
  theta_prev, theta_now = jnp.array([0.5, 0.5]), jnp.array([3.0, 1.0])
  learner = StalePPOSegmentLearner(_QuadraticSGD(a, lr))
  kept = learner.keep_behaviour(theta_prev)
  start, version = learner.gradient_point(kept, theta_now, (jnp.int32(4), jnp.int32(5)))
  assert int(version) == 4 and np.array_equal(start, theta_prev)
  carry = learner.begin(start, theta_now, (), None, None)
  for u in range(learner.num_units):
    carry = learner.ppo.unit(carry, u)
  params, _, _ = learner.finish(carry)
  # By hand: 3 SGD steps from theta_{k-1}, theta' = a + (1 - lr)^3 (theta_{k-1} - a); their
  # change, theta' - theta_{k-1}, applied to theta_k.
  moved = a + (1 - lr) ** 3 * (theta_prev - a)
  np.testing.assert_allclose(params, theta_now + (moved - theta_prev), rtol=1e-6)
  # One epoch of one step is Eq. 6 itself: theta_k - lr * grad L(theta_{k-1}).
  one = StalePPOSegmentLearner(_QuadraticSGD(a, lr))
  one.ppo.num_units = 1
  carry = one.ppo.unit(one.begin(theta_prev, theta_now, (), None, None), 0)
  np.testing.assert_allclose(one.finish(carry)[0], theta_now - lr * (theta_prev - a), rtol=1e-6)


def test_gradient_point_is_checked():
  with pytest.raises(ValueError, match="gradient_point='midway' is not one of"):
    make_config("hts_ppo", **{"hts.gradient_point": "midway"})
  with pytest.raises(ValueError, match="applies to hts_ppo"):
    make_config("hts_a2c", **{"hts.gradient_point": "stale"})


@pytest.mark.slow
def test_with_the_delay_off_both_points_are_the_same_ppo_bit_for_bit():
  # 3 segments: the current point's run is test_hts's delay-off run (one build per process).
  stale, current = delay_off_run("hts_ppo", "stale"), delay_off_run("hts_ppo")
  for a, b in zip(jax.tree.leaves(stale[1][-1].params), jax.tree.leaves(current[1][-1].params)):
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_stale_epochs_start_on_policy_and_current_ones_do_not():
  """The first minibatch's clip fraction: 0 where the epochs start at the behaviour
  parameters theta_{k-1} (ratio 1 up to rounding), above 0 where they start at theta_k
  (one update of lag)."""
  config = lambda point: make_config(
    "hts_ppo", **{"hts.gradient_point": point, "optimizer.learning_rate": 3e-3, "ppo.clip": 1e-3}
  )  # any lag shows
  stale, current = run(config("stale"), 4), run(config("current"), 4)
  first = lambda r, k: float(np.mean(r[2][k]["first_clip_fraction"]))
  for k in range(1, 4):  # k = 0 learns nothing (no D_{-1})
    assert first(stale, k) == 0.0
  assert max(first(current, k) for k in range(1, 4)) > 0.0
  # theta_{k-1} is what the stale learner keeps; the two points give different runs.
  for a, b in zip(
    jax.tree.leaves(stale[1][3].extra.behaviour_params), jax.tree.leaves(stale[1][2].params)
  ):
    np.testing.assert_array_equal(a, b)
  assert any(
    not np.array_equal(a, b)
    for a, b in zip(jax.tree.leaves(stale[1][4].params), jax.tree.leaves(current[1][4].params))
  )
