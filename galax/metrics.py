"""Training metrics: the running episode return, CSV rows and TensorBoard scalars."""

from __future__ import annotations

import collections
import csv
import os
from typing import Any, Mapping

import numpy as np


class EpisodeTracker:
  """Keeps the last `window` completed full-game episodes (return, length)."""

  def __init__(self, window: int = 100):
    self.returns: collections.deque[float] = collections.deque(maxlen=window)
    self.lengths: collections.deque[int] = collections.deque(maxlen=window)
    self.completed = 0

  def add(self, over: np.ndarray, returns: np.ndarray, lengths: np.ndarray) -> None:
    """Adds episodes from [..., B, T] arrays in time order (time is the last axis)."""
    over = np.asarray(over)
    # Flatten so that earlier steps come first: move time before envs.
    order = lambda x: np.moveaxis(np.asarray(x), -1, -2).reshape(-1)
    mask = order(over).astype(bool)
    self.returns.extend(order(returns)[mask].tolist())
    self.lengths.extend(order(lengths)[mask].astype(int).tolist())
    self.completed += int(mask.sum())

  @property
  def mean_return(self) -> float:
    return float(np.mean(self.returns)) if self.returns else float("nan")

  @property
  def mean_length(self) -> float:
    return float(np.mean(self.lengths)) if self.lengths else float("nan")


def learner_slice(x: np.ndarray, learner: int, num_learners: int) -> np.ndarray:
  """Learner `learner`'s envs of an env-axis array [..., n * b, T] -> [..., b, T].

  Global env order is learner-major (learner i owns envs i*b .. i*b + b - 1).
  """
  x = np.asarray(x)
  b = x.shape[-2] // num_learners
  return x[..., learner * b:(learner + 1) * b, :]


def scalar_summary(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
  """Means of every numeric leaf of a nested metrics dict, keys joined with '/'."""
  out: dict[str, float] = {}
  for key, value in metrics.items():
    name = f"{prefix}{key}"
    if isinstance(value, Mapping):
      out.update(scalar_summary(value, name + "/"))
    else:
      out[name] = float(np.mean(value))
  return out


class MetricsWriter:
  """Appends rows to `<workdir>/metrics.csv` (flushed per row) and TensorBoard."""

  def __init__(self, workdir: str, tensorboard: bool = True, append: bool = False):
    os.makedirs(workdir, exist_ok=True)
    self.path = os.path.join(workdir, "metrics.csv")
    self._fields: list[str] | None = None
    if append and os.path.exists(self.path):
      with open(self.path, newline="") as f:
        header = next(csv.reader(f), None)
      self._fields = header
    self._file = open(self.path, "a" if append else "w", newline="")
    self._tb = None
    if tensorboard:
      from tensorboardX import SummaryWriter  # pylint: disable=g-import-not-at-top

      self._tb = SummaryWriter(os.path.join(workdir, "tb"))

  def write(self, step: int, row: Mapping[str, float]) -> None:
    row = {"env_steps": step, **row}
    if self._fields is None:
      self._fields = list(row)
      csv.writer(self._file).writerow(self._fields)
    csv.DictWriter(self._file, self._fields, extrasaction="ignore").writerow(row)
    self._file.flush()
    if self._tb is not None:
      for key, value in row.items():
        if key != "env_steps" and np.isfinite(value):
          self._tb.add_scalar(key, value, step)
      self._tb.flush()

  def write_scalars(self, step: int, scalars: Mapping[str, float]) -> None:
    """TensorBoard only (rows with other columns than the CSV's, e.g. evaluations)."""
    if self._tb is not None:
      for key, value in scalars.items():
        if np.isfinite(value):
          self._tb.add_scalar(key, value, step)
      self._tb.flush()

  def close(self) -> None:
    self._file.close()
    if self._tb is not None:
      self._tb.close()
