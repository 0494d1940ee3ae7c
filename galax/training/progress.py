"""Where a run stands: its counters, episode statistics and clocks (`Progress`, kept in every
checkpoint's meta), and why it ends (`Stop`, decided by one `stop_reason`).

Both the loop (after every call) and a resumed run (before it builds anything to train on)
ask `stop_reason`, so "done" means the same at either point.
"""

from __future__ import annotations

import dataclasses
import enum

from galax.core.types import JsonDict
from galax.training.clock import RunClock
from galax.training.metrics import EpisodeTracker


class Stop(enum.Enum):
  """Why a run ended; the value is `TrainResult.stopped` (a divergence writes its message)."""

  NONE = ""  # still running
  TARGET_RETURN = "target return"
  TIME_LIMIT = "time limit"
  BUDGET = "budget"
  PREEMPTED = "preempted"  # a SIGTERM's stop (galax/runtime/preemption.py)
  DIVERGED = "diverged"


@dataclasses.dataclass(frozen=True)
class StopRules:
  """The config's stop rules: the update budget, and the target return and training-time
  limit of each sitting (0 = none)."""

  total_updates: int
  target_return: float  # 0: none (the run's config gives it: its default is written there)
  time_limit_s: float  # 0: none


@dataclasses.dataclass
class Progress:
  """A run's counters, episode statistics and clocks, carried over a resume."""

  stats_window: int
  num_learners: int = 0  # per-learner statistics kept (config.learner_stats), else 0
  env_steps: int = 0
  updates: int = 0
  start_steps: int = 0  # this sitting's first env step
  clock: RunClock = dataclasses.field(default_factory=RunClock)
  tracker: EpisodeTracker = dataclasses.field(init=False)
  learner_trackers: list[EpisodeTracker] = dataclasses.field(init=False)

  def __post_init__(self):
    self.tracker = EpisodeTracker(self.stats_window)
    self.learner_trackers = [EpisodeTracker(self.stats_window) for _ in range(self.num_learners)]

  def advance(self, updates: int, env_steps: int) -> None:
    self.updates += updates
    self.env_steps += env_steps

  def stop_reason(self, rules: StopRules, train_time_s: float) -> Stop:
    """Why the run ends here (`Stop.NONE`: it goes on), `train_time_s` into this sitting.
    The target return and time limit come first: a run reaching either on its last
    update stopped for that reason."""
    if rules.target_return and self.tracker.mean_return >= rules.target_return:
      return Stop.TARGET_RETURN
    if rules.time_limit_s and train_time_s >= rules.time_limit_s:
      return Stop.TIME_LIMIT
    if self.updates >= rules.total_updates:
      return Stop.BUDGET
    return Stop.NONE

  def stop_text(self, stop: Stop, rules: StopRules) -> str:
    """One phrase for `stop` ("" for NONE)."""
    if stop is Stop.TARGET_RETURN:
      return f"target return {rules.target_return} reached"
    if stop is Stop.TIME_LIMIT:
      return f"time limit {rules.time_limit_s}s reached"
    if stop is Stop.BUDGET:
      return f"{self.updates} of {rules.total_updates} updates done"
    return stop.value

  def to_meta(self, now: float) -> JsonDict:
    """What a checkpoint keeps besides the state."""
    return dict(
      env_steps=self.env_steps,
      updates=self.updates,
      wall_time_s=self.clock.wall(now),
      train_time_s=self.clock.train(now),
      tracker=self.tracker.to_json(),
      learner_trackers=[t.to_json() for t in self.learner_trackers],
    )

  def load_meta(self, meta: JsonDict) -> None:
    """Continues a checkpoint's counts, clocks and episode statistics."""
    self.env_steps, self.updates = int(meta["env_steps"]), int(meta["updates"])
    self.clock.elapsed_before = float(meta.get("wall_time_s", 0.0))
    self.clock.train_before = float(meta.get("train_time_s", self.clock.elapsed_before))
    self.tracker.load_json(meta.get("tracker"))
    for tracker, saved in zip(self.learner_trackers, meta.get("learner_trackers") or []):
      tracker.load_json(saved)
