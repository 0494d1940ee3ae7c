"""The learner axis: n learners, each with its own parameters, optimizer state, envs and keys.

Learners are laid out along one mesh axis, `AXIS`, with `learners_per_device` learners
per device (GALA's "several learners on one GPU" and one learner per device are the same
program). Every per-learner leaf of the training state has a leading axis: [n, ...] for
learner quantities and [n * b, ...] for env quantities (b envs per learner), sharded over
the devices along axis 0. Inside `shard_map` a device sees its block of L = n / D learners.

Each device steps its own envpool pool (see `galax.envs.pool`): `env_shard_index()` tells
which. Under multi-host JAX (`jax.distributed.initialize`) each process owns the pools of
its local devices, and the mesh orders devices process by process.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import mesh_utils, multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from galax.core.types import PyTree

AXIS = "learners"


class Layout(NamedTuple):
  num_learners: int
  num_devices: int  # devices along the learner axis (all processes)
  learners_per_device: int
  envs_per_learner: int

  @property
  def local_devices(self) -> int:
    return self.num_devices // jax.process_count()

  @property
  def local_learners(self) -> int:
    return self.local_devices * self.learners_per_device

  @property
  def local_envs(self) -> int:
    return self.local_learners * self.envs_per_learner

  @property
  def first_learner(self) -> int:
    """The global index of this process's first learner (processes hold equal blocks)."""
    return jax.process_index() * self.local_learners

  @property
  def first_env(self) -> int:
    """The global index of this process's first env (its first learner's)."""
    return self.first_learner * self.envs_per_learner


def make_layout(
  num_learners: int,
  envs_per_learner: int,
  num_devices: int = 0,
  devices: Sequence[jax.Device] | None = None,
) -> Layout:
  """Chooses how many of `devices` (default: all of `jax.devices()`) carry the learners.

  num_devices = 0: the most devices (up to all) that divide num_learners evenly.
  """
  if num_learners < 1 or envs_per_learner < 1:
    raise ValueError(
      f"num_learners ({num_learners}) and envs_per_learner ({envs_per_learner}) must be >= 1."
    )
  available = jax.device_count() if devices is None else len(devices)
  if num_devices <= 0:
    fits = [
      d
      for d in range(1, min(available, num_learners) + 1)
      if num_learners % d == 0 and d % jax.process_count() == 0
    ]
    if not fits:
      raise ValueError(
        f"num_learners={num_learners} cannot be spread evenly over the "
        f"{jax.process_count()} processes: every process needs learners "
        "(use a multiple of the number of processes)."
      )
    num_devices = max(fits)
  if num_devices > available:
    raise ValueError(f"num_devices={num_devices} but only {available} devices are visible.")
  if num_learners % num_devices:
    raise ValueError(
      f"num_learners={num_learners} must be a multiple of num_devices="
      f"{num_devices} (learners are split evenly over devices)."
    )
  if num_devices % jax.process_count():
    raise ValueError(
      f"num_devices={num_devices} must be a multiple of the number of "
      f"processes ({jax.process_count()})."
    )
  return Layout(num_learners, num_devices, num_learners // num_devices, envs_per_learner)


def make_mesh(layout: Layout, devices: Sequence[jax.Device] | None = None) -> Mesh:
  """A 1-d mesh over `layout.num_devices` of `devices` (default: `jax.devices()`).

  In one process, TPU devices come in `mesh_utils.create_device_mesh`'s physical ring
  order, so that a gossip ring's neighbours are ICI neighbours. Otherwise devices are
  ordered process by process, by id (each process's env pools are a contiguous block).
  """
  devices = list(jax.devices() if devices is None else devices)
  if jax.process_count() == 1 and devices[0].platform == "tpu":
    try:
      ring = mesh_utils.create_device_mesh(
        (layout.num_devices,), devices=devices[: layout.num_devices]
      )
      return Mesh(ring, (AXIS,))
    except (ValueError, NotImplementedError, AssertionError):
      pass  # a slice shape create_device_mesh has no ring for: ordered by id below
  per_process = layout.num_devices // jax.process_count()
  ordered = []
  for p in range(jax.process_count()):
    mine = sorted((d for d in devices if d.process_index == p), key=lambda d: d.id)
    ordered.extend(mine[:per_process])
  return Mesh(np.array(ordered), (AXIS,))


def env_shard_index() -> jax.Array:
  """Inside shard_map: which of this process's env pools belongs to the current device."""
  per_process = jax.lax.axis_size(AXIS) // jax.process_count()
  return jax.lax.axis_index(AXIS) % per_process


def learner_sharding(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, P(AXIS))


def global_from_local(mesh: Mesh, tree: PyTree) -> PyTree:
  """Builds global arrays sharded on axis 0 from this process's slice of each leaf."""
  sharding = learner_sharding(mesh)
  return jax.tree.map(
    lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), tree
  )


