"""PPO's diagnostics beside the losses: CleanRL's approximate KL and the value function's
explained variance, by hand and through the learner's metrics (PPO and HTS-PPO)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from trajectories import random_trajectory

from galax.algorithms import ppo
from galax.algorithms.hts.learners import PPOSegmentLearner
from galax.config import base_config, from_data, run_settings
from galax.core.optimizers import ReplicatedOptimizer
from galax.parallel.combine import Independent

STEPS, ENVS = 8, 4
PARAMS = {
  "pi": jnp.array([[0.5, -1.0], [2.0, 0.1], [-0.3, 0.7]]),
  "v": jnp.array([[0.2], [-0.4], [1.5]]),
}


def _apply(params, obs):  # a linear actor-critic
  return obs @ params["pi"], (obs @ params["v"])[..., 0]


def _traj(key=7):
  """Random experience whose behaviour logits and values are PARAMS' own (on-policy)."""
  traj = random_trajectory(jax.random.PRNGKey(key), steps=STEPS, envs=ENVS)
  logits, _ = _apply(PARAMS, traj.obs)
  _, last = _apply(PARAMS, traj.obs[-1])
  values = jnp.concatenate([_apply(PARAMS, traj.obs)[1], last[None]])
  return traj._replace(behaviour_logits=logits, values=values)


def _learner(epochs, minibatches, lr):
  c = base_config()
  c.ppo.epochs, c.ppo.minibatches = epochs, minibatches
  optimizer = ReplicatedOptimizer(optax.sgd(lr))
  settings = ppo.ppo_settings(run_settings(c), ppo.ppo_section(from_data(c)))
  return ppo.PPOLearner(_apply, settings, optimizer, Independent(), 1, STEPS, ENVS)


@functools.lru_cache(maxsize=None)
def _compiled(epochs, minibatches, lr):
  """The learner and its jitted begin, unit and finish: compiled once per module, not once
  per test (eager dispatch compiles every op)."""
  learner = _learner(epochs, minibatches, lr)
  return learner, jax.jit(learner.begin), jax.jit(learner.unit), jax.jit(learner.finish)


def _begin(learner, traj, begin=None):
  stacked = jax.tree.map(lambda x: x[None], PARAMS)
  return (begin or jax.jit(learner.begin))(
    stacked, learner.optimizer.init(stacked), traj, jax.random.PRNGKey(1)[None]
  )


def _log_softmax(x):
  x = np.asarray(x, np.float64)
  return x - np.log(np.sum(np.exp(x), -1, keepdims=True))


def test_approx_kl_hand_computed():
  # Ratios 1.6 and 2.0 (test_ppo's two samples): (r - 1) - ln r = 0.1299964, 0.3068528.
  log_ratio = jnp.log(jnp.array([1.6, 2.0]))
  np.testing.assert_allclose(
    ppo.approx_kl(log_ratio, jnp.ones(2)), (0.1299964 + 0.3068528) / 2, rtol=1e-5
  )
  # Masked entries count as 0 over all collected entries, as in the clip fraction.
  np.testing.assert_allclose(
    ppo.approx_kl(log_ratio, jnp.array([1.0, 0.0])), 0.1299964 / 2, rtol=1e-5
  )
  # Unchanged policy: exactly 0; ratios below 1 count too (ln 0.5: 0.1931472).
  assert float(ppo.approx_kl(jnp.zeros(3), jnp.ones(3))) == 0.0
  np.testing.assert_allclose(
    ppo.approx_kl(jnp.log(jnp.array([0.5])), jnp.ones(1)), 0.1931472, rtol=1e-5
  )


def test_approx_kl_is_never_negative():
  log_ratio = jnp.concatenate(
    [jax.random.normal(jax.random.PRNGKey(0), (1000,)), jnp.array([1e-8, -1e-8, 1e-30, -3e-4])]
  )
  terms = jax.vmap(lambda x: ppo.approx_kl(x[None], jnp.ones(1)))(log_ratio)
  assert np.all(np.asarray(terms) >= 0.0)


@pytest.mark.slow
def test_approx_kl_is_zero_on_the_first_minibatch_and_positive_after():
  learner, begin, unit, finish = _compiled(epochs=2, minibatches=2, lr=0.5)
  carry = unit(_begin(learner, _traj(), begin), 0)
  # The first minibatch of the first epoch is taken at the behaviour parameters.
  assert float(carry.sums.approx_kl[0]) < 1e-10
  assert float(carry.sums.first_clip_fraction[0]) == 0.0
  for u in range(1, learner.num_units):
    carry = unit(carry, u)
  metrics = finish(carry)[2]
  assert float(metrics["approx_kl"][0]) > 1e-4


