"""Batched environments from envpool, stepped inside jitted code through `env.xla()`.

envpool runs its environments in C++ threads. Its XLA interface exposes `send` and
`recv` as custom calls that take a small uint8 *handle* array (a token that orders the
side effects), so a whole rollout can be a `lax.scan` inside one `jax.jit`.

Two envpool behaviours that a learner must get right are handled here, once:

* **NEXT_STEP auto-reset.** When a step ends an episode (terminated or truncated), the
  step returns the episode's real final observation. The *next* step ignores the action
  and returns the first observation of the new episode (or, with episodic life, the next
  life). That step is not experience: `Timestep.valid` is False for it and every learner
  masks it out of its loss.
* **Termination vs truncation.** `terminated` (the MDP ended, or a life was lost with
  episodic life) zeroes the discount. `truncated` (the time limit) does not: the return
  bootstraps from the value of the final observation, which NEXT_STEP mode hands us.

Episode statistics (`episode_return`, `episode_length`) are the full game's raw reward
and length, independent of episodic life and reward clipping, kept as fixed-shape state.

A `BatchedEnv` may own several envpool instances ("shards"), one per device of a mesh.
Inside `shard_map`, each device steps only its own pool: the custom calls of all pools
are branches of a `lax.switch` on the shard index.

**Async mode** (`batch_size` < `num_envs`, galax/envs/pool_async.py): `recv_batch`
returns whichever `batch_size` envs finished first, with their ids, and `send_batch` steps
those only; not bit-reproducible. The rollout (`galax.core.rollout`) follows each env.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np

from galax.envs.backend import EnvBackend, EnvSettings, Frames, Policy
from galax.envs.base import EnvSpec, EnvState, Timestep, to_timestep
from galax.envs.frames import cartpole_frame
from galax.envs.pool_async import async_reset, check_batch_size, put_rows, take_rows
from galax.envs.pool_options import (
  ATARI_DEFAULTS,
  check_env_id,
  env_family,
  env_options,
  known_env_ids,
)


def _make_pool(env_id: str, num_envs: int, seed: int, options: dict[str, Any]):
  import envpool

  return envpool.make(env_id, env_type="gymnasium", num_envs=num_envs, seed=seed, **options)


class BatchedEnv:
  """`num_envs * num_shards` environments of one id, stepped in jitted code.

  Env `j` of shard `s` is seeded with `seed + s * num_envs + j`, so the same set of
  global envs is produced whatever the number of shards (1 pool of n*b envs == n pools
  of b envs).

  Args:
    env_id: an envpool id, e.g. "CartPole-v1", "Pong-v5", "gfootball/academy_3_vs_1_with_keeper-v1".
    num_envs: environments per shard.
    seed: base seed.
    num_shards: number of independent pools (one per device of a mesh axis).
    episodic_life: Atari only; a lost life terminates the *training* episode.
    reward_clip: Atari only; training rewards clipped to [-1, 1] (statistics stay raw).
    max_episode_steps: time limit in agent steps (None: envpool's default).
    num_threads: envpool worker threads per pool (0: envpool's choice).
    extra_options: further envpool.make keyword arguments (validated).
    env_seeds: optional explicit seeds, one list of `num_envs` seeds per shard (overrides
      `seed`); lets several pools hold any chosen subset of a global env numbering.
    batch_size: envs per `recv_batch` (envpool's async mode) when below `num_envs`;
      0 or `num_envs`: sync.
  """

  state_restorable = False  # the env state lives in envpool's C++ pools

  def __init__(
    self,
    env_id: str,
    num_envs: int,
    seed: int = 0,
    num_shards: int = 1,
    episodic_life: bool = False,
    reward_clip: bool = False,
    max_episode_steps: int | None = None,
    num_threads: int = 0,
    extra_options: dict[str, Any] | None = None,
    env_seeds: Sequence[Sequence[int]] | None = None,
    batch_size: int = 0,
  ):
    check_env_id(env_id)
    if num_envs < 1 or num_shards < 1:
      raise ValueError(f"num_envs ({num_envs}) and num_shards ({num_shards}) must be >= 1.")
    check_batch_size(batch_size, num_envs)
    self.batch_size = batch_size or num_envs
    family = env_family(env_id)
    self.options = env_options(
      env_id, family, episodic_life, reward_clip, max_episode_steps, num_threads, extra_options
    )
    self.num_envs = num_envs
    self.num_shards = num_shards
    self.seed = seed
    if self.is_async:
      self.options["batch_size"] = batch_size
    if env_seeds is None:
      self._pools = [
        _make_pool(env_id, num_envs, seed + s * num_envs, self.options) for s in range(num_shards)
      ]
    else:
      if len(env_seeds) != num_shards or any(len(x) != num_envs for x in env_seeds):
        raise ValueError(f"env_seeds must hold {num_shards} list(s) of {num_envs} seeds.")
      self._pools = [
        _make_pool(
          env_id,
          num_envs,
          int(shard_seeds[0]),
          dict(self.options, env_seed=[int(x) for x in shard_seeds]),
        )
        for shard_seeds in env_seeds
      ]
    self._xla = [pool.xla() for pool in self._pools]
    self.spec = _spec(env_id, family, self._pools[0])

  @property
  def total_envs(self) -> int:
    return self.num_envs * self.num_shards

  @property
  def is_async(self) -> bool:
    return self.batch_size < self.num_envs

  # --- host side -------------------------------------------------------------------

  def reset(self) -> EnvState:
    """Resets all pools on the host. Returns the state with shards concatenated on axis 0.

    `handle` is [num_shards * H]; every other field is [num_shards * num_envs, ...], so
    sharding axis 0 over `num_shards` devices gives each device its own pool's state.
    """
    if self.is_async:
      return async_reset(
        self._pools, [np.asarray(x[0]) for x in self._xla], self.num_envs, self.spec
      )
    handles, observations = [], []
    for pool, xla in zip(self._pools, self._xla):
      obs, _ = pool.reset()
      handles.append(np.asarray(xla[0]))
      observations.append(np.asarray(obs))
    obs = np.concatenate(observations).astype(self.spec.obs_dtype)
    n = obs.shape[0]
    return EnvState(
      handle=jnp.asarray(np.concatenate(handles)),
      obs=jnp.asarray(obs),
      reset_next=jnp.zeros((n,), bool),
      episode_return=jnp.zeros((n,), jnp.float32),
      episode_length=jnp.zeros((n,), jnp.int32),
    )

  def close(self) -> None:
    """Closes the pools once no dispatched program still steps them: envpool steps write
    into the pool's memory, and closing or collecting a pool under a running step
    crashed or hung later programs (its custom calls are side-effecting, so
    `effects_barrier` waits for them)."""
    jax.effects_barrier()
    for pool in self._pools:
      close = getattr(pool, "close", None)
      if close is not None:
        close()

  # --- jittable side ---------------------------------------------------------------

  def _dispatch(self, fn_index: int, shard_index, *operands):
    """Calls recv (1) or send (2) of the pool `shard_index` (xla() = handle, recv, send, step)."""
    keys = ("reward", "terminated", "env_id") if self.is_async else ("reward", "terminated")
    branches = [functools.partial(_call, xla[fn_index], keys) for xla in self._xla]
    if len(branches) == 1:
      return branches[0](*operands)
    return jax.lax.switch(shard_index, branches, *operands)

  def step(
    self, state: EnvState, action: jax.Array, shard_index: int | jax.Array = 0
  ) -> tuple[EnvState, Timestep]:
    """Steps the pool `shard_index` (traced allowed, e.g. a device index) with `action` [B]."""
    handle = self.send(state, action, shard_index)
    return self.recv(state.replace(handle=handle), shard_index)

  def send(self, state: EnvState, action: jax.Array, shard_index: int | jax.Array = 0) -> jax.Array:
    """Hands actions to the C++ envs and returns at once (they step in their threads).

    Returns the new handle; `recv` with it waits for the results. Work placed between the
    two overlaps with env stepping.
    """
    chex.assert_shape(action, (self.num_envs,))
    return self._dispatch(2, shard_index, state.handle, action.astype(jnp.int32))

  def recv(self, state: EnvState, shard_index: int | jax.Array = 0) -> tuple[EnvState, Timestep]:
    """Waits for the step started by `send` and turns envpool's output into a Timestep."""
    handle, (obs, reward, terminated, truncated, info) = self._dispatch(
      1, shard_index, state.handle
    )
    return _to_timestep(state, handle, obs, reward, terminated, truncated, info)

  def send_batch(
    self, state: EnvState, action: jax.Array, env_id: jax.Array, shard_index: int | jax.Array = 0
  ) -> jax.Array:
    """Async mode: steps the envs `env_id` [batch_size] (ids into the shard's envs) with
    `action` [batch_size]; returns the handle."""
    chex.assert_shape([action, env_id], (self.batch_size,))
    return self._dispatch(
      2, shard_index, state.handle, action.astype(jnp.int32), env_id.astype(jnp.int32)
    )

  def recv_batch(
    self, state: EnvState, shard_index: int | jax.Array = 0
  ) -> tuple[EnvState, Timestep, jax.Array]:
    """Async mode: waits for the first `batch_size` envs to finish their step. Returns the
    state with their rows updated, their Timestep [batch_size] and their ids."""
    handle, (obs, reward, terminated, truncated, info) = self._dispatch(
      1, shard_index, state.handle
    )
    ids = info.pop("env_id").astype(jnp.int32)
    rows, ts = _to_timestep(
      take_rows(state, ids, handle), handle, obs, reward, terminated, truncated, info
    )
    return put_rows(state, ids, rows), ts, ids


def _spec(env_id: str, family: str, pool) -> EnvSpec:
  """The `EnvSpec` of an envpool pool of `env_id`: its observations (shape, dtype, layout),
  its discrete actions and its time limit."""
  with warnings.catch_warnings():  # gymnasium warns about float64 bounds of Box spaces
    warnings.simplefilter("ignore", UserWarning)
    obs_space, act_space = pool.observation_space, pool.action_space
  if not hasattr(act_space, "n"):
    raise ValueError(
      f"{env_id!r} has a non-discrete action space {act_space}; "
      "galax's actor-critic heads are categorical."
    )
  shape = tuple(obs_space.shape)
  layout = "flat" if len(shape) == 1 else ("HWC" if family == "gfootball" else "CHW")
  return EnvSpec(
    env_id=env_id,
    family=family,
    obs_shape=shape,
    obs_dtype=np.dtype(obs_space.dtype),
    num_actions=int(act_space.n),
    obs_layout=layout,
    max_episode_steps=int(pool.config["max_episode_steps"]),
  )


def _call(fn, keys: tuple[str, ...], *operands):
  """Wraps an envpool xla function so that switch branches return the same structure
  (of `info`, only `keys`)."""
  out = fn(*operands)
  if isinstance(out, tuple) and len(out) == 2:  # recv / step: (handle, timestep-tuple)
    handle, (obs, reward, terminated, truncated, info) = out
    info = {k: v for k, v in info.items() if k in keys}
    return handle, (obs, reward, terminated, truncated, info)
  return out  # send: handle


def _to_timestep(
  state: EnvState, handle, obs, reward, terminated, truncated, info
) -> tuple[EnvState, Timestep]:
  # Atari reports the raw reward and the true game end in `info`; episodic life and
  # reward clipping change only `reward` and `terminated`.
  return to_timestep(
    state,
    obs,
    reward,
    terminated,
    truncated,
    handle=handle,
    backend=(),
    reset_after_termination=True,
    raw_reward=info.get("reward"),
    game_over=info.get("terminated"),
  )


def _make(
  env: EnvSettings,
  num_envs: int,
  seed: int,
  num_shards: int,
  env_seeds: Sequence[Sequence[int]] | None,
) -> BatchedEnv:
  return BatchedEnv(
    env_id=env.id,
    num_envs=num_envs,
    seed=seed,
    num_shards=num_shards,
    episodic_life=env.episodic_life,
    reward_clip=env.reward_clip,
    max_episode_steps=env.max_episode_steps or None,
    num_threads=env.num_threads,
    extra_options=dict(env.options),
    env_seeds=env_seeds,
    batch_size=env.batch_size,
  )


def _make_eval(env: EnvSettings, num_envs: int, seed: int) -> BatchedEnv:
  """Full games, raw rewards, the evaluation's no-op starts (Atari).

  The lives of a game keep the training env's handling (`episodic_life`): envpool then
  presses FIRE after a lost life as it did in training, as baselines' EpisodicLifeEnv +
  FireResetEnv do (GALA's code trains on them; pytorch-a2c-ppo-acktr evaluates on them).
  Without it a greedy Breakout policy that never had to fire waits for the time limit.
  The statistics still score the full game."""
  options = dict(env.options)
  if env_family(env.id) == "atari":
    options["noop_max"] = env.eval_noop_max
  return BatchedEnv(
    env.id,
    num_envs=num_envs,
    seed=seed,
    num_shards=1,
    episodic_life=env.episodic_life,
    reward_clip=False,
    max_episode_steps=env.eval_time_limit,
    num_threads=env.num_threads,
    extra_options=options,
  )


def _frames_per_step(env: EnvSettings) -> int:
  """Atari's frame skip (4 by default); 1 elsewhere."""
  if env_family(env.id) != "atari":
    return 1
  return int(env.options.get("frame_skip", ATARI_DEFAULTS["frame_skip"]))


def _renders(env_id: str) -> bool:
  """Atari draws its screen; CartPole's observation is drawn."""
  return env_id.startswith("CartPole") or env_family(env_id) == "atari"


def _episodes(settings: EnvSettings, policy: Policy, episodes: int, seed: int) -> Frames:
  """(frame, return so far, episode) of each step of `episodes` envpool games; envpool's
  CartPole has no screen, so its observation (x, x', theta, theta') is drawn."""
  import envpool

  family = env_family(settings.id)
  options = env_options(
    settings.id, family, False, False, settings.eval_time_limit, 1, dict(settings.options)
  )
  if family == "atari":
    options["noop_max"] = settings.eval_noop_max
  if settings.id.startswith("CartPole"):
    draw = lambda env, obs: cartpole_frame(float(obs[0, 0]), float(obs[0, 2]))
  else:
    options["render_mode"] = "rgb_array"
    draw = lambda env, obs: env.render()[0]
  env = envpool.make(settings.id, env_type="gymnasium", num_envs=1, seed=seed, **options)
  key = jax.random.PRNGKey(seed)
  try:
    for episode in range(episodes):
      with warnings.catch_warnings():  # gymnasium's about float64 Box bounds, in raw colour codes
        warnings.filterwarnings("ignore", r".*Box (low|high)'s precision lowered", UserWarning)
        obs, _ = env.reset()
      total, done = 0.0, False
      while not done:  # envpool resets on the step after the last: its frame is the end
        yield draw(env, obs), total, episode
        key, act_key = jax.random.split(key)
        obs, reward, terminated, truncated, _ = env.step(np.asarray(policy(obs, act_key)))
        total += float(reward[0])
        done = bool(terminated[0] or truncated[0])
      yield draw(env, obs), total, episode
  finally:
    env.close()


BACKEND = EnvBackend(  # last in `registry.MODULES`: it owns every id without a prefix
  name="envpool",
  owns=lambda env_id: True,
  known_ids=known_env_ids,
  check_id=check_env_id,
  family=env_family,
  make=_make,
  make_eval=_make_eval,
  episodes=_episodes,
  renders=_renders,
  frames_per_step=_frames_per_step,
  in_program=False,
)
