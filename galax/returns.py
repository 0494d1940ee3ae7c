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
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

Array = chex.Array


def _check(rewards: Array, discounts: Array, values: Array, truncated: Array) -> None:
  chex.assert_rank([rewards, discounts, truncated], values.ndim)
  chex.assert_equal_shape([rewards, discounts, truncated])
  chex.assert_shape(values, (rewards.shape[0] + 1, *rewards.shape[1:]))


def lambda_returns(rewards: Array, discounts: Array, values: Array, truncated: Array,
                   lambda_: float | Array = 1.0) -> Array:
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

  _, returns = jax.lax.scan(backward, values[-1], (rewards, discounts, lambdas, values[1:]),
                            reverse=True)
  return returns


def nstep_returns(rewards: Array, discounts: Array, values: Array, truncated: Array) -> Array:
  r"""The bootstrapped n-step returns of PAAC / A2C over a t_max-step rollout.

  Each step uses every reward up to the end of the rollout (n = T - t) and bootstraps
  from V(o_T), unless an episode ends first:

    G_t = r_t + discount_t * G_{t+1}                     (no time limit at t)
    G_t = r_t + discount_t * V(o_{t+1})                  (truncated at t)
    G_T = V(o_T)

  i.e. G_t = sum_{i=t}^{T-1} gamma^{i-t} r_i + gamma^{T-t} V(o_T) inside one episode.
  """
  return lambda_returns(rewards, discounts, values, truncated, 1.0)


def gae_advantages(rewards: Array, discounts: Array, values: Array, truncated: Array,
                   lambda_: float | Array) -> Array:
  r"""Generalized advantage estimation (Schulman et al. 2016), truncation-aware.

    delta_t = r_t + discount_t V(o_{t+1}) - V(o_t)
    A_t     = delta_t + discount_t * lambda_t * A_{t+1},   A_T = 0
    lambda_t = lambda * (1 - truncated_t)

  Equal to lambda_returns(...) - V(o_t)[:T].
  """
  _check(rewards, discounts, values, truncated)
  values = jax.lax.stop_gradient(values)
  lambdas = jnp.broadcast_to(lambda_, rewards.shape) * (1.0 - truncated.astype(rewards.dtype))
  deltas = rewards + discounts * values[1:] - values[:-1]

  def backward(next_advantage, xs):
    delta, discount, lam = xs
    a = delta + discount * lam * next_advantage
    return a, a

  _, advantages = jax.lax.scan(backward, jnp.zeros_like(values[-1]),
                               (deltas, discounts, lambdas), reverse=True)
  return advantages
