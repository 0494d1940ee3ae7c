"""How learners combine: the one place where all-reduce A2C and GALA differ.

A combiner acts on a device's block of L learners inside `shard_map` over `AXIS`:

  grads(g)          before the optimizer step (all-reduce averages gradients here)
  params(x, state)  after the optimizer step (gossip mixes parameters here)

`Independent` leaves learners alone (one A2C learner, or n independent seeds).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from galax.parallel.learners import AXIS


class Independent:
  """No communication."""

  name = "independent"

  def init(self, params_block: Any) -> Any:
    del params_block
    return ()

  def grads(self, grads_block: Any) -> Any:
    return grads_block

  def params(self, params_block: Any, state: Any) -> tuple[Any, Any]:
    return params_block, state


class AllReduce(Independent):
  """Synchronous data-parallel A2C (Stooke & Abbeel 2018; synchronous BA3C).

  Gradients are averaged over all learners (the block's own L, then `pmean` over the
  devices), so every learner applies the same update and parameters stay identical.
  """

  name = "allreduce"

  def grads(self, grads_block: Any) -> Any:
    def mean(g):
      m = jax.lax.pmean(jnp.mean(g, axis=0), AXIS)
      return jnp.broadcast_to(m, g.shape)

    return jax.tree.map(mean, grads_block)
