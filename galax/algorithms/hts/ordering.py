"""Ordering pure computation around envpool's custom calls, and compiling it in isolation.

Used by HTS-RL's segment (galax/algorithms/hts/segment.py) to run the learner's work while the
envs step: send -> learner units -> recv.

XLA orders the envpool custom calls by their handle token but may move pure computation
across them, and `lax.optimization_barrier` does not survive into the XLA:CPU schedule
(measured: the learner ran before `send` or after `recv`). `after(x, dep)` therefore adds
a true data dependency that is a bitwise no-op (a select on a predicate that is always
false but that XLA cannot evaluate before `dep` exists).

XLA fuses a computation differently depending on its neighbours (a learner unit next to
another unit or next to an env step; measured: PPO parameters then differ in the last
bit, 1e-7). `isolated(fn, dep, ...)` wraps `fn` in a `lax.cond` on an always-true
predicate only known at run time: XLA compiles the branch on its own, identically
wherever it sits, so results are bitwise the same for every schedule. The price: XLA:CPU
runs convolution gradients an order of magnitude slower in nested computations
(docs/benchmarks.md), so image networks on CPU call `inline` instead
(`ExecutionPlan.unit_call`, galax/framework/plan.py).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from galax.core.types import PyTree


def _opaque_false(dep: PyTree) -> jax.Array:
  """A bool scalar that is always False, but only known to be once `dep` is computed.

  -0.0 * |s| is -0.0 for finite s and NaN otherwise; neither is > 0. XLA does not fold
  float multiplications by zero (NaN semantics), so it must wait for `dep`.
  """
  leaves = [x for x in jax.tree.leaves(dep) if x.size]
  s = sum(jnp.ravel(x)[0].astype(jnp.float32) for x in leaves)
  return jnp.float32(-0.0) * jnp.abs(s) > 0


def after(x: PyTree, dep: PyTree) -> PyTree:
  """`x`, bitwise unchanged, with a data dependency on `dep` (orders work around custom calls).

  The dead branch must differ from `x` structurally, or XLA folds select(p, v, v) to v.
  """
  false = _opaque_false(dep)

  def tie(v):
    v = jnp.asarray(v)
    other = ~v if v.dtype == jnp.bool_ else v + jnp.ones((), v.dtype)
    return jnp.where(false, other, v)

  return jax.tree.map(tie, x)


def isolated(fn: Callable[..., PyTree], dep: PyTree, *operands: PyTree) -> PyTree:
  """fn(*operands), ordered after `dep`, compiled as its own XLA computation (see above)."""
  traced = {}

  def live(*ops):
    out = fn(*ops)
    traced["out"] = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), out)
    return out

  def dead(*ops):  # never runs; reuses the shapes of `live` when it was traced first
    shapes = traced["out"] if "out" in traced else jax.eval_shape(fn, *ops)
    return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)

  # `switch` traces its branches in order: `live` first, so `dead` needs no trace of its own
  # (`lax.cond` traces the true branch, here `dead`, first). Index 0 always runs.
  index = _opaque_false(dep).astype(jnp.int32)
  return jax.lax.switch(index, [live, dead], *operands)


def inline(fn: Callable[..., PyTree], dep: PyTree, *operands: PyTree) -> PyTree:
  """fn(*operands) among its neighbours (`isolated`'s signature, without the isolation)."""
  del dep
  return fn(*operands)


CALLS = dict(isolated=isolated, inline=inline)  # by `ExecutionPlan.unit_call`
