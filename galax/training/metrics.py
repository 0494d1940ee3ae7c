"""Training metrics: the running episode return, CSV rows and TensorBoard scalars."""

from __future__ import annotations

import collections
import csv
import json
import math
import os
import time
from typing import Any, Mapping, Protocol

import numpy as np

from galax.core.types import JsonDict, PyTree
from galax.envs.video import gif_bytes
from galax.runtime.preemption import sigint_deferred


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

  def to_json(self) -> JsonDict:
    """What a checkpoint keeps, so that a resumed run continues these statistics."""
    return dict(returns=list(self.returns), lengths=list(self.lengths), completed=self.completed)

  def load_json(self, data: JsonDict | None) -> None:
    if data:
      self.returns.extend(float(x) for x in data["returns"])
      self.lengths.extend(int(x) for x in data["lengths"])
      self.completed = int(data["completed"])

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
  return x[..., learner * b : (learner + 1) * b, :]


def scalar_summary(metrics: Mapping[str, PyTree], prefix: str = "") -> dict[str, float]:
  """Means of every numeric leaf of a nested metrics dict, keys joined with '/'."""
  out: dict[str, float] = {}
  for key, value in metrics.items():
    name = f"{prefix}{key}"
    if isinstance(value, Mapping):
      out.update(scalar_summary(value, name + "/"))
    else:
      out[name] = float(np.mean(value))
  return out


def truncate_csv(path: str, max_step: int, step_column: str = "env_steps") -> int:
  """Keeps the rows of `path` with `step_column` <= max_step; returns how many it dropped.

  Rows a kill left half-written (too few fields, unreadable step) are dropped too. The
  file is rewritten atomically (a temp file, then os.replace).
  """
  if not os.path.exists(path):
    return 0
  with open(path, newline="") as f:
    rows = list(csv.reader(f))
  if not rows:
    return 0
  header, kept = rows[0], [rows[0]]
  column = header.index(step_column) if step_column in header else 0
  for row in rows[1:]:
    try:
      if len(row) == len(header) and int(row[column]) <= max_step:
        kept.append(row)
    except ValueError:
      pass
  tmp = path + ".tmp"
  with open(tmp, "w", newline="") as f:
    csv.writer(f).writerows(kept)
  os.replace(tmp, path)
  return len(rows) - len(kept)


# TensorBoard tags in CleanRL's names, which RL users compare runs by (metrics.csv keeps
# galax's column names); other metrics keep theirs.
TENSORBOARD_TAGS = {
  "mean_return": "charts/episodic_return",
  "mean_length": "charts/episodic_length",
  "episodes": "charts/episodes",
  "steps_per_second": "charts/SPS",
  "learning_rate": "charts/learning_rate",
  "eval/mean_return": "charts/eval_return",
  "loss/total": "losses/loss",
  "loss/policy": "losses/policy_loss",
  "loss/value": "losses/value_loss",
  "loss/entropy": "losses/entropy",
  "grad_norm": "losses/grad_norm",
  "clip_fraction": "losses/clipfrac",
  "approx_kl": "losses/approx_kl",
  "explained_variance": "losses/explained_variance",
}


class Tracker(Protocol):
  """An experiment tracker fed the TensorBoard-named scalars (galax/training/tracking.py)."""

  def log(self, step: int, scalars: Mapping[str, float]) -> None: ...

  def log_video(self, step: int, tag: str, path: str) -> None: ...

  def close(self) -> None: ...


