"""PPO: the loss against hand-computed values, advantage normalization, minibatching, and a
short learning check on CartPole."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from run_helpers import plan_of

from galax.algorithms.ppo import PPOLearner, ppo_section, ppo_settings
from galax.config import base_config, from_data, run_settings
from galax.core import losses
from galax.core.optimizers import ReplicatedOptimizer
from galax.core.rollout import Trajectory
from galax.parallel.combine import Independent
from galax.training.loop import train

# Two samples, two actions, clip 0.2.
#   sample 0: pi = (0.8, 0.2), mu = (0.5, 0.5), a = 0: ratio 1.6, A = +1
#             -> min(1.6, clip(1.6) = 1.2) = 1.2
#   sample 1: pi = (0.5, 0.5), mu = (0.75, 0.25), a = 1: ratio 2.0, A = -2
#             -> min(-4.0, -2.4) = -4.0
#   L_pi = -(1.2 - 4.0) / 2 = 1.4
#   V = (1.0, -0.5), V_old = (0.5, 0.0), G = (2.0, 0.0)
#   V_clipped = (0.5 + 0.2, 0.0 - 0.2) = (0.7, -0.2)
#   (V - G)^2 = (1.0, 0.25); (V_clipped - G)^2 = (1.69, 0.04); max = (1.69, 0.25)
#   L_V = 0.5 * (1.69 + 0.25) / 2 = 0.485
#   H = (-(0.8 ln 0.8 + 0.2 ln 0.2), ln 2) = (0.5004024, 0.6931472); L_H = 0.5967748
#   L = 1.4 + 0.5 * 0.485 - 0.01 * 0.5967748 = 1.6365323
LOGITS = np.log([[0.8, 0.2], [0.5, 0.5]]).astype(np.float32)
BEHAVIOUR = np.log([[0.5, 0.5], [0.75, 0.25]]).astype(np.float32)
ACTIONS = np.array([0, 1])
VALUES = np.array([1.0, -0.5], np.float32)
OLD_VALUES = np.array([0.5, 0.0], np.float32)
ADVANTAGES = np.array([1.0, -2.0], np.float32)
RETURNS = np.array([2.0, 0.0], np.float32)


def _loss(mask, **kw):
  args = dict(clip=0.2, entropy_coef=0.01, value_coef=0.5)
  args.update(kw)
  return losses.ppo_loss(
    jnp.asarray(LOGITS),
    jnp.asarray(VALUES),
    jnp.asarray(ACTIONS),
    jnp.asarray(BEHAVIOUR),
    jnp.asarray(OLD_VALUES),
    jnp.asarray(ADVANTAGES),
    jnp.asarray(RETURNS),
    jnp.asarray(mask, jnp.float32),
    **args,
  )


def test_ppo_loss_hand_computed():
  terms = _loss([1.0, 1.0])
  np.testing.assert_allclose(terms.policy, 1.4, rtol=1e-6)
  np.testing.assert_allclose(terms.value, 0.485, rtol=1e-6)
  np.testing.assert_allclose(terms.entropy, 0.5967748, rtol=1e-6)
  np.testing.assert_allclose(terms.total, 1.6365323, rtol=1e-6)


def test_ppo_loss_masks_and_normalizes_by_collected_entries():
  # Only sample 0 counts, still divided by 2 collected entries.
  terms = _loss([1.0, 0.0])
  np.testing.assert_allclose(terms.policy, -0.6, rtol=1e-6)
  np.testing.assert_allclose(terms.value, 0.4225, rtol=1e-6)
  np.testing.assert_allclose(terms.entropy, 0.5004024 / 2, rtol=1e-6)


@pytest.mark.slow
def test_ppo_entropy_is_a_bonus():
  """Descending the loss with only the entropy term raises the entropy (correct sign)."""

  def total(logits):
    return losses.ppo_loss(
      logits,
      jnp.asarray(VALUES),
      jnp.asarray(ACTIONS),
      jnp.asarray(BEHAVIOUR),
      jnp.asarray(OLD_VALUES),
      jnp.zeros(2),
      jnp.asarray(VALUES),
      jnp.ones(2),
      clip=0.2,
      entropy_coef=1.0,
      value_coef=0.0,
    ).total

  logits = jnp.asarray(LOGITS)
  stepped = logits - 0.1 * jax.grad(total)(logits)
  assert float(losses.categorical_entropy(stepped)[0]) > float(
    losses.categorical_entropy(logits)[0]
  )


def test_ppo_ratio_clipping_stops_the_gradient():
  """Sample 0's ratio 1.6 > 1 + eps with A > 0: the clipped branch is active, no gradient."""

  def policy_loss(logits):
    return losses.ppo_loss(
      logits,
      jnp.asarray(VALUES),
      jnp.asarray(ACTIONS),
      jnp.asarray(BEHAVIOUR),
      jnp.asarray(OLD_VALUES),
      jnp.asarray(ADVANTAGES),
      jnp.asarray(RETURNS),
      jnp.asarray([1.0, 0.0]),
      clip=0.2,
      entropy_coef=0.0,
      value_coef=0.0,
    ).total

  np.testing.assert_array_equal(jax.grad(policy_loss)(jnp.asarray(LOGITS)), 0.0)
  # With a wide clip the surrogate is unclipped: d/dlogits of -ratio * A / 2 is nonzero.
  wide = lambda l: (
    losses.ppo_loss(
      l,
      jnp.asarray(VALUES),
      jnp.asarray(ACTIONS),
      jnp.asarray(BEHAVIOUR),
      jnp.asarray(OLD_VALUES),
      jnp.asarray(ADVANTAGES),
      jnp.asarray(RETURNS),
      jnp.asarray([1.0, 0.0]),
      clip=10.0,
      entropy_coef=0.0,
      value_coef=0.0,
    ).total
  )
  # d(-1.6 / 2)/dlogit_0 = -0.8 * (1 - 0.8) = -0.16
  np.testing.assert_allclose(jax.grad(wide)(jnp.asarray(LOGITS))[0], [-0.16, 0.16], rtol=1e-5)


