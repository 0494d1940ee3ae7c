"""A progress bar for `galax` runs in a terminal: share done, env steps and time left,
kept under the log lines (rich). Off when stdout is not a terminal (logs, pipes, CI): the
log lines carry the same share and time left."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console  # rich comes with flax
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn

from galax.training.metrics import short_count, short_duration


class TerminalBar:
  """`log` prints a line above the bar; `update` is train's `on_call`."""

  def __init__(self, console: Any = None):
    self._progress = Progress(
      TextColumn("training"),
      BarColumn(),
      TaskProgressColumn(),
      TextColumn("{task.fields[steps]}"),
      TextColumn("{task.fields[left]}"),
      console=console or Console(),
      transient=True,
    )
    self._task = None

  def log(self, line: str) -> None:
    self._progress.console.print(line, markup=False, highlight=False, soft_wrap=True)

  def update(self, env_steps: int, planned: int, seconds_left: float | None) -> None:
    fields = dict(
      steps=f"{short_count(env_steps)}/{short_count(planned)} steps",
      left="" if seconds_left is None else f"{short_duration(seconds_left)} left",
    )
    if self._task is None:
      self._progress.start()
      self._task = self._progress.add_task("train", total=planned, **fields)
    self._progress.update(self._task, completed=env_steps, total=planned, **fields)

  def close(self) -> None:
    if self._task is not None:
      self._progress.stop()


def wanted() -> bool:
  return sys.stdout.isatty()
