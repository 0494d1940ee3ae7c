"""The envpool adapter: auto-reset masking, termination vs truncation, episode statistics
(full game, raw rewards, episodic life), Atari rollout shapes, and bad input."""

import envpool
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from galax.core import networks
from galax.core.rollout import init_action_keys, rollout
from galax.envs import BatchedEnv


def _run(env: BatchedEnv, actions: np.ndarray):
  """Steps `env` through actions [T, B] in one jitted scan; returns the Timesteps [T, B]."""

  @jax.jit
  def go(state, actions):
    return jax.lax.scan(lambda s, a: env.step(s, a), state, actions)

  _, timesteps = go(env.reset(), jnp.asarray(actions, jnp.int32))
  return jax.tree.map(np.asarray, timesteps)


def test_auto_reset_step_is_masked_and_matches_envpool():
  # Always pushing left drops the pole within ~10 steps.
  env = BatchedEnv("CartPole-v1", num_envs=2, seed=3)
  actions = np.zeros((40, 2), np.int32)
  ts = _run(env, actions)
  done = ts.terminated | ts.truncated
  assert done.sum() >= 4
  # The step after each episode end is the auto-reset step: invalid, no reward, no done.
  after_done = np.zeros_like(done)
  after_done[1:] = done[:-1]
  np.testing.assert_array_equal(ts.valid, ~after_done)
  assert np.all(ts.reward[~ts.valid] == 0.0)
  assert not np.any(done & ~ts.valid)
  # The reset observation is near the origin; the terminal one is not.
  assert np.all(np.abs(ts.obs[after_done]) < 0.06)
  # Same observations as envpool's own Python API with the same seed.
  ref = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2, seed=3)
  ref.reset()
  for t in range(actions.shape[0]):
    obs, *_ = ref.step(actions[t])
    np.testing.assert_allclose(ts.obs[t], obs, rtol=1e-6)


def test_truncation_is_not_termination():
  env = BatchedEnv("CartPole-v1", num_envs=1, seed=0, max_episode_steps=5)
  ts = _run(env, np.tile([[0], [1]], (6, 1)))  # alternate actions: survives 5 steps
  np.testing.assert_array_equal(ts.truncated[:, 0], [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0])
  assert not ts.terminated.any()
  np.testing.assert_array_equal(ts.valid[:, 0], [1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0])
  np.testing.assert_array_equal(ts.episode_over[:, 0], ts.truncated[:, 0])
  np.testing.assert_array_equal(ts.episode_length[ts.episode_over], [5, 5])


@pytest.mark.slow
def test_episode_returns_are_full_game_raw_with_episodic_life():
  """SpaceInvaders: 3 lives, raw rewards 5..30, clipped to 1 for training."""
  steps, n = 2500, 2
  rng = np.random.default_rng(0)
  actions = rng.integers(0, 6, size=(steps, n)).astype(np.int32)
  env = BatchedEnv("SpaceInvaders-v5", num_envs=n, seed=1, episodic_life=True, reward_clip=True)
  ts = _run(env, actions)

  # Reference: envpool's Python API with the same options, summing info["reward"] per game.
  ref = envpool.make("SpaceInvaders-v5", env_type="gymnasium", num_envs=n, seed=1, **env.options)
  ref.reset()
  running = np.zeros(n)
  games: list[list[tuple[float, int]]] = [[] for _ in range(n)]
  life_losses = 0
  for t in range(steps):
    _, _, term, trunc, info = ref.step(actions[t])
    running += info["reward"]
    game_over = info["terminated"].astype(bool) | trunc
    life_losses += int((term & ~game_over).sum())
    for j in np.flatnonzero(game_over):
      games[j].append((running[j], int(info["elapsed_step"][j])))
      running[j] = 0.0
  assert life_losses > 0 and sum(map(len, games)) >= 2
  for j in range(n):
    over = ts.episode_over[:, j]
    np.testing.assert_allclose(ts.episode_return[over, j], [g[0] for g in games[j]])
    np.testing.assert_array_equal(ts.episode_length[over, j], [g[1] for g in games[j]])
  # Training signal: life loss terminates, rewards are clipped; statistics stay raw.
  assert ts.terminated.sum() > ts.episode_over.sum()
  assert ts.reward.max() == 1.0
  assert max(g[0] for gs in games for g in gs) > ts.reward.sum(axis=0).max() / 10


