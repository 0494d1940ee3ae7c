"""Diagnostics of the learner axis, the quantities of GALA's Fig. 2.

All functions run inside `shard_map` over `AXIS` on a device's block of L learners
(leading axis [L]) and return per-learner arrays [L, ...] (metrics leaves keep the learner
axis first). They communicate: use them for diagnostics, not on the hot path.

  consensus_distances     ||x_i - xbar|| per learner and ||X - Xbar||_F (Fig. 2a)
  centered_update_norm    ||Pi G||_F of stacked updates: the g_s of the Prop. 1 bound
  prop1_bound_step        one step of the recursive Prop. 1 bound (galax.parallel.topology)
  grad_cosine_similarity  the learner's rows of the [n, n] gradient cosine matrix (Fig. 2b)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from galax.core.types import ParamsBlock, PyTree
from galax.parallel.layout import AXIS, learner_sum


def flatten_learners(block: PyTree) -> jax.Array:
  """A pytree of [L, ...] leaves -> [L, d] float32 (each learner's leaves, concatenated)."""
  leaves = jax.tree.leaves(block)
  return jnp.concatenate([x.reshape(x.shape[0], -1).astype(jnp.float32) for x in leaves], 1)


def consensus_distances(params_block: ParamsBlock) -> tuple[jax.Array, jax.Array]:
  """(||x_i - xbar|| for the block's learners [L], ||X - Xbar||_F over all learners [])."""
  x = flatten_learners(params_block)
  mean = jax.lax.pmean(learner_sum(x) / x.shape[0], AXIS)
  dist = jnp.linalg.norm(x - mean, axis=1)
  total = jnp.sqrt(jax.lax.psum(jnp.sum(jnp.square(dist)), AXIS))
  return dist, total


def centered_update_norm(updates_block: ParamsBlock, num_nodes: int) -> jax.Array:
  """||Pi_N G||_F for the stacked updates G of all n learners padded with zero rows to N.

  N = n (tau + 1) nodes of the delay-augmented graph, whose virtual nodes make no updates
  (N = n without delay: the distance of the updates from their mean). Returns [].
  """
  u = flatten_learners(updates_block)
  n = u.shape[0] * jax.lax.axis_size(AXIS)
  mean = jax.lax.psum(learner_sum(u), AXIS) / num_nodes
  real = jax.lax.psum(jnp.sum(jnp.square(u - mean)), AXIS)
  virtual = (num_nodes - n) * jnp.sum(jnp.square(mean))
  return jnp.sqrt(real + virtual)


def prop1_bound_step(
  gains: np.ndarray, update_norms: jax.Array, bounds: jax.Array, new_update_norm: jax.Array
) -> tuple[jax.Array, jax.Array]:
  """One step of B_{k+1} = sum_{m=1}^{W} c_m g_{k+1-m} + c_W B_{k+1-W}.

  Args:
    gains: c_1..c_W (`topology.prop1_window`).
    update_norms: [L, W] g_{k-1}, ..., g_{k-W} (zeros before the first update).
    bounds: [L, W] B_k, ..., B_{k-W+1} (zeros before the first update; B_0 = 0).
    new_update_norm: g_k, [] or [L].
  Returns:
    The shifted histories (update_norms, bounds); bounds[:, 0] is B_{k+1}.
  """
  gains = jnp.asarray(gains, jnp.float32)
  g = jnp.broadcast_to(new_update_norm, update_norms.shape[:1])
  update_norms = jnp.concatenate([g[:, None], update_norms[:, :-1]], axis=1)
  bound = update_norms @ gains + gains[-1] * bounds[:, -1]
  bounds = jnp.concatenate([bound[:, None], bounds[:, :-1]], axis=1)
  return update_norms, bounds


def grad_cosine_similarity(grads_block: ParamsBlock) -> jax.Array:
  """cos(g_i, g_j) for the block's learners i against all n learners j: [L, n].

  Gathers every learner's flattened gradient (n x d floats) on every device.
  """
  g = flatten_learners(grads_block)
  g = g / jnp.maximum(jnp.linalg.norm(g, axis=1, keepdims=True), 1e-30)
  everyone = jax.lax.all_gather(g, AXIS, tiled=True)
  return g @ everyone.T
