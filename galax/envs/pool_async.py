"""envpool's async mode for `pool.BatchedEnv` (`batch_size` < `num_envs`): the check of the
batch size, the host reset, and a received batch's rows read from and written into the
state of all the envs.

`recv` returns whichever `batch_size` envs finished first, with their ids, so a state's
rows are taken and put back by id; which envs come back depends on thread timing, so runs
are not bit-reproducible.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from galax.envs.base import EnvSpec, EnvState


def check_batch_size(batch_size: int, num_envs: int, what: str = "envs") -> None:
  """One line unless `batch_size` is 0 (sync) or divides `num_envs` without exceeding it."""
  if batch_size < 0 or batch_size > num_envs or (batch_size and num_envs % batch_size):
    raise ValueError(
      f"config.env.batch_size={batch_size} must divide the {num_envs} {what} "
      "and not exceed them (envpool's async mode: envs per recv; 0 = all, "
      "sync)."
    )


def async_reset(
  pools: Sequence[Any], handles: Sequence[np.ndarray], num_envs: int, spec: EnvSpec
) -> EnvState:
  """Starts every env's reset and receives the first batch of each pool: those envs are
  ready (`backend["ready"]`, [num_shards * batch_size] ids into each shard's envs); the
  others' first recv delivers their reset, an invalid step (`reset_next`). The rollout
  keeps each env's step in flight in `backend` (its action, logits and value, zero here)."""
  observations, ready, reset_next = [], [], []
  for pool in pools:
    pool.async_reset()
    obs, *_, info = pool.recv()
    ids = np.asarray(info["env_id"], np.int32)
    full = np.zeros((num_envs, *spec.obs_shape), spec.obs_dtype)
    full[ids] = obs
    pending = np.ones((num_envs,), bool)
    pending[ids] = False
    observations.append(full)
    ready.append(ids)
    reset_next.append(pending)
  total = num_envs * len(pools)
  return EnvState(
    handle=jnp.asarray(np.concatenate(handles)),
    obs=jnp.asarray(np.concatenate(observations)),
    reset_next=jnp.asarray(np.concatenate(reset_next)),
    episode_return=jnp.zeros((total,), jnp.float32),
    episode_length=jnp.zeros((total,), jnp.int32),
    backend=dict(
      ready=jnp.asarray(np.concatenate(ready)),
      action=jnp.zeros((total,), jnp.int32),
      logits=jnp.zeros((total, spec.num_actions), jnp.float32),
      value=jnp.zeros((total,), jnp.float32),
    ),
  )


def take_rows(state: EnvState, ids: jax.Array, handle: jax.Array) -> EnvState:
  """The envs `ids` of `state` (no backend), as the state a step of them starts from."""
  return EnvState(
    handle=handle,
    obs=state.obs[ids],
    reset_next=state.reset_next[ids],
    episode_return=state.episode_return[ids],
    episode_length=state.episode_length[ids],
  )


def put_rows(state: EnvState, ids: jax.Array, rows: EnvState) -> EnvState:
  """`state` with the envs `ids` replaced by `rows` (and the rows' handle)."""
  put = lambda full, part: full.at[ids].set(part)
  return state.replace(
    handle=rows.handle,
    obs=put(state.obs, rows.obs),
    reset_next=put(state.reset_next, rows.reset_next),
    episode_return=put(state.episode_return, rows.episode_return),
    episode_length=put(state.episode_length, rows.episode_length),
  )