def test_normalize_advantages_hand_computed():
  # valid (1, 2): mean 1.5, population std 0.5
  out = losses.normalize_advantages(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 1.0, 0.0]))
  np.testing.assert_allclose(out, [-0.5 / 0.50001, 0.5 / 0.50001, 0.0], rtol=1e-6)
  empty = losses.normalize_advantages(jnp.array([1.0, 2.0]), jnp.zeros(2))
  np.testing.assert_array_equal(empty, [0.0, 0.0])


def test_minibatches_cover_every_sample_once_per_epoch():
  c = base_config()
  c.ppo.epochs, c.ppo.minibatches = 3, 4
  steps, envs, learners = 4, 2, 2
  apply_fn = lambda p, obs: (jnp.zeros(obs.shape[:-1] + (2,)), jnp.sum(obs * p["w"], -1))
  optimizer = ReplicatedOptimizer(optax.sgd(0.0))
  settings = ppo_settings(run_settings(c), ppo_section(from_data(c)))
  learner = PPOLearner(apply_fn, settings, optimizer, Independent(), learners, steps, envs)
  n = learners * envs
  ids = jnp.arange(steps * n, dtype=jnp.float32).reshape(steps, n)
  zeros = jnp.zeros((steps, n))
  traj = Trajectory(
    obs=ids[..., None],
    actions=zeros.astype(jnp.int32),
    rewards=zeros,
    terminated=zeros.astype(bool),
    truncated=zeros.astype(bool),
    valid=jnp.ones((steps, n), bool),
    behaviour_logits=jnp.zeros((steps, n, 2)),
    values=jnp.zeros((steps + 1, n)),
    episode_over=zeros,
    episode_return=zeros,
    episode_length=zeros,
  )
  params = {"w": jnp.ones((learners, 1))}
  carry = jax.jit(learner.begin)(  # one compile, not one per op
    params, learner.optimizer.init(params), traj, jax.random.split(jax.random.PRNGKey(0), learners)
  )
  size = learner.minibatch_size
  assert size == steps * envs // 4
  for epoch in range(3):
    seen = [[] for _ in range(learners)]
    for index in range(4):
      perms = np.asarray(carry.perms)[:, epoch, index * size : (index + 1) * size]
      for l in range(learners):
        seen[l] += np.asarray(carry.batch.obs)[l, perms[l], 0].tolist()
    for l in range(learners):  # learner l owns envs l*envs .. l*envs + envs - 1
      expected = [t * n + l * envs + e for t in range(steps) for e in range(envs)]
      assert sorted(seen[l]) == expected


