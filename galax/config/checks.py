"""One-line checks of config values, shared by `galax.config.validate` and the algorithms'
validate hooks (so every choice is rejected in the same words). Imports nothing of galax."""

from __future__ import annotations

from typing import Any

import ml_collections


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
  """One line if `config.<name>` is not among `allowed` (also for algorithms' validate
  hooks, so that every choice is rejected in the same words)."""
  if value not in allowed:
    raise ValueError(f"config.{name}={value!r} is not one of {list(allowed)}.")


def check_positive(config: ml_collections.ConfigDict, *names: str, or_zero: bool = False) -> None:
  """One line for the first of the dotted `names` whose value is not > 0 (`or_zero`: < 0)."""
  for name in names:
    value = config
    for part in name.split("."):
      value = value[part]
    if value < 0 or (value == 0 and not or_zero):
      raise ValueError(f"config.{name} must be {'>=' if or_zero else '>'} 0, got {value!r}.")
