"""What a resume may change of a run: the run's saved config rules.

A run's config.json is its config. `--resume` rebuilds it (`restore`), applies the
command's `--config.<field>` overrides on top, and the training loop compares the result
with the saved config field by field (`changes`):

* a field in `CHANGEABLE_ON_RESUME` (how long the run goes and when it stops, logging,
  checkpoint and evaluation cadence, video, tracking) may change: the change is applied,
  printed, and recorded in the run's config_changes.json with the env step it took effect;
* a field in `NAMED_ON_RESUME` (`optimizer.anneal_steps`, where a linear lr anneal ends)
  changes what the run learns from the resume on: only a command that names it changes
  it, printed and recorded as above. A resume that changes `total_env_steps` keeps the
  anneal's end (`kept_schedule`);
* any other difference (seed, learning rate, envs, network, ...) would make the resumed
  run another run: it is refused in one line naming each field, saved value against new.

A command that names a config (`--config=pong_paac --resume`) must be the run's config in
every field a resume may not change (`command_config`). `galax.train(config, resume=True)`
compares the whole `config` it is given.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping

import galax.config.typed as typed
from galax.algorithms.registry import spec_for
from galax.config.schema import Config
from galax.config.settings import run_settings
from galax.framework.update import run_updates

CHANGEABLE_ON_RESUME = (
  "total_env_steps",  # more (or fewer) steps
  "time_limit_s",
  "target_return",
  "log_every_steps",
  "checkpoint_every_steps",
  "keep_checkpoints",
  "eval.every_steps",
  "tensorboard",
  "learner_stats",
  "energy",
  "capture_video",
  "track",
  "track_project",
  "track_entity",
  "track_mode",
)
# Changes what the run learns from the resume on: allowed only where the command names it
# (`--config.optimizer.anneal_steps=N` moves a linear lr anneal's end), printed and recorded.
NAMED_ON_RESUME = ("optimizer.anneal_steps",)
# Sections whose keys are free (a config file fills them): one field each.
_OPAQUE = ("env.options",)


@dataclasses.dataclass(frozen=True)
class Change:
  """A field whose value differs between the saved run and the command."""

  field: str
  saved: Any
  given: Any
  note: str = ""  # why the resume makes it, where the command does not name it

  def __str__(self) -> str:
    if self.note:
      return f"{self.field} {_show(self.saved)} -> {_show(self.given)} ({self.note})"
    return f"{self.field} (run {_show(self.saved)}, command {_show(self.given)})"


def _show(value: Any) -> str:
  return "absent" if value is _ABSENT else json.dumps(value)


_ABSENT = object()


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
  """{"optimizer.learning_rate": 7e-4, ...}: the leaves of a config as JSON data."""
  leaves = {}
  for key, value in tree.items():
    path = prefix + key
    if isinstance(value, Mapping) and path not in _OPAQUE:
      leaves.update(flatten(value, path + "."))
    else:
      leaves[path] = value
  return leaves


def restore(saved: Mapping[str, Any]) -> Config:
  """The run's typed config from its config.json data (nested, or flat as `flatten` makes
  it): the defaults for fields the run predates; ValueError (one line) for a field this
  galax does not have."""
  schema = flatten(typed.json_data(typed.defaults()))
  fields = flatten(saved)
  for field in fields:
    if field not in schema:
      raise ValueError(
        f"--resume: the run's config.json has a field {field!r} that this galax does not "
        "know: resume it with the galax version that wrote it."
      )
  return typed.with_fields(typed.defaults(), fields)


def command_config(
  saved: Mapping[str, Any],
  command: Mapping[str, Any],
  overrides: Mapping[str, Any],
  names_config: bool,
) -> Config:
  """The config a resume command asks for: the run's saved config (config.json data) with
  the command's `--config.<field>` `overrides`. A command that names a config file also
  brings that file's value (`command`: its config as JSON data) of every field a resume may
  not change, so that `changes` finds where the file is not the run's; the changeable ones
  stay the run's unless overridden (a file's own budget or target does not replace the
  run's)."""
  fields = flatten(saved)
  if names_config:
    fields.update(
      (field, value)
      for field, value in flatten(command).items()
      if field not in CHANGEABLE_ON_RESUME + NAMED_ON_RESUME
    )
  return typed.with_fields(restore(fields), dict(overrides))


def kept_schedule(saved: Mapping[str, Any] | None, given: Config) -> tuple[Config, dict[str, str]]:
  """`given`, or a copy whose linear lr anneal keeps the saved run's horizon, and the
  note (by field) that says so.

  `optimizer.anneal_steps` None means the run's length as the run started, not as a resume
  makes it: where a resume's `total_env_steps` would move the anneal's end, the copy pins
  `anneal_steps` to the saved run's planned agent steps (whole calls, so the schedule goes
  on bit for bit), a change that is printed and recorded. A run that was pinned keeps its
  pin; a command that names `optimizer.anneal_steps` moves it."""
  if saved is None or given.optimizer.anneal != "linear":
    return given, {}
  run = restore(saved)
  if run.optimizer.anneal != "linear" or given.optimizer.anneal_steps is not None:
    return given, {}  # another anneal is refused; a named horizon is the command's
  horizon = run.optimizer.anneal_steps
  if horizon is None:
    horizon = _anneal_end(run)
    if horizon == _anneal_end(given):
      return given, {}  # nothing moves
  note = (
    f"kept: the lr anneal still ends at agent step {horizon}, the run's length as it "
    "started; --config.optimizer.anneal_steps=N moves it"
  )
  pinned = typed.with_fields(given, {"optimizer.anneal_steps": horizon})
  return pinned, {"optimizer.anneal_steps": note}


def _anneal_end(config: Config) -> int:
  """The agent step at which `config`'s linear lr anneal (over its run) reaches 0."""
  spec = spec_for(config.algorithm)
  per_update, _, anneal_updates = run_updates(run_settings(config, spec), spec)
  return per_update * anneal_updates


def changes(
  saved: Mapping[str, Any], given: Mapping[str, Any], notes: Mapping[str, str] | None = None
) -> list[Change]:
  """Every field whose value differs between the run's config.json data (made whole by
  `restore`) and the given config's (`typed.json_data`: tuples as lists),
  with its note from `notes` (by field), if any."""
  old = flatten(typed.json_data(restore(saved)))
  new, notes = flatten(given), notes or {}
  return [
    Change(field, old.get(field, _ABSENT), new.get(field, _ABSENT), notes.get(field, ""))
    for field in dict.fromkeys([*old, *new])
    if old.get(field, _ABSENT) != new.get(field, _ABSENT)
  ]


def check(found: list[Change], config_json: str) -> list[Change]:
  """The changes a resume may make; ValueError (one line) naming every other one."""
  refused = [c for c in found if c.field not in CHANGEABLE_ON_RESUME + NAMED_ON_RESUME]
  if refused:
    raise ValueError(
      f"--resume: this command's config differs from the run's ({config_json}) in "
      + "; ".join(map(str, refused))
      + ". A resume continues the run as it was: give --workdir and --resume with no "
      "--config, plus only fields a resume may change ("
      + ", ".join(CHANGEABLE_ON_RESUME + NAMED_ON_RESUME)
      + "); or start another run (another --workdir, or --overwrite)."
    )
  return found
