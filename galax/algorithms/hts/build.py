"""HTS-A2C and HTS-PPO as galax algorithms, one builder each over the shared segment: the
`hts` config section (`HTSSection`) and its checks, a segment's shape (`SegmentShape`), the
learner a segment hosts, `make_hts_a2c`, `make_hts_ppo` and `SPECS`.

The segment itself (alpha env steps overlapping the learner's units; the one-step-delayed
gradients of Eq. 6) is galax/algorithms/hts/segment.py.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple, Sequence

import jax
import numpy as np

import galax.framework.spec as spec  # the module, not the package (whose registry imports this)
from galax.algorithms.hts.learners import (
  A2CStepLearner,
  CurrentA2CStepLearner,
  PPOSegmentLearner,
  SegmentLearner,
  StalePPOSegmentLearner,
)
from galax.algorithms.hts.segment import HTSExtra, Segment, empty_storage
from galax.algorithms.ppo import PPOLearner, PPOSection, learner_keys, ppo_section, ppo_settings
from galax.core.optimizers import LearnerOptimizer
from galax.envs.actor_groups import ActorGroups
from galax.framework.algorithm import Algorithm, assemble
from galax.framework.settings import RunSettings
from galax.framework.spec import RunConfig, check_choice, check_positive
from galax.framework.update import Setup, make_learners
from galax.parallel.combine import Combiner


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


def a2c_shape(alpha: int) -> SegmentShape:
  """HTS-A2C: one unit (a time step's gradient) per env step, one optimizer step."""
  return SegmentShape(alpha, alpha, 1)


def ppo_shape(alpha: int, epochs: int, minibatches: int) -> SegmentShape:
  """HTS-PPO: epochs x minibatches units, each an optimizer step."""
  return SegmentShape(alpha, epochs * minibatches, epochs * minibatches)


# (setup, alpha, combiner, optimizer) -> the learner a segment hosts
MakeLearner = Callable[[Setup, int, Combiner, LearnerOptimizer], SegmentLearner]


@dataclasses.dataclass(frozen=True, kw_only=True)
class HTSSection:
  """The `hts` section (HTS-A2C, HTS-PPO): rollout and learning run concurrently; the
  gradient lags exactly one segment behind the acting parameters."""

  alpha: int = 0  # sync interval: env steps per segment (multiple of t_max); 0 = t_max
  delayed: bool = True  # False: learn on the segment just collected (plain A2C / PPO)
  # Where the learner's work on D_{k-1} starts (galax/algorithms/hts/learners.py).
  # "stale": Eq. 6 read literally, at theta_{k-1} (HTS-PPO: the epochs' change is added
  # to theta_k); "current": at theta_k, as the authors' code's learner does. "auto":
  # HTS-A2C "stale" (Eq. 6), HTS-PPO "current" (the authors' code).
  gradient_point: str = "auto"
  microbatches: int = 0  # pieces the learner's work is split into, each overlapping one
  #                        env step; must divide alpha and the learner's units; 0 = auto
  num_actors: int = 1  # actor groups: each has its own envpool pool and forward pass,
  #                      sent to its envs as soon as it is ready (divides envs_per_learner)


@dataclasses.dataclass(frozen=True)
class HTSSettings:
  """HTS's own settings (`hts_settings`): the `hts` section as a segment runs it, and
  HTS-PPO's `ppo` section."""

  shape: SegmentShape  # alpha (hts.alpha; 0 = t_max) and the variant's units
  delayed: bool
  gradient_point: str  # "auto" resolved
  num_actors: int
  ppo: PPOSection | None  # HTS-PPO's; None for HTS-A2C


def hts_settings(config: RunConfig, ppo: bool = False) -> HTSSettings:
  """The run's HTS settings for HTS-PPO (`ppo`) or HTS-A2C; one ValueError line for a value
  it cannot run: alpha whole rollouts, actor groups that divide the envs, micro-batches
  that divide both alpha and the learner's units."""
  h = config.hts
  section = ppo_section(config) if ppo else None
  check_positive("hts.num_actors", h.num_actors)
  if h.alpha < 0 or h.microbatches < 0:
    raise ValueError(
      f"config.hts.alpha ({h.alpha}) and config.hts.microbatches "
      f"({h.microbatches}) must be >= 0 (0 = automatic)."
    )
  if h.alpha and h.alpha % config.t_max:
    raise ValueError(
      f"config.hts.alpha={h.alpha} must be a multiple of "
      f"config.t_max={config.t_max} (a segment holds whole rollouts)."
    )
  if config.envs_per_learner % h.num_actors:
    raise ValueError(
      f"config.hts.num_actors={h.num_actors} must divide "
      f"config.envs_per_learner={config.envs_per_learner}."
    )
  check_choice("hts.gradient_point", h.gradient_point, ("auto", "current", "stale"))
  point = {"auto": "current" if ppo else "stale"}.get(h.gradient_point, h.gradient_point)
  alpha = h.alpha or config.t_max
  shape = ppo_shape(alpha, section.epochs, section.minibatches) if ppo else a2c_shape(alpha)
  m = h.microbatches
  if m and (shape.alpha % m or shape.units % m):
    raise ValueError(
      f"config.hts.microbatches={m} must divide both alpha={shape.alpha} and "
      f"the learner's {shape.units} units per segment."
    )
  return HTSSettings(shape, h.delayed, point, h.num_actors, section)


def _make_hts(
  settings: RunSettings[HTSSettings],
  devices: Sequence[jax.Device] | None,
  own_spec: spec.AlgorithmSpec,
  make_learner: MakeLearner,
) -> Algorithm:
  """An HTS algorithm: segments of the run's shape (`HTSSettings.shape`) hosting the
  learner `make_learner` builds."""
  hts = settings.own
  alpha, optimizer_steps = hts.shape.alpha, hts.shape.optimizer_steps

  def actor_groups(layout, settings):
    return ActorGroups(
      settings.env,
      settings.seed,
      hts.num_actors,
      layout.learners_per_device,
      layout.envs_per_learner,
      layout.local_devices,
      layout.first_env,
    )

  setup, combiner, optimizer, schedule = make_learners(
    settings, own_spec, devices, optimizer_steps, make_envs=actor_groups
  )
  layout, groups = setup.layout, setup.env
  learner = make_learner(setup, alpha, combiner, optimizer)
  local_learners = layout.local_learners

  def init_extra(params):
    versions = lambda v: np.full((local_learners,), v, np.int32)
    return HTSExtra(
      storage=empty_storage(groups.spec, layout.local_envs, alpha),
      behaviour_params=learner.keep_behaviour(params),
      params_version=versions(0),
      behaviour_version=versions(-1),
      storage_version=versions(-1),
      key=learner_keys(settings.seed, layout.first_learner, local_learners),
    )

  segment = Segment(setup, learner, alpha, hts.delayed)
  return assemble(setup, segment, optimizer, schedule, alpha, combiner, init_extra)


def make_hts_a2c(
  settings: RunSettings[HTSSettings], devices: Sequence[jax.Device] | None = None
) -> Algorithm:
  """HTS-A2C (`algorithm = "hts_a2c"`): per-time-step gradient units at theta_{k-1}
  ("stale", Eq. 6) or theta_k ("current")."""
  hts = settings.own
  current = hts.gradient_point == "current" and hts.delayed  # no lag: the same
  make = CurrentA2CStepLearner if current else A2CStepLearner

  def learner(setup, alpha, combiner, optimizer):
    settings = setup.settings
    return make(
      setup.network.apply,
      settings.returns,
      settings.loss,
      settings.t_max,
      optimizer,
      combiner,
      setup.layout.learners_per_device,
      alpha,
    )

  return _make_hts(settings, devices, SPECS[0], learner)


def make_hts_ppo(
  settings: RunSettings[HTSSettings], devices: Sequence[jax.Device] | None = None
) -> Algorithm:
  """HTS-PPO (`algorithm = "hts_ppo"`): PPO's epochs x minibatches units, starting at
  theta_k ("current") or theta_{k-1} ("stale")."""
  hts = settings.own
  stale = hts.gradient_point == "stale" and hts.delayed  # no lag: the same

  def learner(setup, alpha, combiner, optimizer):
    layout = setup.layout
    ppo = PPOLearner(
      setup.network.apply,
      ppo_settings(settings, hts.ppo),
      optimizer,
      combiner,
      layout.learners_per_device,
      alpha,
      layout.envs_per_learner,
      setup.plan.grad_chunks,
    )
    return StalePPOSegmentLearner(ppo) if stale else PPOSegmentLearner(ppo)

  return _make_hts(settings, devices, SPECS[1], learner)


_SECTIONS = dict(
  sections={"hts": HTSSection, "ppo": PPOSection},
  features=frozenset({spec.MICROBATCHES}),
)
SPECS = (
  spec.AlgorithmSpec(
    "hts_a2c",
    make_hts_a2c,
    own=hts_settings,
    steps_per_env=lambda s: s.own.shape.alpha,
    segment_units=lambda s: s.own.shape.units_and_steps,
    chunked_batch=lambda s: (1, 1, "time step of an HTS-A2C unit (it does not chunk)"),
    **_SECTIONS,
  ),
  # No `gradient_steps`: on CPU, patch convolutions for HTS-PPO's minibatch updates between
  # env steps compiled 2.2x longer for 1.05x the steps/s (docs/benchmarks.md), so 'auto'
  # keeps XLA's.
  spec.AlgorithmSpec(
    "hts_ppo",
    make_hts_ppo,
    own=lambda config: hts_settings(config, ppo=True),
    steps_per_env=lambda s: s.own.shape.alpha,
    segment_units=lambda s: s.own.shape.units_and_steps,
    chunked_batch=lambda s: spec.ppo_minibatch(
      s.own.shape.alpha, s.envs_per_learner, s.own.ppo.minibatches
    ),
    **_SECTIONS,
  ),
)
