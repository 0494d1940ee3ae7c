"""gymnax environments (written in JAX) behind galax's env interface (`base.Env`).

Ids are gymnax's with a `gymnax/` prefix: `gymnax/CartPole-v1`, `gymnax/Acrobot-v1`,
`gymnax/Breakout-MinAtar`, `gymnax/Asterix-MinAtar`, `gymnax/Freeway-MinAtar`,
`gymnax/SpaceInvaders-MinAtar`, ... (any registered gymnax env with discrete actions and
vector or HWC image observations).

The envs are part of the learner program: one `jax.vmap` of gymnax's `step` over a
device's envs, whose states (`EnvState.backend`) are env-major arrays sharded over the
learner axis like every other env leaf. No host, no C++ pool, any accelerator (TPU too).

Semantics, matched to the envpool adapter (`pool.py`):

* **Termination.** gymnax resets inside the terminating step. The timestep has
  `terminated=True` (discount 0, so V of the returned observation, already the next
  episode's first, is never used), and the next step is a normal valid step of the new
  episode: no auto-reset step is wasted (`EnvSpec.reset_step_after_termination=False`).
* **Truncation** (the time limit, `max_episode_steps` or gymnax's
  `params.max_steps_in_episode`) bootstraps: the timestep's `obs` is the true final
  observation (`info["final_observation"]`), so the learner's V(o_{t+1}) is right. As with
  envpool's NEXT_STEP, the next step ignores its action, returns the new episode's first
  observation (kept in `GymnaxCarry.reset_obs`) and has `valid=False`.
* **Seeding.** An env with integer seed `s` (`seed + shard * num_envs + j`, or an explicit
  `env_seeds` entry, as for envpool) owns the key stream of `jax.random.PRNGKey(s)`: it
  splits off one key for its reset and one per step. So env j of the global numbering
  gets the same stream whatever the split over learners, devices and actor groups.
* **send / recv.** `send` only records the actions (they are the handle, int32 [B]);
  `recv` performs the vmapped step. HTS-RL's algorithm (one-step-delayed gradients,
  determinism across actor groups) holds unchanged; the host/accelerator overlap it buys
  with envpool's C++ threads does not exist here (everything is one XLA program).
"""

from __future__ import annotations

import difflib
import functools
from typing import TYPE_CHECKING, Callable, Sequence

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from galax.envs.backend import EnvBackend, EnvSettings, Frames, Policy, reject_envpool_options
from galax.envs.base import EnvSpec, EnvState, StepsInRecv, Timestep, to_timestep
from galax.envs.frames import cartpole_frame, minatar_frame

if TYPE_CHECKING:
  from gymnax.environments.environment import Environment, EnvParams
  from gymnax.environments.environment import EnvState as GymnaxState

PREFIX = "gymnax/"


def is_gymnax_id(env_id: str) -> bool:
  return env_id.startswith(PREFIX)


def gymnax_env_ids() -> list[str]:
  import gymnax

  return [PREFIX + name for name in gymnax.registered_envs]


def check_gymnax_id(env_id: str) -> None:
  """Raises ValueError naming close matches if gymnax does not know `env_id`."""
  ids = gymnax_env_ids()
  if env_id not in ids:
    close = difflib.get_close_matches(env_id, ids, n=5)
    hint = f" Did you mean one of {close}?" if close else ""
    raise ValueError(
      f"Unknown env id {env_id!r}: gymnax has no such environment.{hint} "
      f"(gymnax.registered_envs lists all of them; prefix them with {PREFIX!r}.)"
    )


@flax.struct.dataclass
class GymnaxCarry:
  """The gymnax part of `EnvState.backend`; every leaf env-major [B, ...]."""

  env_state: GymnaxState  # gymnax's state pytree (already reset where the last step ended one)
  keys: jax.Array  # [B, 2] each env's PRNG key stream
  reset_obs: jax.Array  # [B, ...] gymnax's own observation of `env_state` (after a
  # truncated step: the new episode's first observation, shown on the following step)


