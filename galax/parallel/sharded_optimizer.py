"""The learners' optimizer state sharded over the learner axis (ZeRO stage 1).

Distributed BA3C (Adamski et al. 2018) keeps the weights and the Adam moments on parameter
servers, each holding a slice of the model; workers send gradients and fetch weights. On
the learner axis this becomes ZeRO stage 1 (Rajbhandari et al. 2020): learner k of n holds
slice k of the optimizer state, and the all-reduce of gradients splits into its two halves,
a reduce-scatter before the update and an all-gather after it (the same bytes on the wire
as one all-reduce). `optimizer.sharded_state=True` (with combine = allreduce) picks it
instead of `galax.core.optimizers.ReplicatedOptimizer` and `AllReduce`; both give the same
update. The reduce-scatter is the combiner's (`ShardedAllReduce.grads`), on the update's
own line like every combine; the all-gather ends the optimizer's `step`, since every
learner needs the whole parameters to act.

The parameters, flattened into one vector of P numbers and zero-padded to n * S, are cut
into n slices of S. One step of learner k:
  1. reduce-scatter: the mean over learners of gradient slice k (`psum_scatter`;
     `ShardedAllReduce.grads`),
  2. global-norm clipping, with the squared norm `psum`-ed over the slices
     (`ShardedOptimizer.step`, as are 3 and 4),
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
from galax.parallel.combine import AllReduce
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


class ShardedAllReduce(AllReduce):
  """All-reduce's first half: each learner receives its slice [S] of the mean gradient."""

  def __init__(self, layout: FlatLayout):
    self.layout = layout

  def grads(self, grads_block: ParamsBlock, weights: jax.Array | None = None) -> jax.Array:
    """[L, S]: device d receives the mean over all learners of the slices of its learners
    d*L .. d*L+L-1 (with `weights` [L], the mean of w_i g_i: straggler dropping)."""
    layout = self.layout
    n, size = layout.num_shards, layout.shard_size
    learners = jax.tree.leaves(grads_block)[0].shape[0]  # L
    flat_grads = jax.vmap(layout.flatten)(grads_block).reshape(learners, n, size)
    summed = learner_sum(flat_grads, weights)
    return jax.lax.psum_scatter(summed, AXIS, scatter_dimension=0, tiled=True) / n


class ShardedOptimizer:
  """ZeRO-1 optimizer state over the learner axis (see the module docstring)."""

  def __init__(
    self,
    optimizer: optax.GradientTransformation,
    layout: FlatLayout,
    clip_average_norm: float = 0.0,
    max_grad_norm: float = 0.0,
  ):
    self.optimizer = optimizer  # element-wise: no clipping inside
    self.layout = layout
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

  def clip_each(self, grads: ParamsBlock) -> ParamsBlock:
    return optimizers.clip_each_learner(grads, self.clip_average_norm)

  def step(
    self, grad_slices: jax.Array, opt_state: OptState, params: ParamsBlock
  ) -> tuple[ParamsBlock, OptState, jax.Array]:
    """One step from the learners' slices of the mean gradient [L, S]
    (`ShardedAllReduce.grads`) to every learner's whole new parameters."""
    layout = self.layout
    size = layout.shard_size
    learners = grad_slices.shape[0]  # L
    shards = jax.lax.axis_index(AXIS) * learners + jnp.arange(learners)  # k of each learner
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
) -> tuple[ShardedAllReduce, ShardedOptimizer]:
  """The combiner and the sharded optimizer step for the run's optimizer `cfg`, with the lr
  `schedule` (a function of the optimizer step: `optimizers.learner_schedule`)."""
  layout = FlatLayout(params_shapes, num_learners)
  optimizer = ShardedOptimizer(
    optimizers.elementwise_optimizer(cfg, schedule),
    layout,
    cfg.clip_average_norm,
    cfg.max_grad_norm,
  )
  return ShardedAllReduce(layout), optimizer
