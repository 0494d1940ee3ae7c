"""`LoopSettings`: the host loop's fields of a run's config, read once.

`galax.training.loop.train` makes them (`loop_settings`) beside the algorithm it builds, and
the loop, its hooks and the run header take these typed values: the config itself stops at
`train`, which writes it to config.json. What the compiled program reads is
`RunSettings` (galax/framework/settings.py), carried by the algorithm's `Setup`.
"""

from __future__ import annotations

import dataclasses

from galax.config import Config
from galax.config.settings import pick
from galax.evaluate.evaluator import EvalSettings, eval_settings
from galax.framework.settings import RunSettings


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrackSettings:
  """Weights & Biases tracking (galax/training/tracking.py)."""

  on: bool
  project: str
  entity: str  # "": wandb's default entity
  mode: str  # online | offline | disabled


@dataclasses.dataclass(frozen=True, kw_only=True)
class LoopSettings:
  """How long a run goes, and what it writes while it goes (galax/config/schema.py)."""

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


def loop_settings(config: Config, run: RunSettings) -> LoopSettings:
  """The loop's fields of the run's typed `config`; the evaluation's env and network those
  of the run's settings `run`."""
  return pick(
    LoopSettings,
    config,
    eval=eval_settings(config, run),
    track=TrackSettings(
      on=config.track,
      project=config.track_project,
      entity=config.track_entity,
      mode=config.track_mode,
    ),
  )
