"""Acting: a `lax.scan` of policy steps over a batch of environments (`galax.envs.Env`).

Action sampling uses one PRNG key per environment, split at every step. An env's actions
thus depend only on its own key stream and observations, never on how envs are grouped
into learners, devices or env worker threads (the HTS-RL determinism rule: randomness
lives with the executor).

With envpool's async mode (`env.batch_size` < `num_envs`) each recv returns whichever
`batch_size` envs are ready; `rollout` then makes t_max * num_envs / batch_size recv steps
(as many transitions as a sync rollout), records each env's in-flight action, logits and
value in the env state, and returns the transitions in recv order reshaped to [T, B] with
their envs in `Trajectory.env_ids`; `galax.core.returns` chains each env's entries.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp

from galax.core.types import Params
from galax.envs import Env, EnvState, Timestep

# policy(params, obs [B, ...]) -> (logits [B, A], value [B]); a block policy
# (`galax.framework.update.block_policy`) takes its learners' parameters [L, ...].
PolicyFn = Callable[[Params, jax.Array], tuple[jax.Array, jax.Array]]


class Trajectory(NamedTuple):
  """t_max steps of B envs, time-major [T, B, ...].

  obs[t] is the observation at which actions[t] was taken; `values` has one more entry,
  V(o_T), to bootstrap the last step. `valid` is False for auto-reset steps.
  Values and logits are the behaviour policy's (the parameters that acted).

  `env_ids` (async envpool only, else None): [K, b'] with K * b' = T * B, the env of each
  entry in recv order (entry [t, j] is row-major entry t * B + j of [K, b']); each env's
  entries are then in time order, and values[T] is V of env j's last observation.
  """

  obs: jax.Array
  actions: jax.Array
  rewards: jax.Array
  terminated: jax.Array
  truncated: jax.Array
  valid: jax.Array
  behaviour_logits: jax.Array
  values: jax.Array  # [T + 1, B]
  episode_over: jax.Array
  episode_return: jax.Array
  episode_length: jax.Array
  env_ids: jax.Array | None = None


class EpisodeLog(NamedTuple):
  """Completed full-game episodes of one rollout, env-major [B, T] (for host-side logging)."""

  over: jax.Array
  returns: jax.Array
  lengths: jax.Array


def init_action_keys(seed: int, first_env: int, num_envs: int) -> jax.Array:
  """Per-env sampling keys for global env ids first_env .. first_env + num_envs - 1."""
  base = jax.random.PRNGKey(seed)
  ids = jnp.arange(first_env, first_env + num_envs)
  return jax.vmap(lambda i: jax.random.fold_in(base, i))(ids)


def sample_actions(keys: jax.Array, logits: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Splits each env's key and samples a categorical action from its logits."""
  pairs = jax.vmap(jax.random.split)(keys)  # [B, 2, 2]
  actions = jax.vmap(jax.random.categorical)(pairs[:, 1], logits)
  return pairs[:, 0], actions


def act(
  policy: PolicyFn, params: Params, obs: jax.Array, keys: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
  """One policy step: (new keys, actions, logits, values) for observations [B, ...]."""
  logits, value = policy(params, obs)
  keys, actions = sample_actions(keys, logits)
  return keys, actions, logits, value


def record_step(
  obs: jax.Array, actions: jax.Array, logits: jax.Array, value: jax.Array, ts: Timestep
) -> Trajectory:
  """One env step as a trajectory row (fields [B, ...]; `values` without the bootstrap).

  Stacked over time (`lax.scan`) and closed by `with_bootstrap`, rows make a `Trajectory`.
  """
  return Trajectory(
    obs=obs,
    actions=actions,
    rewards=ts.reward,
    terminated=ts.terminated,
    truncated=ts.truncated,
    valid=ts.valid,
    behaviour_logits=logits,
    values=value,
    episode_over=ts.episode_over,
    episode_return=ts.episode_return,
    episode_length=ts.episode_length,
  )


def with_bootstrap(steps: Trajectory, last_value: jax.Array) -> Trajectory:
  """Time-stacked rows [T, B] plus V(o_T) [B]: the trajectory (values [T + 1, B])."""
  chex.assert_shape(last_value, steps.values.shape[1:])
  traj = steps._replace(values=jnp.concatenate([steps.values, last_value[None]], axis=0))
  check_trajectory(traj)
  return traj


_STEP_FIELDS = (
  "actions",
  "rewards",
  "terminated",
  "truncated",
  "valid",
  "episode_over",
  "episode_return",
  "episode_length",
)


def check_trajectory(traj: Trajectory) -> None:
  """Asserts (chex, at trace time: free at run time) that `traj` is time-major: per-step
  fields [T, B], obs [T, B, ...], logits [T, B, A], values [T + 1, B]. Fields that are None
  (a partial trajectory, e.g. targets' inputs) are skipped."""
  chex.assert_rank(traj.rewards, 2)
  steps, envs = traj.rewards.shape
  chex.assert_shape(
    [x for x in (getattr(traj, f) for f in _STEP_FIELDS) if x is not None], (steps, envs)
  )
  chex.assert_shape(traj.values, (steps + 1, envs))
  if traj.obs is not None:
    chex.assert_shape(traj.obs, (steps, envs, ...))
  if traj.behaviour_logits is not None:
    chex.assert_shape(traj.behaviour_logits, (steps, envs, None))
  if traj.env_ids is not None:
    chex.assert_rank(traj.env_ids, 2)
    assert traj.env_ids.size == steps * envs, (traj.env_ids.shape, steps, envs)


def rollout(
  policy: PolicyFn,
  params: Params,
  env: Env,
  env_state: EnvState,
  action_keys: jax.Array,
  num_steps: int,
  shard_index: int | jax.Array = 0,
) -> tuple[EnvState, jax.Array, Trajectory]:
  """Acts for `num_steps` steps in every env with `params`; returns the new state and data."""
  if getattr(env, "is_async", False):
    return _async_rollout(policy, params, env, env_state, action_keys, num_steps, shard_index)

  def step(carry, _):
    env_state, keys = carry
    keys, actions, logits, value = act(policy, params, env_state.obs, keys)
    next_env_state, ts = env.step(env_state, actions, shard_index)
    return (next_env_state, keys), record_step(env_state.obs, actions, logits, value, ts)

  (env_state, action_keys), steps = jax.lax.scan(
    step, (env_state, action_keys), None, length=num_steps
  )
  _, last_value = policy(params, env_state.obs)
  return env_state, action_keys, with_bootstrap(steps, last_value)


def _async_rollout(
  policy: PolicyFn,
  params: Params,
  env: Env,
  env_state: EnvState,
  action_keys: jax.Array,
  num_steps: int,
  shard_index: int | jax.Array,
) -> tuple[EnvState, jax.Array, Trajectory]:
  """`rollout` over envpool's async mode: each step acts in the ready envs, sends, and
  receives the next ready batch, whose transitions complete the actions recorded when
  those envs were sent (possibly in the previous rollout, by the previous parameters)."""
  batch, n = env.batch_size, env.num_envs  # type: ignore[attr-defined]

  def step(carry, _):
    state, keys = carry
    ready, sent = state.backend["ready"], state.backend
    new_keys, actions, logits, value = act(policy, params, state.obs[ready], keys[ready])
    sent = dict(
      ready=ready,
      action=sent["action"].at[ready].set(actions),
      logits=sent["logits"].at[ready].set(logits.astype(sent["logits"].dtype)),
      value=sent["value"].at[ready].set(value.astype(sent["value"].dtype)),
    )
    handle = env.send_batch(state, actions, ready, shard_index)  # type: ignore[attr-defined]
    acted = state.obs  # in-flight envs keep the observation they act from
    state, ts, done = env.recv_batch(
      state.replace(handle=handle),  # type: ignore[attr-defined]
      shard_index,
    )
    row = record_step(
      acted[done], sent["action"][done], sent["logits"][done], sent["value"][done], ts
    )
    state = state.replace(backend=dict(sent, ready=done))
    return (state, keys.at[ready].set(new_keys)), (row, done)

  (env_state, action_keys), (rows, env_ids) = jax.lax.scan(
    step, (env_state, action_keys), None, length=num_steps * n // batch
  )
  rows = jax.tree.map(lambda x: x.reshape(num_steps, n, *x.shape[2:]), rows)
  _, last_value = policy(params, env_state.obs)  # every env's latest observation
  return env_state, action_keys, with_bootstrap(rows, last_value)._replace(env_ids=env_ids)


def episode_log(traj: Trajectory) -> EpisodeLog:
  return EpisodeLog(traj.episode_over.T, traj.episode_return.T, traj.episode_length.T)
