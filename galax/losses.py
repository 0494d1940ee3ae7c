"""Actor-critic losses over a time-major batch [T, B].

Every loss takes a `mask` (1 for experience, 0 for envpool's auto-reset transitions) and
normalizes by the number of *collected* transitions T * B, masked ones counting as zero.
Normalizing by a constant (not by the number of valid entries) keeps the loss of a batch
equal to the mean of the losses of its parts, so n learners averaging gradients over b
envs each compute exactly the update of one learner over n * b envs.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

Array = chex.Array


class LossTerms(NamedTuple):
  total: Array
  policy: Array
  value: Array
  entropy: Array


def categorical_entropy(logits: Array) -> Array:
  """H(pi) = -sum_a pi(a) log pi(a), over the last axis."""
  log_probs = jax.nn.log_softmax(logits)
  return -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1)


def action_log_prob(logits: Array, actions: Array) -> Array:
  log_probs = jax.nn.log_softmax(logits)
  return jnp.take_along_axis(log_probs, actions[..., None].astype(jnp.int32), axis=-1)[..., 0]


def masked_mean(x: Array, mask: Array) -> Array:
  """sum(mask * x) / x.size: the mean over all collected entries, masked ones as zero."""
  return jnp.sum(x * mask) / x.size


def a2c_loss(logits: Array, values: Array, actions: Array, returns: Array, mask: Array,
             entropy_coef: float, value_coef: float, sum_over_time: bool = False
             ) -> LossTerms:
  r"""The advantage actor-critic loss (Mnih et al. 2016; PAAC; A2C).

    A_t    = G_t - V(s_t)                        (no gradient through A_t)
    L_pi   = -mean_{t,b} log pi(a_t | s_t) A_t
    L_H    =  mean_{t,b} H(pi(. | s_t))
    L_V    =  mean_{t,b} (G_t - V(s_t))^2
    L      = L_pi - entropy_coef * L_H + value_coef * L_V

  With value_coef = 0.5 the value term is 0.5 * mean (G - V)^2, as in PAAC, GALA and BA3C.
  `sum_over_time` multiplies the loss by T (a sum over steps, mean over envs), as the PAAC
  code does. The advantage is not normalized.

  Args:
    logits: [T, B, A] policy logits at the learner's parameters.
    values: [T, B] V(s_t) at the learner's parameters.
    actions: [T, B] int actions taken.
    returns: [T, B] targets G_t (e.g. `returns.nstep_returns`).
    mask: [T, B] 1.0 for experience, 0.0 for auto-reset transitions.
  """
  chex.assert_rank([logits, values, actions, returns, mask], [3, 2, 2, 2, 2])
  chex.assert_equal_shape([values, actions, returns, mask])
  returns = jax.lax.stop_gradient(returns)
  advantages = jax.lax.stop_gradient(returns - values)
  policy_loss = -masked_mean(action_log_prob(logits, actions) * advantages, mask)
  entropy = masked_mean(categorical_entropy(logits), mask)
  value_loss = masked_mean(jnp.square(returns - values), mask)
  total = policy_loss - entropy_coef * entropy + value_coef * value_loss
  if sum_over_time:
    total = total * logits.shape[0]
  return LossTerms(total, policy_loss, value_loss, entropy)


def off_policy_actor_critic_loss(logits: Array, values: Array, actions: Array,
                                 pg_advantages: Array, value_targets: Array, mask: Array,
                                 entropy_coef: float, value_coef: float,
                                 reduction: str = "mean") -> LossTerms:
  r"""The actor-critic loss with given advantages and value targets (IMPALA with V-trace).

    L_pi = -red_{t,b} log pi(a_t | s_t) A_t        (A_t: e.g. V-trace's rho_t-weighted one)
    L_H  =  red_{t,b} H(pi(. | s_t))
    L_V  =  red_{t,b} (v_t - V(s_t))^2             (v_t: e.g. the V-trace targets)
    L    =  L_pi - entropy_coef * L_H + value_coef * L_V

  `reduction` "mean" averages over all collected transitions (masked ones as zero), as
  `a2c_loss`; with on-policy targets the two losses are equal. "sum" sums over time and
  batch, as TorchBeast's IMPALA (whose baseline cost 0.5 times its 0.5 * sum(...)^2 is
  value_coef = 0.25 here).
  """
  chex.assert_rank([logits, values, actions, pg_advantages, value_targets, mask],
                   [3, 2, 2, 2, 2, 2])
  chex.assert_equal_shape([values, actions, pg_advantages, value_targets, mask])
  if reduction == "mean":
    reduce = masked_mean
  elif reduction == "sum":
    reduce = lambda x, m: jnp.sum(x * m)
  else:
    raise ValueError(f"Unknown loss reduction {reduction!r}; use 'mean' or 'sum'.")
  pg_advantages = jax.lax.stop_gradient(pg_advantages)
  value_targets = jax.lax.stop_gradient(value_targets)
  policy_loss = -reduce(action_log_prob(logits, actions) * pg_advantages, mask)
  entropy = reduce(categorical_entropy(logits), mask)
  value_loss = reduce(jnp.square(value_targets - values), mask)
  total = policy_loss - entropy_coef * entropy + value_coef * value_loss
  return LossTerms(total, policy_loss, value_loss, entropy)
