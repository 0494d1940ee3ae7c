"""Actor groups: a device's envs split into A groups, each with its own envpool pool.

HTS-RL's asynchronous actors (galax/algorithms/hts/segment.py): each group has its own forward
pass, and its actions go to its envs as soon as that pass is done, so its envs step while
the next group's forward pass runs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from galax.envs import EnvSettings, EnvSpec, EnvState, make_env
from galax.envs.base import PyTree


class ActorGroups:
  """A device's L * b envs split into A actor groups, each with its own envpool pool.

  Group a holds envs [a * b / A, (a + 1) * b / A) of every learner, in (learner, env)
  order; env seeds are their global ids, so any A gives the same environments. With
  A = 1 this is the usual single pool.
  """

  def __init__(
    self,
    env: EnvSettings,
    seed: int,
    num_groups: int,
    learners: int,
    envs_per_learner: int,
    num_shards: int,
    process_offset: int,
  ):
    """The envs `env` describes, seeded from the run's `seed` (`config.seed`); `learners`
    per device (L), `num_shards` local devices, `process_offset` this process's first
    global env id."""
    b = envs_per_learner
    if num_groups == 1:
      self.envs = [
        make_env(env, num_envs=learners * b, seed=seed + process_offset, num_shards=num_shards)
      ]
    else:
      per = b // num_groups
      self.envs = []
      for a in range(num_groups):
        seeds = [
          [
            seed + process_offset + s * learners * b + l * b + a * per + j
            for l in range(learners)
            for j in range(per)
          ]
          for s in range(num_shards)
        ]
        self.envs.append(
          make_env(env, num_envs=learners * per, seed=seed, num_shards=num_shards, env_seeds=seeds)
        )
    self.num_groups = num_groups
    self.learners, self.per_group = learners, b // num_groups
    self.spec: EnvSpec = self.envs[0].spec
    self.num_envs = learners * b
    self.num_shards = num_shards

  @property
  def total_envs(self) -> int:
    return self.num_envs * self.num_shards

  @property
  def state_restorable(self) -> bool:
    return all(env.state_restorable for env in self.envs)

  def reset(self) -> tuple[EnvState, ...]:
    return tuple(env.reset() for env in self.envs)

  def close(self) -> None:
    for env in self.envs:
      env.close()

  def split(self, x: jax.Array, axis: int = 0) -> list[jax.Array]:
    """[..., L * b, ...] (env axis `axis`) -> A arrays [..., L * b / A, ...]."""
    if self.num_groups == 1:
      return [x]
    shape = x.shape
    x = x.reshape(
      shape[:axis] + (self.learners, self.num_groups, self.per_group) + shape[axis + 1 :]
    )
    return [
      jax.lax.index_in_dim(x, a, axis + 1, keepdims=False).reshape(
        shape[:axis] + (-1,) + shape[axis + 1 :]
      )
      for a in range(self.num_groups)
    ]

  def merge(self, xs: list[jax.Array], axis: int = 0) -> jax.Array:
    """Inverse of `split`."""
    if self.num_groups == 1:
      return xs[0]
    shape = xs[0].shape
    parts = [
      x.reshape(shape[:axis] + (self.learners, self.per_group) + shape[axis + 1 :]) for x in xs
    ]
    x = jnp.stack(parts, axis=axis + 1)
    return x.reshape(shape[:axis] + (-1,) + shape[axis + 1 :])

  def merge_trees(self, trees: list[PyTree]) -> PyTree:
    """`merge` leaf by leaf over one pytree per group (env axis first)."""
    return jax.tree.map(lambda *xs: self.merge(list(xs)), *trees)
