"""HTS-A2C and HTS-PPO as galax algorithms: the `hts` config section and its checks, a
segment's shape (`SegmentShape`), the learner a segment hosts, `make_hts` and `SPECS`.

The segment itself (alpha env steps overlapping the learner's units; the one-step-delayed
gradients of Eq. 6) is galax/algorithms/hts/segment.py.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import jax
import numpy as np
from ml_collections import ConfigDict

import galax.algorithms.spec as spec  # the module, not the package (whose registry imports this)
from galax.algorithms.algorithm import Algorithm, assemble
from galax.algorithms.hts.learners import (
  A2CStepLearner,
  PPOSegmentLearner,
  SegmentLearner,
  StalePPOSegmentLearner,
)
from galax.algorithms.hts.segment import HTSExtra, Segment, empty_storage
from galax.algorithms.ppo import (
  PPOLearner,
  PPOSettings,
  learner_keys,
  ppo_config,
  validate_ppo,
)
from galax.algorithms.setup import Setup, make_learners
from galax.config.checks import check_positive
from galax.core import losses
from galax.core.returns import ReturnSettings
from galax.envs import EnvSettings
from galax.envs.actor_groups import ActorGroups
from galax.parallel.combine import Combiner
from galax.parallel.learner_optimizer import LearnerOptimizer


class SegmentShape(NamedTuple):
  """A segment's sizes, read once: `alpha` env steps per env (`hts.alpha`, 0 = t_max), the
  learner's `units` and `optimizer_steps` (HTS-A2C: alpha time steps, one step; HTS-PPO:
  epochs x minibatches of each)."""

  alpha: int
  units: int
  optimizer_steps: int

  @property
  def units_and_steps(self) -> tuple[int, int]:
    """What `hts.microbatches` pieces divide (`AlgorithmSpec.segment_units`)."""
    return self.units, self.alpha

  @classmethod
  def from_config(cls, config: ConfigDict) -> SegmentShape:
    alpha = int(config.hts.alpha or config.t_max)
    if config.algorithm == "hts_a2c":
      return cls(alpha, alpha, 1)
    units = int(config.ppo.epochs) * int(config.ppo.minibatches)
    return cls(alpha, units, units)


def make_learner(config: ConfigDict, setup: Setup, alpha: int, combiner: Combiner,
                 optimizer: LearnerOptimizer) -> SegmentLearner:
  """HTS-A2C's or HTS-PPO's learner, stepping the learners' `optimizer`."""
  layout = setup.layout
  if config.algorithm == "hts_a2c":
    learner = A2CStepLearner(setup.network.apply, ReturnSettings.from_config(config),
                             losses.LossSettings.from_config(config), int(config.t_max),
                             optimizer, combiner, layout.learners_per_device, alpha)
  else:
    ppo = PPOLearner(setup.network.apply, PPOSettings.from_config(config), optimizer,
                     combiner, layout.learners_per_device, alpha, layout.envs_per_learner,
                     setup.plan.grad_chunks)
    stale = config.hts.gradient_point == "stale" and config.hts.delayed  # no lag: same
    learner = StalePPOSegmentLearner(ppo) if stale else PPOSegmentLearner(ppo)
  return learner


def hts_config() -> ConfigDict:
  """The `hts` section (HTS-A2C, HTS-PPO): rollout and learning run concurrently; the
  gradient lags exactly one segment behind the acting parameters."""
  c = ConfigDict()
  c.alpha = 0  # sync interval: env steps per segment (multiple of t_max); 0 = t_max
  c.delayed = True  # False: learn on the segment just collected (plain A2C / PPO)
  # HTS-PPO: where the epochs on D_{k-1} start. "current": at theta_k (the authors' code);
  # "stale": Eq. 6 read literally, at theta_{k-1}, their change added to theta_k
  # (galax/algorithms/hts/learners.py StalePPOSegmentLearner). HTS-A2C's gradient is
  # always at theta_{k-1}: it rejects "stale" as redundant and "current" is its default.
  c.gradient_point = "current"
  c.microbatches = 0  # pieces the learner's work is split into, each overlapping one
  #                     env step; must divide alpha and the learner's units; 0 = auto
  c.num_actors = 1  # actor groups: each has its own envpool pool and forward pass,
  #                   sent to its envs as soon as it is ready (divides envs_per_learner)
  return c


