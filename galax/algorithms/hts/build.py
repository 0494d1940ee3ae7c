"""HTS-A2C and HTS-PPO as galax algorithms, one builder each over the shared segment: the
`hts` config section and its checks, a segment's shape (`SegmentShape`), the learner a
segment hosts, `make_hts_a2c`, `make_hts_ppo` and `SPECS`.

The segment itself (alpha env steps overlapping the learner's units; the one-step-delayed
gradients of Eq. 6) is galax/algorithms/hts/segment.py.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import jax
import numpy as np
from ml_collections import ConfigDict

import galax.framework.spec as spec  # the module, not the package (whose registry imports this)
from galax.algorithms.hts.learners import (
  A2CStepLearner,
  PPOSegmentLearner,
  SegmentLearner,
  StalePPOSegmentLearner,
)
from galax.algorithms.hts.segment import HTSExtra, Segment, empty_storage
from galax.algorithms.ppo import (
  PPOLearner,
  learner_keys,
  ppo_config,
  ppo_settings,
  validate_ppo,
)
from galax.core.optimizers import LearnerOptimizer
from galax.envs.actor_groups import ActorGroups
from galax.framework.algorithm import Algorithm, assemble
from galax.framework.spec import check_positive
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


# A config's segment: alpha env steps per env (hts.alpha; 0 = t_max) and the variant's units.
_alpha = lambda c: int(c.hts.alpha or c.t_max)
_a2c_shape = lambda c: a2c_shape(_alpha(c))
_ppo_shape = lambda c: ppo_shape(_alpha(c), int(c.ppo.epochs), int(c.ppo.minibatches))

# (setup, alpha, combiner, optimizer) -> the learner a segment hosts
MakeLearner = Callable[[Setup, int, Combiner, LearnerOptimizer], SegmentLearner]


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


def _validate(config: ConfigDict, shape: SegmentShape, ppo: bool) -> None:
  """The `hts` section (and `ppo`'s for HTS-PPO): alpha whole rollouts, actor groups that
  divide the envs, micro-batches that divide both alpha and the learner's units."""
  if ppo:
    validate_ppo(config)
  check_positive(config, "hts.num_actors")
  if config.hts.alpha < 0 or config.hts.microbatches < 0:
    raise ValueError(
      f"config.hts.alpha ({config.hts.alpha}) and config.hts.microbatches "
      f"({config.hts.microbatches}) must be >= 0 (0 = automatic)."
    )
  if config.hts.alpha and config.hts.alpha % config.t_max:
    raise ValueError(
      f"config.hts.alpha={config.hts.alpha} must be a multiple of "
      f"config.t_max={config.t_max} (a segment holds whole rollouts)."
    )
  if config.envs_per_learner % config.hts.num_actors:
    raise ValueError(
      f"config.hts.num_actors={config.hts.num_actors} must divide "
      f"config.envs_per_learner={config.envs_per_learner}."
    )
  if config.hts.gradient_point not in ("current", "stale"):
    raise ValueError(
      f"config.hts.gradient_point={config.hts.gradient_point!r} is not one of 'current', 'stale'."
    )
  if not ppo and config.hts.gradient_point == "stale":
    raise ValueError(
      "config.hts.gradient_point applies to hts_ppo: HTS-A2C takes its "
      "gradient at theta_{k-1} always (Eq. 6)."
    )
  m = int(config.hts.microbatches)
  if m and (shape.alpha % m or shape.units % m):
    raise ValueError(
      f"config.hts.microbatches={m} must divide both alpha={shape.alpha} and "
      f"the learner's {shape.units} units per segment."
    )


def _make_hts(
  config: ConfigDict,
  devices: Sequence[jax.Device] | None,
  own_spec: spec.AlgorithmSpec,
  shape: SegmentShape,
  make_learner: MakeLearner,
) -> Algorithm:
  """An HTS algorithm: segments of `shape` hosting the learner `make_learner` builds."""
  alpha, optimizer_steps = shape.alpha, shape.optimizer_steps

  def actor_groups(layout, settings):
    return ActorGroups(
      settings.env,
      settings.seed,
      int(config.hts.num_actors),
      layout.learners_per_device,
      layout.envs_per_learner,
      layout.local_devices,
      layout.first_env,
    )

  setup, combiner, optimizer, schedule = make_learners(
    config, own_spec, devices, optimizer_steps, make_envs=actor_groups
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
      key=learner_keys(config.seed, layout.first_learner, local_learners),
    )

  segment = Segment(setup, learner, alpha, bool(config.hts.delayed))
  return assemble(setup, segment, optimizer, schedule, alpha, combiner, init_extra)


def make_hts_a2c(config: ConfigDict, devices: Sequence[jax.Device] | None = None) -> Algorithm:
  """HTS-A2C (`algorithm = "hts_a2c"`): per-time-step gradient units at theta_{k-1}."""

  def learner(setup, alpha, combiner, optimizer):
    settings = setup.settings
    return A2CStepLearner(
      setup.network.apply,
      settings.returns,
      settings.loss,
      settings.t_max,
      optimizer,
      combiner,
      setup.layout.learners_per_device,
      alpha,
    )

  return _make_hts(config, devices, SPECS[0], _a2c_shape(config), learner)


def make_hts_ppo(config: ConfigDict, devices: Sequence[jax.Device] | None = None) -> Algorithm:
  """HTS-PPO (`algorithm = "hts_ppo"`): PPO's epochs x minibatches units, starting at
  theta_k ("current") or theta_{k-1} ("stale")."""
  stale = config.hts.gradient_point == "stale" and config.hts.delayed  # no lag: the same

  def learner(setup, alpha, combiner, optimizer):
    layout = setup.layout
    ppo = PPOLearner(
      setup.network.apply,
      ppo_settings(setup.settings, config.ppo),
      optimizer,
      combiner,
      layout.learners_per_device,
      alpha,
      layout.envs_per_learner,
      setup.plan.grad_chunks,
    )
    return StalePPOSegmentLearner(ppo) if stale else PPOSegmentLearner(ppo)

  return _make_hts(config, devices, SPECS[1], _ppo_shape(config), learner)


_SECTIONS = dict(
  config_sections=lambda: dict(hts=hts_config(), ppo=ppo_config()),
  features=frozenset({spec.MICROBATCHES}),
)
SPECS = (
  spec.AlgorithmSpec(
    "hts_a2c",
    make_hts_a2c,
    steps_per_env=lambda c: _a2c_shape(c).alpha,
    validate=lambda c: _validate(c, _a2c_shape(c), ppo=False),
    segment_units=lambda c: _a2c_shape(c).units_and_steps,
    chunked_batch=lambda c: (1, 1, "time step of an HTS-A2C unit (it does not chunk)"),
    **_SECTIONS,
  ),
  # No `gradient_steps`: on CPU, patch convolutions for HTS-PPO's minibatch updates between
  # env steps compiled 2.2x longer for 1.05x the steps/s (docs/benchmarks.md), so 'auto'
  # keeps XLA's.
  spec.AlgorithmSpec(
    "hts_ppo",
    make_hts_ppo,
    steps_per_env=lambda c: _ppo_shape(c).alpha,
    validate=lambda c: _validate(c, _ppo_shape(c), ppo=True),
    segment_units=lambda c: _ppo_shape(c).units_and_steps,
    chunked_batch=lambda c: spec.ppo_minibatch(
      _alpha(c), int(c.envs_per_learner), int(c.ppo.minibatches)
    ),
    **_SECTIONS,
  ),
)
