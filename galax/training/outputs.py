"""A run's files: config.json, metrics.csv (+ TensorBoard and the tracker, through one
`MetricsWriter`), eval.csv's resume point and result.json, staged locally and pushed to a
URL workdir (galax/runtime/workdir.py `Mirror`).

Only process 0 writes; every other process (and a run without a workdir) gets an
`Outputs` whose `writer` is None and whose methods do nothing.
"""

from __future__ import annotations

import json
import os
import socket
import time

import jax

from galax.config.resume import Change
from galax.core.types import JsonDict
from galax.runtime import provenance
from galax.runtime import workdir as workdirs
from galax.training import metrics as metrics_lib
from galax.training import tracking
from galax.training.settings import LoopSettings

CHANGES_FILE = "config_changes.json"  # what resumes changed of the config, and from when
SITTINGS_FILE = "sittings.json"  # each sitting of the run: from which step, at which commit


def _append_json(path: str, entries: list[JsonDict]) -> None:
  recorded = []
  if os.path.exists(path):
    with open(path) as f:
      recorded = json.load(f)
  metrics_lib.write_json(path, recorded + entries)


def _record_sitting(path: str, env_steps: int, git: JsonDict) -> None:
  """Appends this sitting (its first env step, the galax commit `git`, host, start time, and
  the machine: CPU, backend, jax version)."""
  when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
  sitting = dict(env_steps=env_steps, started=when, host=socket.gethostname())
  _append_json(path, [dict(sitting, **git, machine=provenance.machine())])


def _record_changes(path: str, changes: list[Change], env_steps: int) -> None:
  """Appends `changes` (made from `env_steps` on) to the run's list of config changes, each
  with its note where the resume made it unasked (resume.py `kept_schedule`)."""
  entries = [dict(env_steps=env_steps, field=c.field, saved=c.saved, new=c.given) for c in changes]
  for entry, change in zip(entries, changes):
    entry.update({"note": change.note} if change.note else {})
  _append_json(path, entries)


class Outputs:
  """The run's files and writer (see the module docstring)."""

  def __init__(self, workdir: str | None):
    self.workdir = workdir
    self.files = workdirs.Mirror(workdir) if workdir else None
    self.is_writer = bool(workdir) and jax.process_index() == 0
    self.writer: metrics_lib.MetricsWriter | None = None
    # Read once as the sitting starts: a commit made while the run trains is not its commit.
    self.git: JsonDict = {}

  @property
  def local(self) -> str | None:
    """Where the files are written (the staging copy of a URL workdir); None: nowhere."""
    return self.files.local if self.files else None

  def open(
    self,
    config_json: dict,
    settings: LoopSettings,
    changes: list[Change] | None,
    env_steps: int,
  ) -> None:
    """Writes config.json (`config_json`, the run's config) and opens the writer (and
    tracker). A resume (`changes` not None) drops the rows its checkpoint at `env_steps`
    had not seen, and rewrites config.json only to make `changes`, each recorded in
    config_changes.json with `env_steps`."""
    if not self.is_writer:
      return
    resume = changes is not None
    self.files.prepare(resume)
    track = settings.track
    tracker = (
      tracking.WandbTracker(
        track.project, track.entity, track.mode, config_json, self.local, self.workdir, resume
      )
      if track.on
      else None
    )
    self.writer = metrics_lib.MetricsWriter(
      self.local, settings.tensorboard, resume_step=env_steps if resume else None, tracker=tracker
    )
    if resume:
      metrics_lib.truncate_csv(os.path.join(self.local, "eval.csv"), env_steps)
    self.git = provenance.git_info()
    _record_sitting(os.path.join(self.local, SITTINGS_FILE), env_steps, self.git)
    config_file = os.path.join(self.local, workdirs.CONFIG_FILE)
    if changes:
      _record_changes(os.path.join(self.local, CHANGES_FILE), changes, env_steps)
    if changes or not (resume and os.path.exists(config_file)):
      with open(config_file, "w") as f:
        json.dump(config_json, f, indent=2)

  def push(self) -> None:
    """Uploads what changed (a URL workdir)."""
    if self.is_writer:
      self.files.push()

  def write_result(self, summary: JsonDict) -> None:
    if self.is_writer:
      metrics_lib.write_json(os.path.join(self.local, "result.json"), summary)
      self.files.push()

  def close(self) -> None:
    if self.writer:
      self.writer.close()