@pytest.mark.slow
def test_minibatch_gradient_in_chunks_equals_the_whole_minibatch_gradient():
  from trajectories import random_trajectory

  c = base_config()
  c.ppo.epochs, c.ppo.minibatches = 1, 2
  c.grad_chunks = 4

  def apply_fn(params, obs):  # a linear actor-critic
    return obs @ params["pi"], (obs @ params["v"])[..., 0]

  def learner(chunks):
    optimizer = ReplicatedOptimizer(optax.sgd(0.1))
    settings = ppo_settings(run_settings(c), ppo_section(from_data(c)))
    return PPOLearner(apply_fn, settings, optimizer, Independent(), 1, 8, 4, chunks)

  whole, chunked = learner(1), learner(c.grad_chunks)
  assert (whole.chunks, chunked.chunks) == (1, 4)
  params = {
    "pi": jnp.array([[0.5, -1.0], [2.0, 0.1], [-0.3, 0.7]]),
    "v": jnp.array([[0.2], [-0.4], [1.5]]),
  }
  traj = random_trajectory(jax.random.PRNGKey(7), steps=8, envs=4, random_behaviour=True)
  stacked = jax.tree.map(lambda x: x[None], params)
  carry = jax.jit(whole.begin)(
    stacked, whole.optimizer.init(stacked), traj, jax.random.PRNGKey(1)[None]
  )
  mb = jax.tree.map(lambda x: x[0, : whole.minibatch_size], carry.batch)
  # Both in one compile (op by op, every op of both compiles apart).
  expected, chunked_result = jax.jit(
    lambda params, mb: (whole._grads(params, mb), chunked._chunked_grads(params, mb))
  )(params, mb)
  for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(chunked_result)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  assert np.abs(expected[0]["pi"]).sum() > 0
  from galax.framework.plan import PlanContext

  c.algorithm, c.t_max, c.envs_per_learner, c.grad_chunks = "ppo", 8, 4, 3
  with pytest.raises(ValueError, match="must divide the 16 samples per PPO minibatch"):
    plan_of(c, target=PlanContext("cpu", "CHW", False, 1))


@pytest.mark.slow
def test_ppo_learns_cartpole():
  c = base_config()
  c.algorithm = "ppo"
  c.env.id = "CartPole-v1"
  c.network.name = "mlp"
  c.envs_per_learner = 8
  c.t_max = 64
  c.returns = "gae"
  c.ppo.epochs, c.ppo.minibatches, c.ppo.clip = 4, 4, 0.2
  c.loss.entropy_coef = 0.0
  c.optimizer.name = "adam"
  c.optimizer.learning_rate = 2.5e-3
  c.optimizer.anneal = "linear"
  c.total_env_steps = 80_000  # ~10 s; returns 137-174 over seeds 0-2
  c.updates_per_call = 20
  c.log_every_steps = 1_000_000
  c.tensorboard = False
  c.stats_window = 20
  result = train(c, log=lambda _: None)
  # A random policy averages ~22 steps.
  assert result.mean_return > 100.0, result.summary()
  assert math.isfinite(result.steps_per_second)


@pytest.mark.parametrize(
  "field, value", [("ppo.clip", 0.0), ("ppo.epochs", 0), ("ppo.minibatches", -1)]
)
def test_ppo_owns_its_section_checks(field, value):
  """PPO's validate hook rejects its own section's bad values (for PPO and HTS-PPO); the
  other algorithms leave the section alone."""
  from galax.config import load, validate

  for algorithm in ("ppo", "hts_ppo"):
    with pytest.raises(ValueError, match=f"config.{field} must be > 0"):
      validate(load("cartpole_a2c", algorithm=algorithm, **{field.replace(".", "__"): value}))
  validate(load("cartpole_a2c", **{field.replace(".", "__"): value}))
