"""envpool's async mode (`config.env.batch_size`): targets chained per env, each env's
transitions in order in a rollout (replayed on a sync pool), and A2C / PPO training on it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from algorithm_runs import cartpole_config, run_algorithm

from galax.config import from_data
from galax.core import returns
from galax.core.rollout import rollout
from galax.envs.pool import BatchedEnv
from galax.training.settings import loop_settings

GAMMA = 0.9
ESTIMATORS = dict(
  nstep=returns.nstep_returns,
  gae=lambda *a, **k: returns.gae_advantages(*a, 0.7, **k),
  lambda_returns=lambda *a, **k: returns.lambda_returns(*a, 0.7, **k),
)


def _per_env(estimator, env_ids, rewards, discounts, values, truncated):
  """The estimator on each env's own entries, in order (time-major, one column)."""
  flat = lambda x: np.asarray(x).reshape(-1)
  ids, out = flat(env_ids), np.zeros(env_ids.size, np.float32)
  for env in range(values.shape[1]):
    at = np.flatnonzero(ids == env)
    column = lambda x: jnp.asarray(flat(x)[at])[:, None]
    own_values = jnp.concatenate([column(values[:-1]), values[-1:, env : env + 1]])
    out[at] = np.asarray(
      estimator(column(rewards), column(discounts), own_values, column(truncated))
    )[:, 0]
  return out.reshape(rewards.shape)


@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
def test_chained_estimators_equal_each_envs_own(kind):
  """Entries [T, B] in recv order (batches of 2 of 4 envs, an env now and then twice in a
  row of B) give each env's own time-major estimate."""
  rng = np.random.default_rng(0)
  steps, envs, batch = 6, 4, 2
  env_ids = np.stack([rng.permutation(envs)[:batch] for _ in range(steps * envs // batch)])
  rewards = jnp.asarray(rng.normal(size=(steps, envs)), jnp.float32)
  discounts = GAMMA * jnp.asarray(rng.random((steps, envs)) > 0.2, jnp.float32)
  truncated = jnp.asarray(rng.random((steps, envs)) > 0.85)
  values = jnp.asarray(rng.normal(size=(steps + 1, envs)), jnp.float32)
  estimator = ESTIMATORS[kind]
  chained = jax.jit(estimator)(rewards, discounts, values, truncated, env_ids=jnp.asarray(env_ids))
  expected = _per_env(estimator, env_ids, rewards, discounts, values, truncated)
  np.testing.assert_allclose(chained, expected, rtol=1e-5, atol=1e-5)


def _policy(params, obs):
  logits = obs @ params
  return logits, obs.sum(-1)


@pytest.mark.slow
def test_async_rollout_keeps_each_envs_transitions_in_order():
  """Replaying each env's recorded actions on its own sync envpool env (same seed) gives
  the observations, rewards and episode ends the async rollouts recorded, in order."""
  envs, batch, steps, seed = 8, 2, 6, 3
  env = BatchedEnv("CartPole-v1", num_envs=envs, seed=seed, num_threads=2, batch_size=batch)
  params = jnp.asarray(np.random.default_rng(1).normal(size=(4, 2)), jnp.float32)
  run = jax.jit(lambda state, keys: rollout(_policy, params, env, state, keys, steps))
  state, keys = env.reset(), jax.random.split(jax.random.PRNGKey(0), envs)
  first_ready = set(np.asarray(state.backend["ready"]).tolist())
  trajs = []
  for _ in range(4):  # entries of one env continue across rollouts
    state, keys, traj = run(state, keys)
    trajs.append(jax.tree.map(np.asarray, traj))
  env.close()
  seen = 0
  for e in range(envs):
    entries = [(t, i) for t in trajs for i in np.flatnonzero(t.env_ids.reshape(-1) == e)]
    get = lambda t, i, f: getattr(t, f).reshape(-1, *getattr(t, f).shape[2:])[i]
    if e not in first_ready:  # its first recv delivered its reset: no experience
      assert not get(*entries[0], "valid")
      entries = entries[1:]
    replay = BatchedEnv("CartPole-v1", num_envs=1, seed=seed + e, num_threads=1)._pools[0]
    obs, _ = replay.reset()
    for t, i in entries:
      np.testing.assert_array_equal(get(t, i, "obs"), obs[0])
      obs, reward, term, trunc, _ = replay.step(np.asarray([get(t, i, "actions")], np.int32))
      if get(t, i, "valid"):
        assert get(t, i, "rewards") == reward[0] and get(t, i, "terminated") == term[0]
        seen += 1
    replay.close()
  assert seen > envs * steps * 3  # most of 4 rollouts' transitions were checked


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["a2c", "ppo"])
def test_async_runs_train_with_finite_metrics(algorithm):
  config = cartpole_config(algorithm, envs_per_learner=8, updates_per_call=3)
  config.env.batch_size = 4
  config.ppo.minibatches = 2
  state, metrics = run_algorithm(config, 2)
  assert int(np.asarray(state.update_count).max()) == 6
  for leaf in jax.tree.leaves(metrics["loss"]) + jax.tree.leaves(state.params):
    assert np.all(np.isfinite(leaf))


def test_the_header_says_an_async_run_is_not_bit_reproducible():
  from galax.config import make_algorithm
  from galax.training.header import header_lines

  lines = {}
  for batch in (0, 4):
    config = cartpole_config("a2c", envs_per_learner=8)
    config.env.batch_size = batch
    algorithm = make_algorithm(config)
    try:
      planned = dict(planned_env_steps=1, requested_env_steps=1)
      lines[batch] = header_lines(
        algorithm, loop_settings(from_data(config), algorithm.setup.settings), planned
      )
    finally:
      algorithm.env.close()
  assert not any("not bit-reproducible" in line for line in lines[0])
  assert any(
    "4 of 8 envs per step" in line and "not bit-reproducible" in line for line in lines[4]
  ), lines[4]