class GymnaxEnv(StepsInRecv):
  """`num_envs * num_shards` gymnax envs of one id (see the module docstring).

  Args:
    env_id: "gymnax/<gymnax id>", e.g. "gymnax/Breakout-MinAtar".
    num_envs: envs per shard (a device's envs; shards only number the envs: every shard
      runs the same vmapped program on its own slice of the state).
    seed: base seed; env j of shard s has seed `seed + s * num_envs + j`.
    num_shards: shards (local devices) whose envs `reset` returns, concatenated.
    max_episode_steps: time limit in agent steps (None/0: gymnax's default).
    env_seeds: optional explicit seeds, one list of `num_envs` seeds per shard.
  """

  state_restorable = True  # `EnvState` holds gymnax's whole state (checkpointed)

  def __init__(
    self,
    env_id: str,
    num_envs: int,
    seed: int = 0,
    num_shards: int = 1,
    max_episode_steps: int | None = None,
    env_seeds: Sequence[Sequence[int]] | None = None,
  ):
    check_gymnax_id(env_id)
    if num_envs < 1 or num_shards < 1:
      raise ValueError(f"num_envs ({num_envs}) and num_shards ({num_shards}) must be >= 1.")
    self._env, params, self._reset = _make_gymnax(env_id, int(max_episode_steps or 0))
    self._params = params
    self.num_envs, self.num_shards, self.seed = num_envs, num_shards, seed
    if env_seeds is None:
      seeds = seed + np.arange(num_shards * num_envs)
    else:
      if len(env_seeds) != num_shards or any(len(x) != num_envs for x in env_seeds):
        raise ValueError(f"env_seeds must hold {num_shards} list(s) of {num_envs} seeds.")
      seeds = np.concatenate([np.asarray(x) for x in env_seeds])
    self._seeds = seeds.astype(np.int64)
    self.spec = _make_spec(env_id, self._env, params)

  @property
  def total_envs(self) -> int:
    return self.num_envs * self.num_shards

  def reset(self) -> EnvState:
    """Resets this process's envs; fields are [num_shards * num_envs, ...]."""
    return self._reset(jnp.asarray(self._seeds, jnp.uint32))

  def close(self) -> None:
    pass

  def recv(self, state: EnvState, shard_index: int | jax.Array = 0) -> tuple[EnvState, Timestep]:
    """One vmapped gymnax step with the actions in `state.handle`."""
    del shard_index
    carry: GymnaxCarry = state.backend
    keys = jax.vmap(jax.random.split)(carry.keys)  # [B, 2, 2]: next stream, this step
    step = functools.partial(self._env.step, params=self._params)
    obs, env_state, reward, terminated, truncated, info = jax.vmap(step)(
      keys[:, 1], carry.env_state, state.handle
    )
    pending = state.reset_next  # last step truncated: gymnax already reset this env
    env_state = jax.tree.map(functools.partial(_where_env, pending), carry.env_state, env_state)
    truncated = truncated & ~terminated
    final_obs = _where_env(truncated, info["final_observation"], obs)
    shown = _where_env(pending, carry.reset_obs, final_obs)
    backend = GymnaxCarry(env_state, keys[:, 0], _where_env(pending, carry.reset_obs, obs))
    return to_timestep(
      state,
      shown,
      reward,
      terminated,
      truncated,
      handle=state.handle,
      backend=backend,
      reset_after_termination=False,
    )


def _where_env(mask: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
  """Per env (axis 0): `x` where `mask`, else `y`."""
  return jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)), x, y)


@functools.lru_cache(maxsize=None)
def _make_gymnax(
  env_id: str, max_episode_steps: int
) -> tuple[Environment, EnvParams, Callable[[jax.Array], EnvState]]:
  """(gymnax env, its params, their jitted vmapped reset), once per (id, time limit; 0 =
  gymnax's) and process: every evaluation builds envs and resets them, and a fresh jit
  per reset recompiled the reset each time."""
  import gymnax

  env, params = gymnax.make(env_id.removeprefix(PREFIX))
  if max_episode_steps:
    params = params.replace(max_steps_in_episode=max_episode_steps)
  return env, params, jax.jit(functools.partial(_reset, env, params))


def _reset(env: Environment, params: EnvParams, seeds: jax.Array) -> EnvState:
  keys = jax.vmap(jax.random.PRNGKey)(seeds)
  pairs = jax.vmap(jax.random.split)(keys)
  obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(pairs[:, 1], params)
  n = seeds.shape[0]
  return EnvState(
    handle=jnp.zeros((n,), jnp.int32),
    obs=obs,
    reset_next=jnp.zeros((n,), bool),
    episode_return=jnp.zeros((n,), jnp.float32),
    episode_length=jnp.zeros((n,), jnp.int32),
    backend=GymnaxCarry(env_state, pairs[:, 0], obs),
  )


