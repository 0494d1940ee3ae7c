"""The learners' optimizer state sharded over the learner axis (ZeRO stage 1).

Distributed BA3C (Adamski et al. 2018) keeps the weights and the Adam moments on parameter
servers, each holding a slice of the model; workers send gradients and fetch weights. On
the learner axis this becomes ZeRO stage 1 (Rajbhandari et al. 2020): learner k of n holds
slice k of the optimizer state, and the all-reduce of gradients splits into its two halves,
a reduce-scatter before the update and an all-gather after it (the same bytes on the wire
as one all-reduce). `optimizer.sharded_state=True` (with combine = allreduce) picks it
instead of `galax.core.optimizers.ReplicatedOptimizer`; both give the same update.

The parameters, flattened into one vector of P numbers and zero-padded to n * S, are cut
into n slices of S. One step of learner k:
  1. reduce-scatter: the mean over learners of gradient slice k (`psum_scatter`),
  2. global-norm clipping, with the squared norm `psum`-ed over the slices,
  3. the element-wise optimizer (Adam, RMSProp, SGD) on slice k with state slice k,
  4. all-gather of the updated slices, unflattened into every learner's parameters.
A device then holds L * S numbers per optimizer moment instead of L * P: n times less.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

from galax.core import optimizers
from galax.core.types import OptState, Params, ParamsBlock, PyTree
from galax.parallel.layout import AXIS, learner_sum


class FlatLayout:
  """One learner's parameter tree as a flat vector of P numbers, padded to n slices of S."""

  def __init__(self, params_shapes: PyTree, num_shards: int):
    leaves, self.treedef = jax.tree.flatten(params_shapes)
    dtypes = {np.dtype(x.dtype) for x in leaves}
    if len(dtypes) != 1:
      raise ValueError(f"Sharded optimizer state needs one parameter dtype, got {dtypes}.")
    self.dtype = dtypes.pop()
    self.shapes = [tuple(x.shape) for x in leaves]
    self.sizes = [math.prod(s) for s in self.shapes]
    self.size = sum(self.sizes)  # P
    self.num_shards = num_shards  # n
    self.shard_size = -(-self.size // num_shards)  # S
    self.ends = np.cumsum(self.sizes)[:-1]

  def flatten(self, tree: Params) -> jax.Array:
    """[P] -> padded [n * S]."""
    flat = jnp.concatenate([x.reshape(-1) for x in jax.tree.leaves(tree)])
    return jnp.pad(flat, (0, self.num_shards * self.shard_size - self.size))

  def unflatten(self, flat: jax.Array) -> Params:
    parts = jnp.split(flat[: self.size], self.ends)
    return jax.tree.unflatten(self.treedef, [p.reshape(s) for p, s in zip(parts, self.shapes)])


class ShardedOptimizer:
  """ZeRO-1 optimizer state over the learner axis (see the module docstring)."""

  def __init__(
    self,
    optimizer: optax.GradientTransformation,
    params_shapes: PyTree,
    num_learners: int,
    clip_average_norm: float = 0.0,
    max_grad_norm: float = 0.0,
  ):
    self.optimizer = optimizer  # element-wise: no clipping inside
    self.layout = FlatLayout(params_shapes, num_learners)
    self.clip_average_norm = clip_average_norm
    self.max_grad_norm = max_grad_norm

  def init(self, params: Params) -> OptState:
    """State of one slice. Our optimizers' initial states depend on shapes, not values."""
    del params
    return self.optimizer.init(jnp.zeros((self.layout.shard_size,), self.layout.dtype))

  def _clip_global(self, grads: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Global-norm clipping of the slices [L, S] (as optax.clip_by_global_norm); returns
    them and the norm of the whole combined gradient."""
    norm = jnp.sqrt(jax.lax.psum(jnp.sum(jnp.square(grads)), AXIS))
    if self.max_grad_norm > 0:
      grads = jax.lax.select(norm < self.max_grad_norm, grads, grads / norm * self.max_grad_norm)
    return grads, norm

  def apply_gradients(
    self,
    grads: ParamsBlock,
    opt_state: OptState,
    params: ParamsBlock,
    weights: jax.Array | None = None,
  ) -> tuple[ParamsBlock, OptState, jax.Array]:
    layout = self.layout
    n, size = layout.num_shards, layout.shard_size
    learners = jax.tree.leaves(grads)[0].shape[0]  # L
    shards = jax.lax.axis_index(AXIS) * learners + jnp.arange(learners)  # k of each learner

    # 1. Reduce-scatter (after each learner's per-tensor clipping): device d receives the
    #    summed slices of its learners d*L .. d*L+L-1 (weighted: straggler dropping).
    grads = optimizers.clip_each_learner(grads, self.clip_average_norm)
    flat_grads = jax.vmap(layout.flatten)(grads).reshape(learners, n, size)
    grad_slices = (
      jax.lax.psum_scatter(learner_sum(flat_grads, weights), AXIS, scatter_dimension=0, tiled=True)
      / n
    )  # [L, S]
    # 2. Global-norm clipping of the mean gradient.
    grad_slices, norm = self._clip_global(grad_slices)
    # 3. The element-wise update of each learner's slice. Learners share parameters, so
    #    the first learner's copy gives every slice.
    flat_params = layout.flatten(jax.tree.map(lambda x: x[0], params))
    param_slices = jax.vmap(lambda k: jax.lax.dynamic_slice(flat_params, (k * size,), (size,)))(
      shards
    )
    updates, opt_state = jax.vmap(self.optimizer.update)(grad_slices, opt_state, param_slices)
    param_slices = optax.apply_updates(param_slices, updates)
    # 4. All-gather the slices into the whole parameter vector, on every learner.
    full = jax.lax.all_gather(param_slices, AXIS, axis=0, tiled=True).reshape(-1)
    new_params = layout.unflatten(full)
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (learners, *x.shape)), new_params)
    return params, opt_state, jnp.broadcast_to(norm, (learners,))


def make_sharded_optimizer(
  cfg: optimizers.OptimizerSettings,
  params_shapes: PyTree,
  num_learners: int,
  schedule: optax.Schedule,
) -> ShardedOptimizer:
  """The sharded optimizer step for the run's optimizer `cfg`, with the lr `schedule`
  (a function of the optimizer step: `optimizers.learner_schedule`)."""
  return ShardedOptimizer(
    optimizers.elementwise_optimizer(cfg, schedule),
    params_shapes,
    num_learners,
    cfg.clip_average_norm,
    cfg.max_grad_norm,
  )
