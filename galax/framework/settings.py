"""`RunSettings`: what the compiled program reads of a run's config, read once.

`galax.make_algorithm` reads them once per run and hands them to the algorithm's builder,
which keeps them in its `Setup` (`Setup.settings`). Consumers outside a training run
(experiments, tests) read a config through the same `RunSettings.from_config`. The types
live with the code that takes them (core/, envs/, parallel/); core/ never sees a
ConfigDict, and the env and network sections' readers sit beside their types, called from
here. An algorithm's own section (`ppo`, `impala`, `a3c`, `hts`, A2C's `stragglers`) is read
by the reader beside its builder (`AlgorithmSpec.read`) into `RunSettings.own`; the
execution plan's explicit choices are `PlanChoices`. What the host loop reads (the budget,
cadences, periodic evaluation) is `galax.training.settings.LoopSettings`, and what an
evaluation reads is `galax.evaluate.evaluator.EvalSettings`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ml_collections import ConfigDict

from galax.core.losses import LossSettings
from galax.core.networks import NetworkSettings
from galax.core.optimizers import OptimizerSettings
from galax.core.returns import ReturnSettings
from galax.envs.backend import EnvSettings
from galax.framework.spec import AlgorithmSpec
from galax.parallel.combine import CombineSettings


@dataclasses.dataclass(frozen=True)
class PlanChoices:
  """The execution plan's explicit choices in a run's config ('auto' or a value; the
  rules that resolve them: galax/framework/plan.py)."""

  platform: str  # 'auto' or the platform the run must be built for
  learner_map: str
  conv_impl: str  # `network.conv_impl`
  update_loop: str
  grad_chunks: int  # 0: auto
  microbatches: int  # `hts.microbatches`; 0: auto
  flattens: bool  # an 'mlp' network: no convolutions

  @classmethod
  def from_config(cls, config: ConfigDict) -> PlanChoices:
    return cls(
      platform=str(config.platform),
      learner_map=str(config.learner_map),
      conv_impl=str(config.network.conv_impl),
      update_loop=str(config.update_loop),
      grad_chunks=int(config.grad_chunks),
      microbatches=int(config.hts.microbatches),
      flattens=config.network.name == "mlp",
    )


@dataclasses.dataclass(frozen=True)
class RunSettings:
  """The shared fields of a run's config, read once (`from_config`)."""

  algorithm: str  # a name in `galax.algorithms.specs()`
  seed: int
  num_learners: int
  envs_per_learner: int
  num_devices: int  # 0: all of them
  total_env_steps: int  # the budget, in agent steps (whole calls: `make_setup`)
  t_max: int  # env steps per env and rollout
  updates_per_call: int  # updates per jitted call
  initial_params: str  # shared | per_learner
  grad_similarity: bool  # GALA Fig. 2b's gradient cosines (A2C)
  combine: CombineSettings  # how the learners combine
  env: EnvSettings
  network: NetworkSettings
  optimizer: OptimizerSettings
  returns: ReturnSettings
  loss: LossSettings
  plan: PlanChoices
  own: Any = None  # the algorithm's own settings (`AlgorithmSpec.read`)

  @classmethod
  def from_config(cls, config: ConfigDict, spec: AlgorithmSpec | None = None) -> RunSettings:
    """The run's settings; with its algorithm's `spec`, its own section too (`own`; one
    ValueError line for a value the algorithm cannot run). Without, `own` is None: for
    readers of the shared fields only."""
    env = EnvSettings.from_config(config)
    network = NetworkSettings.from_section(config.network)
    o = config.optimizer
    anneal_steps = o.get("anneal_steps")  # absent in older runs' config.json
    optimizer = OptimizerSettings(
      str(o.name),
      float(o.learning_rate),
      str(o.lr_scaling),
      str(o.anneal),
      float(o.eps),
      float(o.rmsprop_decay),
      str(o.rmsprop_convention),
      float(o.rmsprop_initial_scale),
      float(o.adam_b1),
      float(o.adam_b2),
      float(o.max_grad_norm),
      float(o.clip_average_norm),
      bool(o.sharded_state),
      None if anneal_steps is None else int(anneal_steps),
    )
    loss, g = config.loss, config.gossip
    return cls(
      algorithm=str(config.algorithm),
      seed=int(config.seed),
      num_learners=int(config.num_learners),
      envs_per_learner=int(config.envs_per_learner),
      num_devices=int(config.num_devices),
      total_env_steps=int(config.total_env_steps),
      t_max=int(config.t_max),
      updates_per_call=int(config.updates_per_call),
      initial_params=str(config.initial_params),
      grad_similarity=bool(config.grad_similarity),
      combine=CombineSettings(
        str(config.combine), str(g.topology), int(g.peers), int(g.delay), bool(g.metrics)
      ),
      env=env,
      network=network,
      optimizer=optimizer,
      returns=ReturnSettings(float(config.gamma), str(config.returns), float(config.gae_lambda)),
      loss=LossSettings(float(loss.entropy_coef), float(loss.value_coef), bool(loss.sum_over_time)),
      plan=PlanChoices.from_config(config),
      own=None if spec is None else spec.read(config),
    )
