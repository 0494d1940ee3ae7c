"""`RunSettings`: what the compiled program reads of a run's config.

The run's typed config (galax/config/schema.py: one frozen dataclass per section, each
beside the code that reads it) becomes these settings in one place,
`galax.config.run_settings`; `galax.make_algorithm` hands them to the algorithm's builder,
which keeps them in its `Setup` (`Setup.settings`). The sections pass through as they are
(env, network, optimizer, loss); the algorithm's own settings, made by its spec from its own
sections (`AlgorithmSpec.own`), are `own`, typed by the algorithm (`RunSettings[OwnT]`);
the execution plan's explicit choices are `PlanChoices`. What the host loop reads (the
budget, cadences, periodic evaluation) is `galax.training.settings.LoopSettings`, and what
an evaluation reads is `galax.evaluate.evaluator.EvalSettings`.
"""

from __future__ import annotations

import dataclasses
from typing import Generic, TypeVar

from galax.core.losses import LossSettings
from galax.core.networks import NetworkSettings
from galax.core.optimizers import OptimizerSettings
from galax.core.returns import ReturnSettings
from galax.envs.backend import EnvSettings
from galax.parallel.combine import CombineSettings

OwnT = TypeVar("OwnT")


@dataclasses.dataclass(frozen=True, kw_only=True)
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunSettings(Generic[OwnT]):
  """The shared fields of a run's config (`galax.config.run_settings`) and the algorithm's
  own settings (`own`, of the type its spec's `own` returns)."""

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
  own: OwnT  # the algorithm's own settings (`AlgorithmSpec.own`); None: not asked for