class MetricsWriter:
  """Appends rows to `<workdir>/metrics.csv` (flushed per row), and to TensorBoard and a
  `tracker` if given (both under `TENSORBOARD_TAGS`' names).

  `resume_step`: continue a run from its checkpoint at that step: CSV rows after it are
  dropped, and TensorBoard is told to purge the events after it (`purge_step`), so steps
  stay strictly increasing after a kill and resume.
  """

  def __init__(
    self,
    workdir: str,
    tensorboard: bool = True,
    resume_step: int | None = None,
    tracker: Tracker | None = None,
  ):
    os.makedirs(workdir, exist_ok=True)
    self.path = os.path.join(workdir, "metrics.csv")
    self._fields: list[str] | None = None
    append = resume_step is not None and os.path.exists(self.path)
    if append:
      truncate_csv(self.path, resume_step)
      with open(self.path, newline="") as f:
        self._fields = next(csv.reader(f), None)
    self._file = open(self.path, "a" if append else "w", newline="")
    self._tb, self._tracker = None, tracker
    if tensorboard:
      # Imported here: tensorboardX (and the google.cloud.storage it pulls in) took 0.24 s of
      # every command's start-up, --help's too (issue 73).
      from tensorboardX import SummaryWriter

      purge = None if resume_step is None else resume_step + 1
      # tensorboardX names an events file by the second and the host only: a writer opened
      # in the same second as the last one (a short run resumed at once) overwrote its file.
      # The nanosecond suffix keeps each file, and their names sort in writing order.
      suffix = f".{time.time_ns()}"
      self._tb = SummaryWriter(
        os.path.join(workdir, "tb"), purge_step=purge, filename_suffix=suffix
      )

  def write(self, step: int, row: Mapping[str, float]) -> None:
    row = {"env_steps": step, **row}
    if self._fields is None:
      self._fields = list(row)
      csv.writer(self._file).writerow(self._fields)
    csv.DictWriter(self._file, self._fields, extrasaction="ignore").writerow(row)
    self._file.flush()
    self.write_scalars(step, {k: v for k, v in row.items() if k != "env_steps"})

  def write_scalars(self, step: int, scalars: Mapping[str, float]) -> None:
    """TensorBoard and the tracker only (e.g. evaluations: other columns than the CSV's)."""
    tagged = {TENSORBOARD_TAGS.get(k, k): float(v) for k, v in scalars.items() if np.isfinite(v)}
    if self._tb is not None:
      with sigint_deferred():  # see `close`
        for tag, value in tagged.items():
          self._tb.add_scalar(tag, value, step)
        self._tb.flush()
    if self._tracker is not None:
      self._tracker.log(step, tagged)

  def write_video(self, step: int, tag: str, frames: list[np.ndarray], path: str) -> None:
    """A video: to TensorBoard as an animated GIF image (tensorboardX's add_video needs
    moviepy), to the tracker as its file `path`."""
    if self._tb is not None:
      from tensorboardX.proto.summary_pb2 import Summary  # loaded with the writer (__init__)

      height, width = frames[0].shape[:2]
      image = Summary.Image(
        height=height, width=width, colorspace=3, encoded_image_string=gif_bytes(frames)
      )
      summary = Summary(value=[Summary.Value(tag=tag, image=image)])
      with sigint_deferred():  # see `close`
        self._tb._get_file_writer().add_summary(summary, step)
        self._tb.flush()
    if self._tracker is not None:
      self._tracker.log_video(step, tag, path)

  def close(self) -> None:
    """Closes the files. tensorboardX hands events to its writer thread through a
    multiprocessing queue whose lock a Ctrl-C can strand if it lands inside a put; the
    close after it then waited forever (a run printed "interrupted: saved checkpoint"
    and never exited). Every put and the close run with Ctrl-C held back."""
    self._file.close()
    if self._tb is not None:
      with sigint_deferred():
        self._tb.close()
    if self._tracker is not None:
      self._tracker.close()


def json_safe(value: Any) -> Any:
  """`value` with NaN and infinities replaced by None (strict JSON has no NaN)."""
  if isinstance(value, float) and not math.isfinite(value):
    return None
  if isinstance(value, Mapping):
    return {k: json_safe(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [json_safe(v) for v in value]
  return value


def write_json(path: str, data: Any, indent: int = 2) -> None:
  """Writes strict JSON (NaN -> null) atomically: a temp file, then os.replace."""
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  tmp = path + ".tmp"
  with open(tmp, "w") as f:
    json.dump(json_safe(data), f, indent=indent, allow_nan=False)
  os.replace(tmp, path)


def short_count(n: int) -> str:
  if n >= 1e6:
    return f"{n / 1e6:.1f}M"
  return f"{n / 1e3:.0f}k" if n >= 1e4 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)


def short_duration(seconds: float) -> str:
  minutes = int(round(seconds / 60))
  if minutes >= 60:
    return f"{minutes // 60}h{minutes % 60:02d}m"
  return f"{minutes}m" if minutes else f"{int(seconds)}s"


def progress(
  steps: int, planned: int, steady_steps: int, steady_time: float, limit_left: float | None = None
) -> str:
  """'37% of 10.0M, 41m left': the share of `planned` done and the time left at the steady
  rate (`steady_steps` in `steady_time` seconds; none before there is one), capped by the
  time limit's `limit_left` seconds."""
  done = f"{100 * steps / planned:.0f}% of {short_count(planned)}"
  left = time_left(steps, planned, steady_steps, steady_time, limit_left)
  return done if left is None else f"{done}, {short_duration(left)} left"


def time_left(
  steps: int, planned: int, steady_steps: int, steady_time: float, limit_left: float | None = None
) -> float | None:
  """Seconds to `planned` at the steady rate, capped by `limit_left`; None before a rate."""
  if not steady_steps or steady_time <= 0:
    return None
  left = (planned - steps) / (steady_steps / steady_time)
  return left if limit_left is None else min(left, limit_left)


def add_episodes(
  tracker: EpisodeTracker,
  learner_trackers: list[EpisodeTracker],
  episodes: Mapping[str, np.ndarray],
) -> None:
  """A call's finished episodes into the run's tracker and each learner's (if kept)."""
  tracker.add(episodes["over"], episodes["returns"], episodes["lengths"])
  for i, learner_tracker in enumerate(learner_trackers):
    learner_tracker.add(
      *(
        learner_slice(episodes[k], i, len(learner_trackers)) for k in ("over", "returns", "lengths")
      )
    )
