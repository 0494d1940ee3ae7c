"""What every algorithm builds first: a `Setup` (layout, mesh, envs, network, plan).

`make_setup` lays the learners out over the devices, builds their envs and the network,
and makes the run's `ExecutionPlan` (galax/plan.py) for those devices and envs;
`make_learners` adds the learners' combiner and optimizer.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import jax
import optax
from ml_collections import ConfigDict

from galax import networks
from galax.algorithm_spec import AlgorithmSpec
from galax.envs import EnvSettings, make_env
from galax.learner_state import Envs, Setup
from galax.optimizers import OptimizerSettings
from galax.parallel import learners as lx
from galax.parallel.combine import Combiner, make_combiner
from galax.parallel.learner_optimizer import LearnerOptimizer, make_learner_optimizer
from galax.plan import plan_for

MakeEnvs = Callable[[lx.Layout], Envs]  # a layout -> this process's training envs


def default_envs(env: EnvSettings, seed: int) -> MakeEnvs:
  """`make_env` for a layout: this process's learners' envs, seeded `seed` (the run's) plus
  their global env index."""
  return lambda layout: make_env(
      env, num_envs=layout.learners_per_device * layout.envs_per_learner,
      seed=seed + layout.first_env, num_shards=layout.local_devices)


def make_setup(config: ConfigDict, spec: AlgorithmSpec, make_envs: MakeEnvs | None = None,
               devices: Sequence[jax.Device] | None = None) -> Setup:
  """The setup of `config` for its algorithm's `spec` (its env steps per update, and what
  the plan's rules ask of it). `make_envs`: builds the envs for the layout (e.g. HTS actor
  groups); default `default_envs`. `devices`: the devices to build for (default
  `jax.devices()`; `galax.aot` passes a TPU or GPU topology's compile-only devices)."""
  layout = lx.make_layout(config.num_learners, config.envs_per_learner, config.num_devices,
                          devices)
  mesh = lx.make_mesh(layout, devices)
  env_settings = EnvSettings.from_config(config)
  env = (make_envs or default_envs(env_settings, config.seed))(layout)
  plan = plan_for(config, spec, mesh.devices.flat, env.spec.obs_layout,
                  layout.learners_per_device)
  network = networks.NetworkSettings.from_config(config.network).build(env.spec,
                                                                   plan.conv_impl)
  env_steps_per_update = (layout.num_learners * layout.envs_per_learner
                          * spec.steps_per_env(config))
  # Whole calls of `updates_per_call` updates, so lr annealing ends exactly with the run.
  per_call = int(config.updates_per_call)
  calls = max(1, -(-int(config.total_env_steps) // (env_steps_per_update * per_call)))
  anneal_updates = OptimizerSettings.from_config(config).anneal_updates(
      calls * per_call, env_steps_per_update)
  return Setup(config, layout, mesh, env, env_settings, network, plan,
               total_updates=calls * per_call, anneal_updates=anneal_updates)


class Learners(NamedTuple):
  """A `Setup`, its learners' combiner, their optimizer and its learning-rate schedule."""

  setup: Setup
  combiner: Combiner
  optimizer: LearnerOptimizer
  schedule: optax.Schedule


def make_learners(config: ConfigDict, spec: AlgorithmSpec,
                  devices: Sequence[jax.Device] | None = None, steps_per_update: int = 1,
                  make_envs: MakeEnvs | None = None) -> Learners:
  """`make_setup`, then the combiner (`config.combine`) and the learners' optimizer, whose
  schedule counts `steps_per_update` optimizer steps per update (PPO's minibatches)."""
  setup = make_setup(config, spec, make_envs, devices)
  g = config.gossip
  combiner = make_combiner(config.combine, setup.layout.num_learners, g.topology, g.peers,
                           g.delay, g.metrics)
  optimizer, schedule = make_learner_optimizer(OptimizerSettings.from_config(config), setup,
                                               combiner, setup.anneal_updates,
                                               steps_per_update=steps_per_update)
  return Learners(setup, combiner, optimizer, schedule)
