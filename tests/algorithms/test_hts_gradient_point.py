"""HTS-RL's gradient point (`config.hts.gradient_point`): "current" (the authors' code:
the learner's work on D_{k-1} starts at theta_k) and "stale" (Eq. 6 read literally: at
theta_{k-1}; HTS-PPO's epochs' change is added to theta_k); "auto" is HTS-A2C's "stale"
and HTS-PPO's "current"."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_hts import (
  SEGMENTS,
  delay_off_run,
  make_config,
  ppo_config,
  ppo_run,
  run,
  sgd_a2c_config,
  time_major_storage,
)

from galax.algorithms.a2c import a2c_grads
from galax.algorithms.hts.build import hts_settings
from galax.algorithms.hts.learners import StalePPOSegmentLearner
from galax.config import from_data


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


@pytest.mark.parametrize(
  "algorithm,given,read",
  [
    ("hts_a2c", "auto", "stale"),  # Eq. 6
    ("hts_ppo", "auto", "current"),  # the authors' code
    ("hts_a2c", "current", "current"),
    ("hts_ppo", "stale", "stale"),
  ],
)
def test_auto_is_eq6_for_a2c_and_the_authors_code_for_ppo(algorithm, given, read):
  config = make_config(algorithm, **{"hts.gradient_point": given})
  assert hts_settings(from_data(config), ppo=algorithm == "hts_ppo").gradient_point == read


@pytest.mark.slow
def test_hts_a2c_current_point_takes_its_gradient_at_theta_k():
  """theta_{k+1} - theta_k = -lr * grad L(theta_k; D_{k-1}), recomputed independently; the
  storage was still collected by theta_{k-1}. (test_hts's test_updates_follow_eq6 is
  "stale", the default.)"""
  algo, states, metrics = run(sgd_a2c_config(**{"hts.gradient_point": "current"}), SEGMENTS)
  for k, m in enumerate(metrics):
    v = {key: int(x[0, 0]) for key, x in m["hts"].items()}
    if k:
      assert v["data_version"] == k - 1 and v["grad_version"] == k
  apply_fn = jax.jit(algo.network.apply)
  lr = algo.setup.settings.optimizer.learning_rate
  settings = algo.setup.settings.returns, algo.setup.settings.loss
  grad_fn = jax.jit(lambda params, storage: a2c_grads(apply_fn, *settings, params, storage)[0])
  squeeze = lambda tree: jax.tree.map(lambda x: x[0], tree)
  for k in range(2, len(states) - 1):  # k = 1: theta_1 = theta_0, both points agree
    storage = time_major_storage(states[k])  # D_{k-1}
    theta_prev, theta_k = squeeze(states[k - 1].params), squeeze(states[k].params)
    logits, _ = apply_fn(theta_prev, storage.obs)
    np.testing.assert_allclose(storage.behaviour_logits, logits, rtol=1e-5, atol=1e-6)
    step = jax.tree.map(lambda new, old: new - old, squeeze(states[k + 1].params), theta_k)
    expected = jax.tree.map(lambda g: -lr * g, grad_fn(theta_k, storage))
    jax.tree.map(
      lambda s, e: np.testing.assert_allclose(s, e, rtol=1e-4, atol=1e-6), step, expected
    )
    stale = jax.tree.map(lambda g: -lr * g, grad_fn(theta_prev, storage))
    diff = max(
      float(np.max(np.abs(w - s))) for w, s in zip(jax.tree.leaves(stale), jax.tree.leaves(step))
    )
    assert diff > 1e-5  # the gradient at theta_{k-1} would give another step
  assert states[-1].extra.behaviour_params == ()  # nothing of theta_{k-1} is kept


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
  (one update of lag). At clip 1e-3 any lag shows; "current" is HTS-PPO's default
  (test_auto_is_eq6_for_a2c_and_the_authors_code_for_ppo): test_hts's run."""
  stale, current = run(ppo_config(**{"hts.gradient_point": "stale"}), SEGMENTS), ppo_run()
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


@pytest.mark.slow
def test_a_run_saved_at_theta_k_minus_1_does_not_resume_at_theta_k(tmp_path):
  """An HTS-A2C run saved before `auto` existed recorded "current" for what is now "stale".
  Resumed as "current", its checkpoint (which holds theta_{k-1}) stops it with one line
  instead of running another update (docs/architecture.md, HTS-RL)."""
  import json

  from galax.training.loop import train

  config = make_config("hts_a2c", **{"hts.gradient_point": "stale"})
  config.total_env_steps, config.tensorboard = 2 * config.envs_per_learner * 4, False
  train(config, workdir=str(tmp_path), log=lambda _: None)
  path = tmp_path / "config.json"
  saved = json.loads(path.read_text())
  saved["hts"]["gradient_point"] = "current"  # as such a run's config.json reads
  path.write_text(json.dumps(saved))
  config.hts.gradient_point = "current"
  config.total_env_steps *= 2
  with pytest.raises(ValueError, match="holds arrays of other shapes") as error:
    train(config, workdir=str(tmp_path), resume=True, log=lambda _: None)
  assert "behaviour_params" in str(error.value) and "\n" not in str(error.value)