def to_host(tree: PyTree) -> PyTree:
  """Fetches (possibly multi-host) global arrays as numpy arrays on every process."""
  if jax.process_count() == 1:
    return jax.tree.map(np.asarray, tree)

  return multihost_utils.process_allgather(tree, tiled=True)


def replicate_for_learners(tree: PyTree, count: int) -> PyTree:
  """Stacks `count` copies of every leaf on a new leading axis (identical learners)."""
  return jax.tree.map(lambda x: jnp.broadcast_to(x, (count, *jnp.shape(x))), tree)


def learner_block(tree: PyTree, learners: int) -> PyTree:
  """[L * b, ...] env-major leaves -> [L, b, ...]."""
  return jax.tree.map(lambda x: x.reshape(learners, x.shape[0] // learners, *x.shape[1:]), tree)


def split_learners(tree: PyTree, learners: int) -> PyTree:
  """A block's time-major data [T, L * b, ...] -> [L, T, b, ...] (e.g. a `Trajectory`,
  whose values [T + 1, L * b] become [L, T + 1, b])."""
  return jax.tree.map(
    lambda x: jnp.moveaxis(x.reshape(x.shape[0], learners, -1, *x.shape[2:]), 1, 0), tree
  )


def flatten_block(tree: PyTree) -> PyTree:
  """[L, b, ...] -> [L * b, ...]."""
  return jax.tree.map(lambda x: x.reshape(math.prod(x.shape[:2]), *x.shape[2:]), tree)


def learner_sum(x: jax.Array, weights: jax.Array | None = None) -> jax.Array:
  """sum_i w_i x[i] over the learner axis of [L, ...] (w = ones by default), as a
  contraction: XLA:CPU reduces vmapped per-learner gradients over their leading axis
  more slowly (jnp.sum), and far more slowly with w_i fused in (docs/benchmarks.md)."""
  if weights is None:
    weights = jnp.ones((x.shape[0],), x.dtype)
  return jnp.tensordot(weights.astype(x.dtype), x, axes=1)


def map_learners(fn: Callable[..., PyTree], *blocks: PyTree, how: str = "vmap") -> PyTree:
  """fn applied to each learner of [L, ...] blocks, results stacked on a new axis 0.

  how: 'vmap' (one batched program); 'unroll' traces fn once per learner (L is small), so
  a network with its own weights per learner runs as L ordinary convolutions instead of
  one batched-kernel (grouped) convolution, which XLA:CPU computes more slowly;
  'loop' runs the learners one after another in an XLA loop (`lax.map`): one learner's
  program, so compile time and memory do not grow with L.
  """
  if how == "vmap":
    return jax.vmap(fn)(*blocks)
  if how == "loop":
    return jax.lax.map(lambda args: fn(*args), blocks)
  if how != "unroll":
    raise ValueError(f"how={how!r}: expected 'vmap', 'unroll' or 'loop'.")
  learners = jax.tree.leaves(blocks)[0].shape[0]
  outs = [fn(*jax.tree.map(lambda x, i=i: x[i], blocks)) for i in range(learners)]
  return jax.tree.map(lambda *xs: jnp.stack(xs), *outs)
