"""What a training run returns (`TrainResult`, also written as result.json)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from galax.core.types import JsonDict
from galax.training import metrics as metrics_lib

if TYPE_CHECKING:
  from galax.framework.update import LearnerState
  from galax.training.clock import RunClock


@dataclasses.dataclass
class TrainResult:
  env_steps: int
  updates: int
  wall_time_s: float  # incl. earlier runs if resumed
  compile_time_s: float
  steps_per_second: float  # steady state (after the first, compiling call); NaN if none
  mean_return: float  # over the last `stats_window` completed episodes
  episodes: int
  state: LearnerState | None = dataclasses.field(repr=False, default=None)
  train_time_s: float = 0.0  # wall time without evaluations (incl. earlier runs if resumed)
  eval_time_s: float = 0.0  # wall time spent evaluating (this run)
  evaluations: list = dataclasses.field(default_factory=list)  # periodic.EvalRecord
  learner_returns: list = dataclasses.field(default_factory=list)  # with config.learner_stats
  energy: dict | None = None  # EnergyReport.summary() on NVIDIA GPUs, else None
  requested_env_steps: int = 0  # config.total_env_steps
  planned_env_steps: int = 0  # ... rounded up to whole calls of updates_per_call updates
  stopped: str = ""  # why it ended: a `progress.Stop` value, or a divergence's message
  diverged: bool = False
  # The galax commit this sitting ran at, read as it began (Outputs.git): {} where the
  # process wrote no files (no workdir, not process 0) or no sitting ran.
  git: dict = dataclasses.field(default_factory=dict)

  @classmethod
  def nothing_done(
    cls,
    env_steps: int,
    updates: int,
    clock: RunClock,
    tracker: metrics_lib.EpisodeTracker,
    state: LearnerState,
    stopped: str,
    planned: dict[str, int],
  ) -> TrainResult:
    """The result of a resumed run that had nothing left to do: the checkpoint's."""
    return cls(
      env_steps=env_steps,
      updates=updates,
      wall_time_s=clock.elapsed_before,
      compile_time_s=0.0,
      steps_per_second=float("nan"),
      mean_return=tracker.mean_return,
      episodes=tracker.completed,
      state=state,
      train_time_s=clock.train_before,
      stopped=stopped,
      **planned,
    )

  def summary(self) -> JsonDict:
    d = dataclasses.asdict(self)
    d.pop("state")
    return metrics_lib.json_safe(d)
