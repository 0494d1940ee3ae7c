"""The training state and what builds on it, below every algorithm and parallel module.

`LearnerState` is the state of n learners; a `BlockUpdate` advances a device's block of
them by one update; a `Setup` is what every algorithm builds first (layout, mesh, envs,
network). Algorithms (galax/algorithms/), the learner optimizers
(galax/parallel/learner_optimizer.py) and divergence handling (galax/divergence.py) all
use these, so they live here, importing none of those.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import flax.struct
import jax
from jax.sharding import Mesh
from ml_collections import ConfigDict

from galax import networks
from galax.envs import Env, EnvSettings, EnvState
from galax.envs.actor_groups import ActorGroups
from galax.parallel import learners as lx
from galax.plan import ExecutionPlan
from galax.types import Metrics, OptState, ParamsBlock, PyTree

Envs = Env | ActorGroups  # a device's training envs (HTS: its actor groups)


@flax.struct.dataclass
class LearnerState:
  """Training state of n learners (leading axis [n] or, for env leaves, [n * b])."""

  params: ParamsBlock
  opt_state: OptState
  env_state: EnvState
  action_keys: jax.Array  # [n * b, 2] per-env sampling keys
  update_count: jax.Array  # [n] int32
  combiner: PyTree = ()  # the combiner's state (`Combiner.init`: GALA's gossip buffers)
  extra: PyTree = ()  # the algorithm's own state (PPO's shuffle keys, HTS's storage, ...)


# update_block(state) -> (state, metrics): one update of a device's block of learners.
BlockUpdate = Callable[[LearnerState], tuple[LearnerState, Metrics]]


@dataclasses.dataclass
class Setup:
  """Layout, mesh, envs (and the settings they were built from), network and execution
  plan for a config (before the algorithm-specific parts;
  `galax.algorithms.run_setup.make_setup`)."""

  config: ConfigDict
  layout: lx.Layout
  mesh: Mesh
  env: Env
  env_settings: EnvSettings
  network: networks.ActorCritic
  plan: ExecutionPlan
  total_updates: int
  anneal_updates: int  # updates over which optimizer.anneal="linear" reaches 0

  @property
  def envs_per_update(self) -> int:
    return self.layout.num_learners * self.layout.envs_per_learner
