"""The wrappers that carry out an `ExecutionPlan` (galax/plan.py) for every algorithm.

An algorithm writes its update for one device's block of learners as plain JAX; these
wrap it as the plan says: `block_policy` runs the learners' networks (`plan.learner_map`),
`chunked` computes a gradient in `plan.grad_chunks` pieces, and `compile_step` compiles
`updates_per_call` updates into one jitted `shard_map` (`plan.update_loop`).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from galax import divergence
from galax.learner_state import BlockUpdate, Setup
from galax.parallel import learners as lx
from galax.types import PyTree


def block_policy(apply_fn: Callable, learners: int, how: str = "vmap") -> Callable:
  """A policy over a block's flat env batch [L * b, ...] with per-learner params [L, ...].

  how: how the learners' networks run (`lx.map_learners`; `ExecutionPlan.learner_map`).
  """

  def policy(params, obs):
    obs = lx.learner_block(obs, learners)
    logits, values = lx.map_learners(apply_fn, params, obs, how=how)
    return lx.flatten_block((logits, values))

  return policy


def env_chunks(tree: PyTree, chunks: int, axis: int = 1) -> list[PyTree]:
  """`tree` cut into `chunks` equal, consecutive slices along its env `axis` (a list)."""
  width = jax.tree.leaves(tree)[0].shape[axis] // chunks
  return [jax.tree.map(lambda x: jax.lax.slice_in_dim(x, c * width, (c + 1) * width,
                                                      axis=axis), tree)
          for c in range(chunks)]


def mean_of(parts: list[PyTree]) -> PyTree:
  """The leafwise mean of equal-structured pytrees."""
  return jax.tree.map(lambda *xs: sum(xs) / len(parts), *parts)


def chunked(fn: Callable[[PyTree], PyTree], chunks: int, axis: int = 1,
            combine: Callable[[list[PyTree]], PyTree] = mean_of) -> Callable[[PyTree], PyTree]:
  """`fn` computed on `chunks` equal slices of its input along `axis`, then `combine`d
  (the mean by default); `fn` itself when chunks = 1.

  For a loss that is a mean with a fixed normaliser, the mean of the chunks' gradients is
  the whole batch's gradient (up to float rounding), computed as `chunks` smaller,
  unrolled programs (`ExecutionPlan.grad_chunks`: XLA:CPU's conv gradients cost more per
  sample on large batches).
  """
  if chunks == 1:
    return fn
  return lambda tree: combine([fn(part) for part in env_chunks(tree, chunks, axis)])


def compile_step(setup: Setup, update_block: BlockUpdate,
                 state_specs: P | PyTree | None = None) -> Callable:
  """jit(shard_map(scan(update_block))) over `config.updates_per_call` updates, or with
  `plan.update_loop = "host"` a Python loop of jitted single updates.

  `update_block(block_state) -> (block_state, metrics)` works on a device's block of
  learners. Metrics leaves must have the learner (or env) axis first; updates are stacked
  in front, so the global metrics are [U, n, ...] or [U, n * b, ...].
  """
  update_block = divergence.with_finite_flags(update_block)  # metrics["finite"], every algorithm
  updates = int(setup.config.updates_per_call)
  in_specs = P(lx.AXIS) if state_specs is None else state_specs

  def sharded(fn):
    return jax.jit(jax.shard_map(fn, mesh=setup.mesh, in_specs=(in_specs,),
                                 out_specs=(in_specs, P(None, lx.AXIS)), check_vma=False),
                   donate_argnums=0)

  if setup.plan.update_loop == "scan":
    return sharded(lambda s: jax.lax.scan(lambda c, _: update_block(c), s, None, length=updates))

  def one_update(s):
    s, metrics = update_block(s)
    return s, jax.tree.map(lambda m: m[None], metrics)

  one = sharded(one_update)
  stack = jax.jit(lambda ms: jax.tree.map(lambda *xs: jnp.concatenate(xs), *ms))

  def step(state):
    all_metrics = []
    for _ in range(updates):
      state, metrics = one(state)
      all_metrics.append(metrics)
    return state, stack(all_metrics)

  return step
