"""Actor-critic losses over a time-major batch [T, B].

Every loss takes a `mask` (1 for experience, 0 for envpool's auto-reset transitions) and
normalizes by the number of *collected* transitions T * B, masked ones counting as zero.
Normalizing by a constant (not by the number of valid entries) keeps the loss of a batch
equal to the mean of the losses of its parts, so n learners averaging gradients over b
envs each compute exactly the update of one learner over n * b envs.

Beside PPO's loss, CleanRL's diagnostics of a PPO update: `approx_kl` and
`explained_variance`.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

Array = chex.Array


@dataclasses.dataclass(frozen=True, kw_only=True)
class LossSettings:
  """The `loss` section of a run's config: the actor-critic loss's weights c_H, c_V, and
  for A2C whether the time axis is summed (the PAAC paper) rather than averaged."""

  entropy_coef: float = 0.01  # weight of the entropy bonus
  value_coef: float = 0.5  # times mean (G - V)^2
  sum_over_time: bool = False  # PAAC code: loss summed over the t_max steps


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


def a2c_loss(
  logits: Array,
  values: Array,
  actions: Array,
  returns: Array,
  mask: Array,
  entropy_coef: float,
  value_coef: float,
  sum_over_time: bool = False,
) -> LossTerms:
  r"""The advantage actor-critic loss (Mnih et al. 2016; PAAC; A2C).

    A_t    = G_t - V(s_t)                        (no gradient through A_t)
    L_pi   = -mean_{t,b} log pi(a_t | s_t) A_t
    L_H    =  mean_{t,b} H(pi(. | s_t))
    L_V    =  mean_{t,b} (G_t - V(s_t))^2
    L      = L_pi - entropy_coef * L_H + value_coef * L_V

  value_coef = 0.5 gives 0.5 * mean (G - V)^2 (the A2C baselines'); the PAAC authors' code
  uses 0.25 and multiplies the whole loss by 5 = t_max, which `sum_over_time` does (a sum
  over steps, mean over envs; configs/pong_paac.py). The advantage is not normalized.

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


def off_policy_actor_critic_loss(
  logits: Array,
  values: Array,
  actions: Array,
  pg_advantages: Array,
  value_targets: Array,
  mask: Array,
  entropy_coef: float,
  value_coef: float,
  reduction: str = "mean",
) -> LossTerms:
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
  chex.assert_rank(
    [logits, values, actions, pg_advantages, value_targets, mask], [3, 2, 2, 2, 2, 2]
  )
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


def ppo_loss(
  logits: Array,
  values: Array,
  actions: Array,
  behaviour_logits: Array,
  behaviour_values: Array,
  advantages: Array,
  returns: Array,
  mask: Array,
  clip: float,
  entropy_coef: float,
  value_coef: float,
) -> LossTerms:
  r"""The PPO-clip loss (Schulman et al. 2017) with a clipped value loss, as in HTS-RL's PPO.

    rho_t  = pi(a_t | s_t) / mu(a_t | s_t)              (mu: the behaviour policy)
    L_pi   = -mean_t min(rho_t A_t, clip(rho_t, 1 - eps, 1 + eps) A_t)
    V^c_t  = V_old(s_t) + clip(V(s_t) - V_old(s_t), -eps, eps)
    L_V    = 1/2 mean_t max((V(s_t) - G_t)^2, (V^c_t - G_t)^2)
    L_H    = mean_t H(pi(. | s_t))
    L      = L_pi + value_coef * L_V - entropy_coef * L_H

  The value loss uses the same clip `eps` as the ratio and carries the factor 1/2 of the
  HTS-RL / Kostrikov PPO code, so value_coef = 0.5 weighs mean max(..) by 0.25. The entropy
  enters with a minus sign: minimizing L *raises* the entropy (a bonus; the HTS-RL code's
  sign ends up penalizing it, a bug not reproduced here). Advantages are used as given
  (normalize them over the batch before, see `normalize_advantages`).

  Args:
    logits: [..., A] policy logits at the learner's parameters.
    values: [...] V(s_t) at the learner's parameters.
    actions: [...] int actions taken.
    behaviour_logits: [..., A] logits of the policy that acted.
    behaviour_values: [...] V_old(s_t) of the parameters that acted (value clipping).
    advantages: [...] A_t.
    returns: [...] value targets G_t.
    mask: [...] 1.0 for experience, 0.0 for auto-reset transitions.
  """
  chex.assert_equal_shape([values, actions, behaviour_values, advantages, returns, mask])
  chex.assert_equal_shape([logits, behaviour_logits])
  advantages, returns = jax.lax.stop_gradient((advantages, returns))
  behaviour_logits, behaviour_values = jax.lax.stop_gradient((behaviour_logits, behaviour_values))
  log_ratio = action_log_prob(logits, actions) - action_log_prob(behaviour_logits, actions)
  ratio = jnp.exp(log_ratio)
  surrogate = jnp.minimum(ratio * advantages, jnp.clip(ratio, 1.0 - clip, 1.0 + clip) * advantages)
  policy_loss = -masked_mean(surrogate, mask)
  clipped_values = behaviour_values + jnp.clip(values - behaviour_values, -clip, clip)
  value_losses = jnp.maximum(jnp.square(values - returns), jnp.square(clipped_values - returns))
  value_loss = 0.5 * masked_mean(value_losses, mask)
  entropy = masked_mean(categorical_entropy(logits), mask)
  total = policy_loss + value_coef * value_loss - entropy_coef * entropy
  return LossTerms(total, policy_loss, value_loss, entropy)


def normalize_advantages(advantages: Array, mask: Array, eps: float = 1e-5) -> Array:
  """(A - mean) / (std + eps) over the entries where mask is 1 (population std).

  Masked entries keep a finite value (they are masked out of the loss anyway). An all-masked
  batch gives zeros rather than NaN.
  """
  count = jnp.maximum(jnp.sum(mask), 1.0)
  mean = jnp.sum(advantages * mask) / count
  var = jnp.sum(jnp.square(advantages - mean) * mask) / count
  return (advantages - mean) / (jnp.sqrt(var) + eps) * mask


def approx_kl(log_ratio: jax.Array, mask: jax.Array) -> jax.Array:
  """CleanRL's estimate of KL(pi_old || pi_theta) on a minibatch (Schulman's "k3"):

      mean[(r - 1) - log r],   r = pi_theta(a | s) / pi_old(a | s),  a ~ pi_old.

  Unbiased (E_old[r] = 1) and >= 0 term by term (log r <= r - 1), 0 where pi_theta =
  pi_old. `log_ratio` = log r; the mean is `losses.masked_mean`'s, as the clip fraction's
  (masked entries count as 0). Terms are clamped at 0 against rounding.
  """
  terms = jnp.maximum(jnp.expm1(log_ratio) - log_ratio, 0.0)  # expm1: exact near r = 1
  return masked_mean(terms, mask)


def explained_variance(targets: jax.Array, values: jax.Array, mask: jax.Array) -> jax.Array:
  """How much of the targets' variance the value predictions explain:

      EV = 1 - Var[G - V] / Var[G],

  population variances over the entries where mask is 1 (masked targets are not data).
  1 for perfect values, 0 for a constant guess at the mean, < 0 for worse. Where Var[G] =
  0 (or nothing is valid) it is 0, not CleanRL's NaN: a NaN metric would stop training as
  diverged (`galax.core.divergence`), e.g. on a sparse-reward batch of zero returns.
  """
  count = jnp.maximum(jnp.sum(mask), 1.0)

  def variance(x):
    mean = jnp.sum(x * mask) / count
    return jnp.sum(jnp.square(x - mean) * mask) / count

  var_targets = variance(targets)
  ok = var_targets > 0.0
  return jnp.where(ok, 1.0 - variance(targets - values) / jnp.where(ok, var_targets, 1.0), 0.0)
