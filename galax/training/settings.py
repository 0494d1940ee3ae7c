"""`LoopSettings`: the host loop's fields of a run's config, read once.

`galax.training.loop.train` reads them (`from_config`) beside the algorithm it builds, and
the loop, its hooks and the run header take these typed values: the config itself stops at
`train`, which writes it to config.json. What the compiled program reads is
`RunSettings` (galax/framework/settings.py), carried by the algorithm's `Setup`.
"""

from __future__ import annotations

import dataclasses

from ml_collections import ConfigDict

from galax.evaluate.evaluator import EvalSettings
from galax.framework.settings import RunSettings


@dataclasses.dataclass(frozen=True)
class TrackSettings:
  """Weights & Biases tracking (galax/training/tracking.py)."""

  on: bool
  project: str
  entity: str  # "": wandb's default entity
  mode: str  # online | offline | disabled


@dataclasses.dataclass(frozen=True)
class LoopSettings:
  """How long a run goes, and what it writes while it goes (see galax/config/__init__.py)."""

  total_env_steps: int  # the requested budget (planned: whole calls of updates)
  target_return: float  # stop at this running mean; 0: run all steps
  time_limit_s: float  # stop after this much training time of a sitting; 0: none
  log_every_steps: int
  checkpoint_every_steps: int  # 0: only at the end
  keep_checkpoints: int
  stats_window: int  # completed episodes in the running mean return
  learner_stats: bool  # each learner's running return too
  eval: EvalSettings  # the periodic evaluation's (every_steps 0: none)
  capture_video: bool
  energy: bool
  tensorboard: bool
  track: TrackSettings

  @classmethod
  def from_config(cls, config: ConfigDict, run: RunSettings) -> LoopSettings:
    """The loop's fields of `config`; the evaluation's env and network those of the run's
    settings `run`, read once."""
    return cls(
      total_env_steps=int(config.total_env_steps),
      target_return=float(config.target_return),
      time_limit_s=float(config.time_limit_s),
      log_every_steps=int(config.log_every_steps),
      checkpoint_every_steps=int(config.checkpoint_every_steps),
      keep_checkpoints=int(config.keep_checkpoints),
      stats_window=int(config.stats_window),
      learner_stats=bool(config.learner_stats),
      eval=EvalSettings.from_config(config, run.env, run.network),
      capture_video=bool(config.capture_video),
      energy=bool(config.energy),
      tensorboard=bool(config.tensorboard),
      track=TrackSettings(
        bool(config.track),
        str(config.track_project),
        str(config.track_entity),
        str(config.track_mode),
      ),
    )
