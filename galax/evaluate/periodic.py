"""Evaluations during training: `EvalHook` runs an `Evaluator` from `galax.training.loop.train`
and keeps the records.

Every `eval.every_steps` env steps (at the first call boundary that many steps after the
previous evaluation, or the sitting's start: evenly every ceil(every_steps / steps per call)
calls, as the run header says; and once at the end) the hook evaluates the chosen learners
(`config.eval.learners`, `evaluator.select_params`), times the evaluation so that training
time can exclude it, and appends one `EvalRecord` per evaluated policy to
`<workdir>/eval.csv` (`read_eval_csv` reads it back on a resume). The papers' metrics over
the resulting series are pure functions in `galax.results.paper_protocols`.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import time
from typing import Callable, Protocol, Sequence

import jax
import numpy as np

from galax.core.types import JsonDict, ParamsBlock
from galax.evaluate.evaluator import EvalSettings, Evaluator, select_params
from galax.parallel.layout import to_host


@dataclasses.dataclass
class EvalRecord:
  """One evaluation of one policy: its episodes' full-game raw returns and lengths."""

  env_steps: int
  train_time_s: float  # training wall time so far, evaluations excluded
  wall_time_s: float  # wall time so far, evaluations included
  learner: int  # evaluated learner; -1 = the learners' average parameters
  returns: list[float]
  lengths: list[int]

  @property
  def mean_return(self) -> float:
    return float(np.mean(self.returns)) if self.returns else float("nan")

  def to_json(self) -> JsonDict:
    return dataclasses.asdict(self)


def best_mean_return(records: Sequence[EvalRecord]) -> float:
  """The best evaluation so far: the highest mean over learners of one step's records."""
  by_step: dict[int, list[float]] = {}
  for r in records:
    by_step.setdefault(r.env_steps, []).append(r.mean_return)
  means = [float(np.mean(v)) for v in by_step.values() if np.all(np.isfinite(v))]
  return max(means, default=float("-inf"))


class VideoRecorder(Protocol):
  """Records a video at each evaluation (`config.capture_video`: galax/training/videos.py)."""

  def record(self, params: ParamsBlock, env_steps: int) -> str: ...


def eval_line(env_steps: int, records: Sequence[EvalRecord]) -> str:
  """The progress line of one evaluation's records."""
  means = [r.mean_return for r in records]
  if len(records) == 1:
    who = "average params" if records[0].learner < 0 else f"learner {records[0].learner}"
  else:
    who = f"{len(records)} learners (min {min(means):.2f}, max {max(means):.2f})"
  return (
    f"eval  {env_steps:>10d} | return {np.mean(means):8.2f} over "
    f"{len(records[0].returns)} episodes | {who}"
  )


class EvalHook:
  """Runs evaluations from the training loop and keeps their records.

  `next_due(env_steps)` is the step count of the next periodic evaluation; `run(...)`
  evaluates, appends rows to `<workdir>/eval.csv` (process 0) and returns the new
  records. `eval_time_s` accumulates the wall time spent evaluating (and recording the
  `videos`, if given: process 0 only), which `train` subtracts to report training time.
  """

  FIELDS = (
    "env_steps",
    "train_time_s",
    "wall_time_s",
    "learner",
    "mean_return",
    "episodes",
    "returns",
    "lengths",
  )

  def __init__(
    self,
    settings: EvalSettings,
    apply_fn: Callable,
    num_learners: int,
    workdir: str | None = None,
    resume: bool = False,
    log: Callable[[str], None] = print,
    videos: VideoRecorder | None = None,
  ):
    self.every = settings.every_steps
    self.which = settings.learners
    self.num_learners = num_learners
    policies = num_learners if self.which == "all" else 1
    self.records: list[EvalRecord] = []
    self.eval_time_s = 0.0
    self._log, self._videos = log, videos
    self._is_writer = jax.process_index() == 0
    self._evaluator = Evaluator(settings, apply_fn, policies) if self._is_writer else None
    self.path = os.path.join(workdir, "eval.csv") if workdir else None
    if self.path and resume and os.path.exists(self.path):
      self.records = read_eval_csv(self.path)
    if self.path and self._is_writer and not (resume and os.path.exists(self.path)):
      with open(self.path, "w", newline="") as f:
        csv.writer(f).writerow(self.FIELDS)
    self.last_env_steps = self.records[-1].env_steps if self.records else -1

  def next_due(self, env_steps: int) -> int:
    """The env-step count at which the next periodic evaluation is due, given the count at
    the last one (or at the start). Counted from there rather than at multiples of
    every_steps, which calls of another size reach unevenly (every 10,000 in calls of 8,000:
    8,000 and 16,000 apart); and from `env_steps` alone, the same on every process."""
    return env_steps + self.every

  def run(
    self, params: ParamsBlock, env_steps: int, train_time_s: float, wall_time_s: float
  ) -> list[EvalRecord]:
    """Evaluates the learners' `params` (global [n, ...] arrays) at `env_steps`."""
    host_params = to_host(params)  # a collective under multi-host: every process calls it
    if not self._is_writer:
      return []
    start = time.perf_counter()
    chosen, learners = select_params(host_params, self.which, self.num_learners)
    out = self._evaluator.evaluate(chosen)
    if self._videos is not None:
      self._videos.record(host_params, env_steps)
    self.eval_time_s += time.perf_counter() - start
    new = []
    for p, learner in enumerate(learners):
      done = out.completed[p]
      if not done.all():
        self._log(
          f"eval: {int((~done).sum())} episode(s) of learner {learner} did not end "
          "within the step budget; dropped"
        )
      new.append(
        EvalRecord(
          env_steps,
          train_time_s,
          wall_time_s,
          learner,
          out.returns[p][done].tolist(),
          out.lengths[p][done].tolist(),
        )
      )
    self.records.extend(new)
    self.last_env_steps = env_steps
    if self.path:
      with open(self.path, "a", newline="") as f:
        writer = csv.writer(f)
        for r in new:
          writer.writerow(
            [
              r.env_steps,
              f"{r.train_time_s:.3f}",
              f"{r.wall_time_s:.3f}",
              r.learner,
              r.mean_return,
              len(r.returns),
              json.dumps(r.returns),
              json.dumps(r.lengths),
            ]
          )
    return new

  def close(self) -> None:
    if self._evaluator is not None:
      self._evaluator.close()


def read_eval_csv(path: str) -> list[EvalRecord]:
  """Reads the records an `EvalHook` wrote."""
  with open(path, newline="") as f:
    return [
      EvalRecord(
        int(row["env_steps"]),
        float(row["train_time_s"]),
        float(row["wall_time_s"]),
        int(row["learner"]),
        json.loads(row["returns"]),
        json.loads(row["lengths"]),
      )
      for row in csv.DictReader(f)
    ]


def records_by_learner(records: Sequence[EvalRecord]) -> dict[int, list[EvalRecord]]:
  """Groups records by evaluated learner, each list in evaluation order."""
  out: dict[int, list[EvalRecord]] = {}
  for r in records:
    out.setdefault(r.learner, []).append(r)
  return out
