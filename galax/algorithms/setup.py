"""What every algorithm builds first, and the state it trains.

`make_setup` reads the run's config once (`RunSettings`, galax/config/settings.py), lays the
learners out over the devices, builds their envs and the network, and makes the run's
`ExecutionPlan` (galax/algorithms/plan.py) for those devices and envs:
a `Setup`. `make_learners` adds the learners' combiner and optimizer (`UpdateParts`).
`LearnerState` is the state of n learners, and a `BlockUpdate` advances a device's block of
them by one update. The learner optimizers (galax/parallel/learner_optimizer.py), the
divergence flags (galax/core/divergence.py) and the training loop name these types only
for their annotations.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple, Sequence

import flax.struct
import jax
import optax
from jax.sharding import Mesh
from ml_collections import ConfigDict

from galax.algorithms.plan import ExecutionPlan, plan_for
from galax.algorithms.spec import AlgorithmSpec
from galax.config.settings import RunSettings
from galax.core import networks
from galax.core.types import Metrics, OptState, ParamsBlock, PyTree
from galax.envs import Env, EnvSettings, EnvState, make_env
from galax.envs.actor_groups import ActorGroups
from galax.parallel import layout as lx
from galax.parallel.combine import Combiner, make_combiner
from galax.parallel.learner_optimizer import LearnerOptimizer, make_learner_optimizer

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
  """The run's settings (its config read once), layout, mesh, envs, network and execution
  plan (before the algorithm-specific parts; `make_setup`)."""

  settings: RunSettings
  layout: lx.Layout
  mesh: Mesh
  env: Envs
  network: networks.ActorCritic
  plan: ExecutionPlan
  total_updates: int
  anneal_updates: int  # updates over which optimizer.anneal="linear" reaches 0

  @property
  def env_settings(self) -> EnvSettings:
    return self.settings.env

  @property
  def envs_per_update(self) -> int:
    return self.layout.num_learners * self.layout.envs_per_learner


MakeEnvs = Callable[[lx.Layout, RunSettings], Envs]  # -> this process's training envs


def default_envs(layout: lx.Layout, settings: RunSettings) -> Env:
  """`make_env` for a layout: this process's learners' envs, seeded the run's seed plus
  their global env index."""
  return make_env(settings.env, num_envs=layout.learners_per_device * layout.envs_per_learner,
                  seed=settings.seed + layout.first_env, num_shards=layout.local_devices)


def make_setup(config: ConfigDict, spec: AlgorithmSpec, make_envs: MakeEnvs | None = None,
               devices: Sequence[jax.Device] | None = None) -> Setup:
  """The setup of `config` for its algorithm's `spec` (its env steps per update, and what
  the plan's rules ask of it); the config is read here, once (`RunSettings`). `make_envs`:
  builds the envs for the layout (e.g. HTS actor groups); default `default_envs`.
  `devices`: the devices to build for (default `jax.devices()`; `galax.aot.compile` passes
  a TPU or GPU topology's compile-only devices)."""
  layout = lx.make_layout(config.num_learners, config.envs_per_learner, config.num_devices,
                          devices)
  mesh = lx.make_mesh(layout, devices)
  settings = RunSettings.from_config(config)
  env = (make_envs or default_envs)(layout, settings)
  plan = plan_for(config, spec, mesh.devices.flat, env.spec.obs_layout,
                  layout.learners_per_device)
  network = settings.network.build(env.spec, plan.conv_impl)
  env_steps_per_update = (layout.num_learners * layout.envs_per_learner
                          * spec.steps_per_env(config))
  # Whole calls of `updates_per_call` updates, so lr annealing ends exactly with the run.
  per_call = settings.updates_per_call
  calls = max(1, -(-int(config.total_env_steps) // (env_steps_per_update * per_call)))
  anneal_updates = settings.optimizer.anneal_updates(calls * per_call, env_steps_per_update)
  return Setup(settings, layout, mesh, env, network, plan,
               total_updates=calls * per_call, anneal_updates=anneal_updates)


class UpdateParts(NamedTuple):
  """A `Setup`, its learners' combiner, their optimizer and its learning-rate schedule."""

  setup: Setup
  combiner: Combiner
  optimizer: LearnerOptimizer
  schedule: optax.Schedule


def params_shapes(setup: Setup) -> PyTree:
  """Shapes and dtypes of one learner's parameters (no computation)."""
  return jax.eval_shape(lambda: networks.init_params(setup.network, setup.env.spec,
                                                     jax.random.PRNGKey(0)))


def make_learners(config: ConfigDict, spec: AlgorithmSpec,
                  devices: Sequence[jax.Device] | None = None, steps_per_update: int = 1,
                  make_envs: MakeEnvs | None = None) -> UpdateParts:
  """`make_setup`, then the combiner (`config.combine`) and the learners' optimizer, whose
  schedule counts `steps_per_update` optimizer steps per update (PPO's minibatches)."""
  setup = make_setup(config, spec, make_envs, devices)
  g = config.gossip
  combiner = make_combiner(config.combine, setup.layout.num_learners, g.topology, g.peers,
                           g.delay, g.metrics)
  optimizer, schedule = make_learner_optimizer(
      setup.settings.optimizer, setup.layout, lambda: params_shapes(setup),
      combiner, setup.anneal_updates, steps_per_update=steps_per_update)
  return UpdateParts(setup, combiner, optimizer, schedule)
