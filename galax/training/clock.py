"""A training run's clocks: wall time and training time (both carried over a resume), the
first, compiling call apart, and the steady rate of the calls after it.

Training time is wall time without evaluations (`eval_time`): the clock of the papers'
time metrics and, counted from the start of each sitting (a resume starts a new one), of
`config.time_limit_s`. Evaluations all run after the first call, so the steady clock drops
them all.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable


@dataclasses.dataclass
class RunClock:
  elapsed_before: float = 0.0  # earlier sittings' wall time (a resumed run)
  train_before: float = 0.0  # ... and training time
  start: float = 0.0  # perf_counter() when this sitting's training began
  compile_time: float = 0.0  # the first call of this sitting
  steady_start: float | None = None  # when the first call ended
  steady_steps: int = 0  # env steps of the calls after it
  steady_train: float = 0.0  # their training time, as of the last call's end
  # The next metrics row's steps/s counts from this training time and env step.
  rate_from_time: float = 0.0
  rate_from_steps: int = 0
  eval_time: Callable[[], float] = lambda: 0.0  # evaluation seconds so far (this sitting)

  def begin(self, now: float, env_steps: int) -> None:
    self.start = now
    self.rate_from_time, self.rate_from_steps = self.train_before, env_steps

  def wall(self, now: float) -> float:
    return self.elapsed_before + now - self.start

  def train(self, now: float) -> float:
    return self.train_before + now - self.start - self.eval_time()

  def sitting(self, now: float) -> float:
    """This sitting's training time: what `config.time_limit_s` limits."""
    return now - self.start - self.eval_time()

  def called(self, call_start: float, now: float, env_steps: int, steps: int) -> None:
    """A call of `steps` env steps ran from call_start to now, ending at `env_steps`."""
    if self.steady_start is None:
      self.compile_time, self.steady_start = now - call_start, now
      self.rate_from_time, self.rate_from_steps = self.train(now), env_steps
    else:
      self.steady_steps += steps
      self.steady_train = self.steady_time(now)

  def steady_time(self, now: float) -> float:
    return now - self.steady_start - self.eval_time() if self.steady_start else 0.0

  def steady_rate(self) -> float:
    """Env steps/s of the calls after the compiling one, as of the last call's end, without
    evaluations (NaN if there was only that one): the progress and done lines' figure."""
    return self.steady_steps / self.steady_train if self.steady_steps else math.nan

  def row_rate(self, now: float, env_steps: int) -> float:
    """Env steps/s since the previous row (NaN while only the compiling call ran)."""
    if not self.steady_steps:
      return math.nan
    rate = (env_steps - self.rate_from_steps) / max(self.train(now) - self.rate_from_time, 1e-9)
    self.rate_from_time, self.rate_from_steps = self.train(now), env_steps
    return rate

  def progress(
    self, now: float, env_steps: int, planned: int, time_limit_s: float
  ) -> tuple[int, int, int, float, float | None]:
    """`metrics.progress`'s arguments: steps, planned, steady steps and time, limit left."""
    limit_left = max(time_limit_s - self.sitting(now), 0.0) if time_limit_s else None
    return env_steps, planned, self.steady_steps, self.steady_time(now), limit_left