def _make_spec(env_id: str, env: Environment, params: EnvParams) -> EnvSpec:
  space = env.action_space(params)
  if not hasattr(space, "n"):
    raise ValueError(
      f"{env_id!r} has a non-discrete action space; galax's actor-critic heads are categorical."
    )
  obs = jax.eval_shape(lambda: env.reset(jax.random.PRNGKey(0), params)[0])
  shape = tuple(obs.shape)
  if len(shape) not in (1, 3):
    raise ValueError(
      f"{env_id!r} has observations of shape {shape}; galax's networks take vectors or HWC images."
    )
  return EnvSpec(
    env_id=env_id,
    family="gymnax",
    obs_shape=shape,
    obs_dtype=np.dtype(obs.dtype),
    num_actions=int(space.n),
    obs_layout="flat" if len(shape) == 1 else "HWC",
    max_episode_steps=int(params.max_steps_in_episode),
    reset_step_after_termination=False,
  )


def _make(
  env: EnvSettings,
  num_envs: int,
  seed: int,
  num_shards: int,
  env_seeds: Sequence[Sequence[int]] | None,
) -> GymnaxEnv:
  return GymnaxEnv(
    env.id,
    num_envs=num_envs,
    seed=seed,
    num_shards=num_shards,
    max_episode_steps=env.max_episode_steps or None,
    env_seeds=env_seeds,
  )


def _make_eval(env: EnvSettings, num_envs: int, seed: int) -> GymnaxEnv:
  return GymnaxEnv(env.id, num_envs=num_envs, seed=seed, max_episode_steps=env.eval_time_limit)


def _validate(env: EnvSettings) -> None:
  """Rejects the envpool-only options a gymnax env would ignore."""
  reject_envpool_options(env, "gymnax")


def _renders(env_id: str) -> bool:
  name = env_id.removeprefix(PREFIX)
  return "MinAtar" in name or name.startswith("CartPole")


def _episodes(env_settings: EnvSettings, policy: Policy, episodes: int, seed: int) -> Frames:
  """(frame, return so far, episode) of each step of `episodes` gymnax games."""
  import gymnax

  name = env_settings.id.removeprefix(PREFIX)
  if not _renders(env_settings.id):
    raise ValueError(
      f"no renderer for {env_settings.id!r}: videos cover Atari, MinAtar and CartPole."
    )
  env, params = gymnax.make(name)
  if env_settings.max_episode_steps:
    params = params.replace(max_steps_in_episode=env_settings.max_episode_steps)
  if "MinAtar" in name:
    draw = minatar_frame
  else:  # CartPole: obs = (x, x', theta, theta')
    draw = lambda obs: cartpole_frame(float(obs[0]), float(obs[2]))
  reset = jax.jit(lambda k: env.reset(k, params))
  step = jax.jit(lambda k, s, a: env.step(k, s, a, params))
  key = jax.random.PRNGKey(seed)
  for episode in range(episodes):
    key, reset_key = jax.random.split(key)
    obs, state = reset(reset_key)
    total, done, t = 0.0, False, 0
    while not done and t < params.max_steps_in_episode:
      yield draw(np.asarray(obs)), total, episode
      key, act_key, step_key = jax.random.split(key, 3)
      action = policy(np.asarray(obs)[None], act_key)[0]
      next_obs, next_state, reward, terminated, truncated, info = step(step_key, state, action)
      total += float(reward)
      done = bool(terminated) or bool(truncated)
      obs, state, t = next_obs, next_state, t + 1
    # gymnax resets inside the last step: its observation is already the next game's
    yield draw(np.asarray(info["final_observation"] if done else obs)), total, episode


BACKEND = EnvBackend(
  name="gymnax",
  owns=is_gymnax_id,
  known_ids=gymnax_env_ids,
  check_id=check_gymnax_id,
  family=lambda env_id: "gymnax",
  make=_make,
  make_eval=_make_eval,
  validate=_validate,
  episodes=_episodes,
  renders=_renders,
  id_form="gymnax/<gymnax id>",
  in_program=True,
)
