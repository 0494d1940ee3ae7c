"""The environment interface every learner uses, whatever the backend.

Two backends implement `Env`: `pool.BatchedEnv` (envpool's C++ pools, stepped through XLA
custom calls) and `gymnax_env.GymnaxEnv` (environments written in JAX, vmapped inside the
learner program). Learners see only `EnvSpec`, `EnvState`, `Timestep` and the methods of
`Env`, so no algorithm has backend-specific code.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import chex
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

# A pytree with array leaves: galax.core.types's name, repeated here because envs/ is the
# ground floor (core/ imports it, not the other way round).
PyTree = chex.ArrayTree


class EnvSpec(NamedTuple):
  """What a network and a learner need to know about an environment.

  `reset_step_after_termination`: True where the step after a terminated step is an
  auto-reset step without experience (envpool's NEXT_STEP: `valid` False); False where the
  reset happens inside the terminating step, so the next step is already a valid step of
  the new episode (gymnax). Truncated steps are followed by an invalid step on both.
  """

  env_id: str
  family: str  # "atari" | "classic_control" | "gfootball" | "gymnax" | other envpool family
  obs_shape: tuple[int, ...]
  obs_dtype: np.dtype
  num_actions: int
  obs_layout: str  # "CHW" (Atari), "HWC" (GFootball, MinAtar), "flat" (vector observations)
  max_episode_steps: int
  reset_step_after_termination: bool = True


class Timestep(NamedTuple):
  """One batched env step, as seen by a learner. All fields have leading dim [B].

  `obs` is the observation *after* the step (after a truncated step: the true final
  observation, to bootstrap from). The transition (o_t, a_t, r_t, o_{t+1}) is experience
  only where `valid` is True.
  """

  obs: jax.Array
  reward: jax.Array  # training reward (clipped for Atari when configured), float32
  terminated: jax.Array  # bool: discount goes to zero (includes life loss with episodic life)
  truncated: jax.Array  # bool: time limit; bootstraps from the value of `obs`
  valid: jax.Array  # bool: False for an auto-reset step
  episode_over: jax.Array  # bool: the full game ended at this step (for statistics)
  episode_return: jax.Array  # float32: raw full-game return, meaningful where episode_over
  episode_length: jax.Array  # int32: env steps of that game, meaningful where episode_over


@flax.struct.dataclass
class EnvState:
  """Explicit state of a batch of envs; every field but envpool's `handle` is [B, ...].

  handle: what `send` returns and `recv` consumes.
    envpool: its XLA token, uint8 [H] per pool; threading it orders the custom calls.
    gymnax: the pending actions, int32 [B] (`send` only records them; `recv` steps).
  obs: the current observation of each env, [B, ...].
  reset_next: [B] bool; the next step is an auto-reset step and carries no experience.
  episode_return / episode_length: running full-game raw return and length, [B].
  backend: backend-owned state, env-major [B, ...] leaves (gymnax: its env states, per-env
    PRNG keys and the reset observations; envpool: empty, the C++ pools live on the host).
  """

  handle: jax.Array
  obs: jax.Array
  reset_next: jax.Array
  episode_return: jax.Array
  episode_length: jax.Array
  backend: PyTree = ()


class Env(Protocol):
  """`num_envs * num_shards` envs of one id (one shard per local device), jittable steps.

  Env `j` of shard `s` has integer seed `seed + s * num_envs + j` (or an explicit
  `env_seeds` list), so the same global envs appear whatever the number of shards.
  """

  spec: EnvSpec
  num_envs: int  # envs per shard (a device's L * b)
  num_shards: int
  # Whether `EnvState` is the envs' whole state (a pytree of values: gymnax), so that a
  # checkpoint of it resumes them exactly; envpool's state lives in its C++ pools.
  state_restorable: bool

  @property
  def total_envs(self) -> int: ...

  def reset(self) -> EnvState:
    """This process's envs, shards concatenated on axis 0 (host side)."""
    ...

  def step(
    self, state: EnvState, action: jax.Array, shard_index: int | jax.Array = 0
  ) -> tuple[EnvState, Timestep]:
    """`recv(state.replace(handle=send(state, action)))`: one step of a shard's envs."""
    ...

  def send(self, state: EnvState, action: jax.Array, shard_index: int | jax.Array = 0) -> jax.Array:
    """Starts a step with `action` [num_envs]; returns the handle for `recv`."""
    ...

  def recv(self, state: EnvState, shard_index: int | jax.Array = 0) -> tuple[EnvState, Timestep]:
    """Completes the step started by `send` (whose handle is in `state.handle`)."""
    ...

  def close(self) -> None: ...


def to_timestep(
  state: EnvState,
  obs: jax.Array,
  reward: jax.Array,
  terminated: jax.Array,
  truncated: jax.Array,
  *,
  handle: jax.Array,
  backend: PyTree,
  reset_after_termination: bool,
  raw_reward: jax.Array | None = None,
  game_over: jax.Array | None = None,
) -> tuple[EnvState, Timestep]:
  """A backend's raw step output -> the next `EnvState` and the learner's `Timestep`.

  Shared bookkeeping of both backends: a step where `state.reset_next` was set is invalid
  (no reward, no termination, no episode end); both flags set means terminated (the MDP
  ended: no bootstrap); full-game statistics accumulate `raw_reward` (default `reward`)
  until `game_over` (default `terminated`) or truncation. The next step is an auto-reset
  step after truncation, and after termination too if `reset_after_termination`.
  """
  reward = reward.astype(jnp.float32)
  terminated = terminated.astype(bool)
  truncated = truncated.astype(bool) & ~terminated
  raw_reward = reward if raw_reward is None else raw_reward.astype(jnp.float32)
  game_over = (terminated if game_over is None else game_over.astype(bool)) | truncated
  valid = ~state.reset_next
  episode_over = valid & game_over
  episode_return = state.episode_return + jnp.where(valid, raw_reward, 0.0)
  episode_length = state.episode_length + valid.astype(jnp.int32)
  needs_reset = (terminated | truncated) if reset_after_termination else truncated
  new_state = EnvState(
    handle=handle,
    obs=obs.astype(state.obs.dtype),
    reset_next=valid & needs_reset,
    episode_return=jnp.where(episode_over, 0.0, episode_return),
    episode_length=jnp.where(episode_over, 0, episode_length),
    backend=backend,
  )
  timestep = Timestep(
    obs=new_state.obs,
    reward=jnp.where(valid, reward, 0.0),
    terminated=valid & terminated,
    truncated=valid & truncated,
    valid=valid,
    episode_over=episode_over,
    episode_return=episode_return,
    episode_length=episode_length,
  )
  return new_state, timestep


class StepsInRecv:
  """For envs whose `send` only records the actions and whose `recv` does the step
  (gymnax's vmapped step, a Gymnasium vector env's host call): `step` is the two in turn."""

  num_envs: int

  def step(
    self, state: EnvState, action: jax.Array, shard_index: int | jax.Array = 0
  ) -> tuple[EnvState, Timestep]:
    return self.recv(state.replace(handle=self.send(state, action, shard_index)), shard_index)

  def send(self, state: EnvState, action: jax.Array, shard_index: int | jax.Array = 0) -> jax.Array:
    """Records the actions: they are the handle `recv` steps with."""
    del state, shard_index
    chex.assert_shape(action, (self.num_envs,))
    return action.astype(jnp.int32)

  def recv(self, state: EnvState, shard_index: int | jax.Array = 0) -> tuple[EnvState, Timestep]:
    raise NotImplementedError
