"""A2C's gradient without the learner's forward pass: acting keeps the VJP of its forward.

A measured option, not wired into galax (issue 57): it pays 3-10% on a shared 2-core CPU,
not bitwise, so it waits for a quiet machine's figure before it becomes a plan choice.

On-policy A2C acts its t_max steps with the very parameters it then differentiates at, so
the learner's forward pass over the T x b observations recomputes the logits and values
that acting computed (`Trajectory.behaviour_logits`, `Trajectory.values[:T]`). At
pong_paac's shape on the 2-core CPU (XLA:CPU, jax 0.11.2, a shared machine; figures of
`benchmarks/learner_update_cost.py`, 2026-11-29) the network's forward + backward over 160
frames took 67 ms, its backward alone from saved residuals 33 ms; acting plus learning in
one program took 0.90-0.97x as long with the forward reused as without (three runs): the 5
backward passes over 32 frames cost more than 2 over 80, and acting writes the residuals.
Here acting runs the policy through `jax.vjp` and keeps, per step, its VJP (a pytree of
residuals that `jit` can return and a `lax.scan` can stack); the learner then needs only

  1. the loss's cotangents with respect to the outputs, from the saved outputs
     (`output_cotangents`: the gradient of `losses.a2c_loss` in logits and values), and
  2. each step's backward pass applied to its step's cotangents, summed over the steps
     (`grads_from_vjps`).

The result is `a2c.a2c_grads`'s gradient up to float rounding: acting's forward runs at
b observations per call (the learner's at T b / grad_chunks), and the per-step parameter
gradients are summed in step order. Only gradients at the acting parameters can reuse the
forward: A2C's single gradient step, not PPO's epochs or IMPALA's lagged learner.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from galax.core import losses
from galax.core.types import Params

ApplyFn = Callable[[Params, jax.Array], tuple[jax.Array, jax.Array]]


def forward_with_vjp(apply_fn: ApplyFn, params: Params, obs: jax.Array):
  """((logits, values), vjp): `apply_fn(params, obs)` and the VJP of its outputs with
  respect to `params` (a pytree of residuals: it can be returned from `jit` or stacked by
  `lax.scan`). The outputs are those of `apply_fn(params, obs)`, bit for bit."""
  return jax.vjp(lambda p: apply_fn(p, obs), params)


def output_cotangents(
  logits: jax.Array,
  values: jax.Array,
  actions: jax.Array,
  targets: jax.Array,
  mask: jax.Array,
  loss: losses.LossSettings,
) -> tuple[tuple[jax.Array, jax.Array], losses.LossTerms]:
  """(d total / d logits [T, b, A], d total / d values [T, b]) of `losses.a2c_loss` at the
  saved outputs, and the loss's terms there."""

  def total(lv):
    terms = losses.a2c_loss(
      lv[0],
      lv[1],
      actions,
      targets,
      mask,
      loss.entropy_coef,
      loss.value_coef,
      loss.sum_over_time,
    )
    return terms.total, terms

  return jax.grad(total, has_aux=True)((logits, values))


def grads_from_vjps(vjps, cotangents: tuple[jax.Array, jax.Array]) -> Params:
  """The parameter gradient sum_t vjp_t(cotangents[t]): `vjps` stacked over the T steps
  (leading axis T on every residual), `cotangents` (d logits [T, b, A], d values [T, b]).
  The steps are unrolled (T backward passes over b observations each): a vmap over T
  would turn every convolution's kernel gradient into one grouped convolution, which
  XLA:CPU computes more slowly."""
  steps = cotangents[1].shape[0]
  total = None
  for t in range(steps):
    vjp_t = jax.tree.map(lambda r, t=t: r[t], vjps)
    (grads,) = vjp_t(jax.tree.map(lambda c, t=t: c[t], cotangents))
    total = grads if total is None else jax.tree.map(jnp.add, total, grads)
  return total


def a2c_grads_from_vjps(
  vjps,
  logits: jax.Array,
  values: jax.Array,
  actions: jax.Array,
  targets: jax.Array,
  mask: jax.Array,
  loss: losses.LossSettings,
) -> tuple[Params, losses.LossTerms]:
  """`a2c.a2c_grads`'s (gradient, loss terms) of one learner's [T, b] trajectory from
  acting's saved outputs (logits [T, b, A], values [T, b]: `behaviour_logits`,
  `values[:T]`) and its per-step VJPs (`forward_with_vjp`, stacked over T), without a
  forward pass."""
  cotangents, terms = output_cotangents(logits, values, actions, targets, mask, loss)
  return grads_from_vjps(vjps, cotangents), terms