def _validate(config: ConfigDict) -> None:
  """The `hts` section (and `ppo`'s for HTS-PPO): alpha whole rollouts, actor groups that
  divide the envs, micro-batches that divide both alpha and the learner's units."""
  if config.algorithm == "hts_ppo":
    validate_ppo(config)
  check_positive(config, "hts.num_actors")
  if config.hts.alpha < 0 or config.hts.microbatches < 0:
    raise ValueError(f"config.hts.alpha ({config.hts.alpha}) and config.hts.microbatches "
                     f"({config.hts.microbatches}) must be >= 0 (0 = automatic).")
  if config.hts.alpha and config.hts.alpha % config.t_max:
    raise ValueError(f"config.hts.alpha={config.hts.alpha} must be a multiple of "
                     f"config.t_max={config.t_max} (a segment holds whole rollouts).")
  if config.envs_per_learner % config.hts.num_actors:
    raise ValueError(f"config.hts.num_actors={config.hts.num_actors} must divide "
                     f"config.envs_per_learner={config.envs_per_learner}.")
  if config.hts.gradient_point not in ("current", "stale"):
    raise ValueError(f"config.hts.gradient_point={config.hts.gradient_point!r} is not one of "
                     "'current', 'stale'.")
  stale = config.hts.gradient_point == "stale"
  if config.algorithm == "hts_a2c" and stale:
    raise ValueError("config.hts.gradient_point applies to hts_ppo: HTS-A2C takes its "
                     "gradient at theta_{k-1} always (Eq. 6).")
  m = int(config.hts.microbatches)
  alpha, units, _ = SegmentShape.from_config(config)
  if m and (alpha % m or units % m):
    raise ValueError(f"config.hts.microbatches={m} must divide both alpha={alpha} and the "
                     f"learner's {units} units per segment.")


def make_hts(config: ConfigDict, devices: Sequence[jax.Device] | None = None
             ) -> Algorithm:
  """HTS-A2C (`algorithm = "hts_a2c"`) or HTS-PPO (`"hts_ppo"`) from a config."""
  alpha, _, optimizer_steps = SegmentShape.from_config(config)

  def actor_groups(layout):
    return ActorGroups(EnvSettings.from_config(config), config.seed,
                       int(config.hts.num_actors), layout.learners_per_device,
                       layout.envs_per_learner, layout.local_devices, layout.first_env)

  own_spec = next(s for s in SPECS if s.name == config.algorithm)
  setup, combiner, optimizer, schedule = make_learners(
      config, own_spec, devices, optimizer_steps, make_envs=actor_groups)
  layout, groups = setup.layout, setup.env
  learner = make_learner(config, setup, alpha, combiner, optimizer)
  local_learners = layout.local_learners

  def init_extra(params):
    versions = lambda v: np.full((local_learners,), v, np.int32)
    return HTSExtra(
        storage=empty_storage(groups.spec, layout.local_envs, alpha),
        behaviour_params=learner.keep_behaviour(params),
        params_version=versions(0), behaviour_version=versions(-1),
        storage_version=versions(-1),
        key=learner_keys(config.seed, layout.first_learner, local_learners))

  return assemble(setup, Segment(setup, learner, alpha, bool(config.hts.delayed)), optimizer,
                  schedule, alpha, combiner, init_extra)


_HTS = dict(build=make_hts, steps_per_env=lambda c: SegmentShape.from_config(c).alpha,
            validate=_validate,
            config_sections=lambda: dict(hts=hts_config(), ppo=ppo_config()),
            features=frozenset({spec.MICROBATCHES}),
            segment_units=lambda c: SegmentShape.from_config(c).units_and_steps)
SPECS = (
    spec.AlgorithmSpec("hts_a2c", chunked_batch=lambda c: (
        1, 1, "time step of an HTS-A2C unit (it does not chunk)"), **_HTS),
    spec.AlgorithmSpec("hts_ppo", chunked_batch=lambda c: spec.ppo_minibatch(
        SegmentShape.from_config(c).alpha, int(c.envs_per_learner), int(c.ppo.minibatches)),
        **_HTS),
)
