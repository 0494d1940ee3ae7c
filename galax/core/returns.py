"""Return and advantage estimators over one time-major trajectory.

Conventions (as rlax): arrays are time-major, `[T]` or `[T, B, ...]` (extra trailing
dims broadcast through), and termination is expressed through the discount:

  discount_t = gamma * (1 - terminated_t)

so a terminal step stops bootstrapping. Truncation (a time limit) is different: the
episode did not end in the MDP, so the return *bootstraps* from the value of the final
observation, which envpool's NEXT_STEP mode gives as o_{t+1}. Truncation therefore cuts
the trace instead of zeroing the discount:

  lambda_t = lambda * (1 - truncated_t).

The transition after a terminal or truncated step is envpool's auto-reset step. It never
leaks into an earlier return: the step before it has discount 0 or lambda 0. Its own
target is meaningless and the loss masks it.

`values` has T + 1 entries: V(o_0), ..., V(o_T); V(o_T) bootstraps the last step.

`vtrace` corrects for acting with other parameters than the learner's (IMPALA); truncation
cuts its traces the same way.

`env_ids` (async envpool's rollouts, `Trajectory.env_ids`): the entries [T, B] are then
transitions in recv order, not one env per column. The backward recursions run over the recv
batches [K, b'] with a carry per env, so each entry continues its own env's recursion, and
V(o_{t+1}) is the value of the same env's next entry (values[T][env] after its last).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from galax.core.rollout import Trajectory, check_trajectory

Array = chex.Array


def _check(rewards: Array, discounts: Array, values: Array, truncated: Array) -> None:
  chex.assert_rank([rewards, discounts, truncated], values.ndim)
  chex.assert_equal_shape([rewards, discounts, truncated])
  chex.assert_shape(values, (rewards.shape[0] + 1, *rewards.shape[1:]))


def _next_values(values: Array, env_ids: Array | None) -> Array:
  """V(o_{t+1}) of each entry [T, ...]: values[1:], or per env with `env_ids`."""
  if env_ids is None:
    return values[1:]

  def backward(later, xs):
    value, ids = xs
    return later.at[ids].set(value), later[ids]

  _, next_values = jax.lax.scan(
    backward, values[-1], (_recv_rows(values[:-1], env_ids), env_ids), reverse=True
  )
  return next_values.reshape(values[:-1].shape)


def _recv_rows(x: Array, env_ids: Array) -> Array:
  """[T, B, ...] -> the recv batches [K, b', ...] of `env_ids`."""
  return x.reshape(*env_ids.shape, *x.shape[2:])


def _backward(fn, init: Array, xs: tuple[Array, ...], env_ids: Array | None) -> Array:
  """The outputs of lax.scan(fn, init, xs, reverse=True); with `env_ids` the carry `init`
  holds one entry per env and each recv batch continues its envs' entries."""
  if env_ids is None:
    return jax.lax.scan(fn, init, xs, reverse=True)[1]

  def per_env(carry, step):
    x, ids = step
    new, out = fn(carry[ids], x)
    return carry.at[ids].set(new), out

  rows = tuple(_recv_rows(x, env_ids) for x in xs)
  _, outs = jax.lax.scan(per_env, init, (rows, env_ids), reverse=True)
  return outs.reshape(xs[0].shape)


def lambda_returns(
  rewards: Array,
  discounts: Array,
  values: Array,
  truncated: Array,
  lambda_: float | Array = 1.0,
  env_ids: Array | None = None,
) -> Array:
  r"""TD(lambda) returns with truncation-aware bootstrapping.

    G_T = V(o_T)
    G_t = r_t + discount_t * ((1 - lambda_t) V(o_{t+1}) + lambda_t G_{t+1})
    lambda_t = lambda * (1 - truncated_t)

  lambda = 1 gives the n-step returns of PAAC/A2C (`nstep_returns`); lambda = 0 gives
  one-step TD targets.

  Args:
    rewards: r_t, [T, ...].
    discounts: gamma * (1 - terminated_t), [T, ...].
    values: V(o_t) for t = 0..T, [T + 1, ...] (no gradient flows through them).
    truncated: bool, [T, ...]; the episode hit its time limit at step t.
    lambda_: scalar or [T, ...] mixing parameter.
    env_ids: async envpool's entries (module docstring); None: time-major envs.

  Returns:
    G_t, [T, ...].
  """
  _check(rewards, discounts, values, truncated)
  values = jax.lax.stop_gradient(values)
  lambdas = jnp.broadcast_to(lambda_, rewards.shape) * (1.0 - truncated.astype(rewards.dtype))

  def backward(next_return, xs):
    reward, discount, lam, next_value = xs
    g = reward + discount * ((1.0 - lam) * next_value + lam * next_return)
    return g, g

  return _backward(
    backward, values[-1], (rewards, discounts, lambdas, _next_values(values, env_ids)), env_ids
  )


def nstep_returns(
  rewards: Array, discounts: Array, values: Array, truncated: Array, env_ids: Array | None = None
) -> Array:
  r"""The bootstrapped n-step returns of PAAC / A2C over a t_max-step rollout.

  Each step uses every reward up to the end of the rollout (n = T - t) and bootstraps
  from V(o_T), unless an episode ends first:

    G_t = r_t + discount_t * G_{t+1}                     (no time limit at t)
    G_t = r_t + discount_t * V(o_{t+1})                  (truncated at t)
    G_T = V(o_T)

  i.e. G_t = sum_{i=t}^{T-1} gamma^{i-t} r_i + gamma^{T-t} V(o_T) inside one episode.
  """
  return lambda_returns(rewards, discounts, values, truncated, 1.0, env_ids)


def gae_advantages(
  rewards: Array,
  discounts: Array,
  values: Array,
  truncated: Array,
  lambda_: float | Array,
  env_ids: Array | None = None,
) -> Array:
  r"""Generalized advantage estimation (Schulman et al. 2016), truncation-aware.

    delta_t = r_t + discount_t V(o_{t+1}) - V(o_t)
    A_t     = delta_t + discount_t * lambda_t * A_{t+1},   A_T = 0
    lambda_t = lambda * (1 - truncated_t)

  Equal to lambda_returns(...) - V(o_t)[:T].
  """
  _check(rewards, discounts, values, truncated)
  values = jax.lax.stop_gradient(values)
  lambdas = jnp.broadcast_to(lambda_, rewards.shape) * (1.0 - truncated.astype(rewards.dtype))
  deltas = rewards + discounts * _next_values(values, env_ids) - values[:-1]
  return _discounted_sums(deltas, discounts, lambdas, jnp.zeros_like(values[-1]), env_ids)


def _discounted_sums(
  deltas: Array, discounts: Array, traces: Array, init: Array, env_ids: Array | None
) -> Array:
  """x_t = delta_t + discount_t trace_t x_{t+1}, x_T = `init` (zeros): GAE's advantages
  (trace lambda_t) and V-trace's corrections v_t - V(x_t) (trace c_t)."""

  def backward(later, xs):
    delta, discount, trace = xs
    x = delta + discount * trace * later
    return x, x

  return _backward(backward, init, (deltas, discounts, traces), env_ids)


class VTraceReturns(NamedTuple):
  vs: Array  # v_t, the value targets, [T, ...]
  pg_advantages: Array  # rho_t (r_t + discount_t v'_{t+1} - V(x_t)), [T, ...]


def vtrace(
  rewards: Array,
  discounts: Array,
  values: Array,
  truncated: Array,
  log_rhos: Array,
  rho_bar: float = 1.0,
  c_bar: float = 1.0,
  lambda_: float | Array = 1.0,
) -> VTraceReturns:
  r"""V-trace targets and policy-gradient advantages (Espeholt et al. 2018), truncation-aware.

  Actions were taken by a behaviour policy mu; the learner's target policy is pi, and
  `values` are the learner's V(x_t). With log_rhos_t = log pi(a_t | x_t) - log mu(a_t | x_t):

    rho_t   = min(rho_bar, exp(log_rhos_t))
    c_t     = lambda_t * min(c_bar, exp(log_rhos_t)),   lambda_t = lambda * (1 - truncated_t)
    delta_t = rho_t * (r_t + discount_t V(x_{t+1}) - V(x_t))
    v_T     = V(x_T)
    v_t     = V(x_t) + delta_t + discount_t c_t (v_{t+1} - V(x_{t+1}))
    A_t     = rho_t * (r_t + discount_t v'_{t+1} - V(x_t)),
              v'_{t+1} = V(x_{t+1}) if truncated_t else v_{t+1}

  i.e. v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} discount_i c_i) delta_t. A truncated
  step bootstraps from V of the final observation (x_{t+1} in envpool's NEXT_STEP mode) and
  cuts the trace, so envpool's auto-reset step after it never leaks into earlier targets.

  On-policy (log_rhos = 0) with rho_bar, c_bar >= 1 and lambda = 1, rho_t = c_t = 1 and
  v_t is the n-step return of `nstep_returns`, A_t = v_t - V(x_t): the A2C targets.

  Args:
    rewards: r_t, [T, ...].
    discounts: gamma * (1 - terminated_t), [T, ...].
    values: the target policy's V(x_t) for t = 0..T, [T + 1, ...].
    truncated: bool, [T, ...]; the episode hit its time limit at step t.
    log_rhos: log pi(a_t | x_t) - log mu(a_t | x_t), [T, ...].
    rho_bar: truncation of the importance weights in delta_t (and in A_t).
    c_bar: truncation of the trace coefficients.
    lambda_: scalar or [T, ...] trace mixing (1 in IMPALA).

  Returns:
    `VTraceReturns(vs, pg_advantages)`, each [T, ...]. No gradient flows through them.
  """
  _check(rewards, discounts, values, truncated)
  chex.assert_equal_shape([rewards, log_rhos])
  values = jax.lax.stop_gradient(values)
  ratios = jnp.exp(jax.lax.stop_gradient(log_rhos))
  rhos = jnp.minimum(rho_bar, ratios)
  lambdas = jnp.broadcast_to(lambda_, rewards.shape) * (1.0 - truncated.astype(rewards.dtype))
  cs = lambdas * jnp.minimum(c_bar, ratios)
  deltas = rhos * (rewards + discounts * values[1:] - values[:-1])
  corrections = _discounted_sums(deltas, discounts, cs, jnp.zeros_like(values[-1]), None)
  vs = values[:-1] + corrections  # v_t = V(x_t) + correction_t
  next_vs = jnp.concatenate([vs[1:], values[-1:]], axis=0)
  next_vs = jnp.where(truncated, values[1:], next_vs)
  pg_advantages = rhos * (rewards + discounts * next_vs - values[:-1])
  return VTraceReturns(vs, pg_advantages)


@dataclasses.dataclass(frozen=True)
class ReturnSettings:
  """What the value targets are (`compute_targets`): discount, "nstep" or "gae", lambda."""

  gamma: float
  kind: str
  gae_lambda: float


def compute_targets(traj: Trajectory, settings: ReturnSettings) -> jax.Array:
  """A2C's targets G_t [T, b] from a learner's trajectory (its behaviour values bootstrap):
  n-step returns (`settings.kind="nstep"`) or lambda-returns (`"gae"`), with
  discount_t = gamma (1 - terminated_t)."""
  gamma, kind, gae_lambda = settings.gamma, settings.kind, settings.gae_lambda
  discounts = gamma * (1.0 - traj.terminated.astype(jnp.float32))
  if kind == "nstep":
    return nstep_returns(traj.rewards, discounts, traj.values, traj.truncated, traj.env_ids)
  if kind == "gae":
    return lambda_returns(
      traj.rewards, discounts, traj.values, traj.truncated, gae_lambda, traj.env_ids
    )
  raise ValueError(f"Unknown returns {kind!r}; use 'nstep' or 'gae'.")


def gae_targets(traj: Trajectory, gamma: float, gae_lambda: float) -> tuple[jax.Array, jax.Array]:
  """PPO's (advantages, value targets) [T, b] from one learner's trajectory: GAE from its
  behaviour values, targets = advantages + V."""
  check_trajectory(traj)
  discounts = gamma * (1.0 - traj.terminated.astype(jnp.float32))
  advantages = gae_advantages(
    traj.rewards, discounts, traj.values, traj.truncated, gae_lambda, traj.env_ids
  )
  return advantages, advantages + traj.values[:-1]