def test_approx_kl_is_the_mean_over_the_update_of_a_hand_computation():
  """Per minibatch: (r - 1) - ln r by numpy, at the parameters before that minibatch's step,
  masked mean over its samples; the metric is the mean over the epochs x minibatches."""
  learner, begin, unit, finish = _compiled(epochs=2, minibatches=2, lr=0.5)
  carry = _begin(learner, _traj(), begin)
  batch = jax.tree.map(lambda x: np.asarray(x[0]), carry.batch)
  size, expected = learner.minibatch_size, []
  for u in range(learner.num_units):
    idx = np.asarray(carry.perms)[0, u // 2, (u % 2) * size : (u % 2 + 1) * size]
    params = jax.tree.map(lambda x: x[0], carry.params)
    logits, _ = _apply(params, jnp.asarray(batch.obs[idx]))
    pick = lambda lp: np.take_along_axis(lp, batch.actions[idx, None], -1)[:, 0]
    log_r = pick(_log_softmax(logits)) - pick(_log_softmax(batch.behaviour_logits[idx]))
    expected.append(np.sum((np.expm1(log_r) - log_r) * batch.mask[idx]) / size)
    carry = unit(carry, u)
  metrics = finish(carry)[2]
  assert max(expected) > 1e-3  # the policy moved
  np.testing.assert_allclose(metrics["approx_kl"][0], np.mean(expected), rtol=1e-4)


def test_explained_variance_hand_computed():
  targets = jnp.array([1.0, 2.0, 3.0, 4.0])
  ones = jnp.ones(4)
  assert float(ppo.explained_variance(targets, targets, ones)) == 1.0  # perfect values
  values = jnp.array([1.5, 1.5, 3.5, 3.0])
  expected = 1.0 - np.var(np.array([1, 2, 3, 4]) - np.array([1.5, 1.5, 3.5, 3.0])) / np.var(
    [1, 2, 3, 4]
  )  # 1 - 0.421875 / 1.25 = 0.6625
  np.testing.assert_allclose(ppo.explained_variance(targets, values, ones), expected, rtol=1e-6)
  np.testing.assert_allclose(expected, 0.6625)
  # Masked entries are left out: the last target (garbage after an auto-reset) is not data.
  garbage = targets.at[3].set(100.0)
  mask = jnp.array([1.0, 1.0, 1.0, 0.0])
  np.testing.assert_allclose(
    ppo.explained_variance(garbage, values, mask),
    1.0 - np.var([-0.5, 0.5, -0.5]) / np.var([1.0, 2.0, 3.0]),
    rtol=1e-6,
  )
  # The mean as a constant guess explains nothing; worse guesses go below 0.
  np.testing.assert_allclose(ppo.explained_variance(targets, jnp.full(4, 2.5), ones), 0.0)
  assert float(ppo.explained_variance(targets, -targets, ones)) < 0.0
  # Constant targets (no variance to explain) and an all-masked batch: the documented 0.
  assert float(ppo.explained_variance(jnp.zeros(4), values, ones)) == 0.0
  assert float(ppo.explained_variance(targets, values, jnp.zeros(4))) == 0.0


def test_explained_variance_metric_uses_the_values_before_the_update():
  traj = _traj()
  returns = _learner(1, 1, 0.0).settings.returns
  lam = returns.gae_lambda if returns.kind == "gae" else 1.0
  _, targets = ppo.gae_targets(traj, returns.gamma, lam)
  valid = np.asarray(traj.valid)
  residual = (np.asarray(targets) - np.asarray(traj.values[:-1]))[valid]
  expected = 1.0 - np.var(residual) / np.var(np.asarray(targets)[valid])
  for lr in (0.0, 0.5):  # the update's steps do not change it
    learner, begin, unit, finish = _compiled(epochs=2, minibatches=2, lr=lr)
    carry = _begin(learner, traj, begin)
    for u in range(learner.num_units):
      carry = unit(carry, u)
    metrics = finish(carry)[2]
    np.testing.assert_allclose(metrics["explained_variance"][0], expected, rtol=1e-5)


def test_hts_ppo_reports_the_same_metrics():
  learner = _learner(epochs=1, minibatches=2, lr=0.5)
  segment = PPOSegmentLearner(learner)
  stacked = jax.tree.map(lambda x: x[None], PARAMS)
  carry = jax.jit(segment.begin, static_argnums=0)(  # jitted: eager compiles every op
    None, stacked, learner.optimizer.init(stacked), _traj(), jax.random.PRNGKey(1)[None]
  )
  unit = jax.jit(segment.unit)
  for u in range(segment.num_units):
    carry = unit(carry, u)
  ours, theirs = jax.jit(lambda c: (segment.finish(c)[2], learner.finish(c)[2]))(carry)
  for key in ("approx_kl", "explained_variance", "clip_fraction", "first_clip_fraction"):
    np.testing.assert_array_equal(ours[key], theirs[key])