@pytest.mark.slow
def test_pong_rollout_shapes_and_dtypes():
  env = BatchedEnv("Pong-v5", num_envs=2, seed=0, reward_clip=True)
  net = networks.make_network("archnips", env.spec)
  params = networks.init_params(net, env.spec, jax.random.PRNGKey(0))
  step = jax.jit(lambda s, k: rollout(net.apply, params, env, s, k, 3))
  _, keys, traj = step(env.reset(), init_action_keys(0, 0, 2))
  assert env.spec.obs_shape == (4, 84, 84) and env.spec.num_actions == 6
  assert traj.obs.shape == (3, 2, 4, 84, 84) and traj.obs.dtype == jnp.uint8
  assert traj.actions.shape == (3, 2) and traj.actions.dtype == jnp.int32
  assert traj.rewards.shape == (3, 2) and traj.rewards.dtype == jnp.float32
  assert traj.values.shape == (4, 2) and traj.values.dtype == jnp.float32
  assert traj.behaviour_logits.shape == (3, 2, 6)
  assert traj.valid.dtype == jnp.bool_ and traj.terminated.dtype == jnp.bool_
  assert keys.shape == (2, 2)
  assert np.all((np.asarray(traj.actions) >= 0) & (np.asarray(traj.actions) < 6))


def test_unknown_env_id_names_close_matches():
  with pytest.raises(ValueError, match=r"Unknown env id 'Pong-v4'.*Pong-v5"):
    BatchedEnv("Pong-v4", num_envs=1)


def test_unknown_envpool_option_is_rejected():
  with pytest.raises(ValueError, match=r"Unknown envpool option\(s\) \['framskip'\]"):
    BatchedEnv("Pong-v5", num_envs=1, extra_options={"framskip": 3})


@pytest.mark.slow
def test_shards_equal_one_big_pool():
  """Shard s of n pools of b envs == envs s*b..(s+1)*b-1 of one pool of n*b envs."""
  big = BatchedEnv("CartPole-v1", num_envs=4, seed=7)
  sharded = BatchedEnv("CartPole-v1", num_envs=2, seed=7, num_shards=2)
  actions = np.random.default_rng(0).integers(0, 2, size=(30, 4)).astype(np.int32)
  ts_big = _run(big, actions)

  def shard(state, s):  # pool s's slice of the concatenated state
    handles = state.handle.reshape(2, -1)
    return jax.tree.map(lambda x: x[2 * s : 2 * s + 2], state).replace(handle=handles[s])

  step = jax.jit(sharded.step, static_argnums=2)
  initial = sharded.reset()
  states = [shard(initial, s) for s in range(2)]
  for t in range(30):
    obs = []
    for s in range(2):
      states[s], ts = step(states[s], actions[t, 2 * s : 2 * s + 2], s)
      obs.append(np.asarray(ts.obs))
    np.testing.assert_allclose(np.concatenate(obs), ts_big.obs[t], rtol=1e-6)


def test_close_waits_for_dispatched_steps_before_closing_the_pools(monkeypatch):
  """A step dispatched (async) just before `close` must finish before its pool closes:
  closing under it hung or corrupted memory (a CI worker OOM-killed at 21 GB)."""
  from galax.envs import pool as pool_lib

  env = BatchedEnv("CartPole-v1", num_envs=2, seed=0)
  events = []
  real_barrier = pool_lib.jax.effects_barrier
  monkeypatch.setattr(
    pool_lib.jax, "effects_barrier", lambda: events.append("barrier") or real_barrier()
  )
  real_close = env._pools[0].close
  env._pools[0].close = lambda: events.append("close") or real_close()
  state = env.reset()
  jax.jit(env.step)(state, jnp.zeros((2,), jnp.int32))  # not waited for
  env.close()
  assert events == ["barrier", "close"]
