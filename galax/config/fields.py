"""A config's fields by their dotted names, and the close ones for a misspelt name.

The command line's `--config.<field>=` (galax/config/cli.py) and Python's
`galax.load_config(name, **fields)` both name the fields a user got wrong, and suggest the
fields meant: one of that name in another section (`learning_rate` ->
`optimizer.learning_rate`), then close names beside it, then close names anywhere.
"""

from __future__ import annotations

import difflib
from typing import Any, Iterator


def paths(node: Any, prefix: str = "") -> Iterator[str]:
  """Every dotted field and section name of a config."""
  for key in node.keys():
    yield prefix + key
    if hasattr(node[key], "keys"):
      yield from paths(node[key], f"{prefix}{key}.")


def unknown_part(config: Any, dotted: str) -> tuple[str, list[str]] | None:
  """(the dotted name up to its first part the config lacks, up to 3 fields meant), or
  None where `dotted` names a field or section of the config."""
  node, walked = config, []
  for part in dotted.split("."):
    keys = list(node.keys()) if hasattr(node, "keys") else []
    if part not in keys:
      every = list(paths(config))
      last = lambda p: p.rsplit(".", 1)[-1]
      found = (
        [p for p in every if last(p) == part]
        + [".".join([*walked, c]) for c in difflib.get_close_matches(part, keys, n=3)]
        + [p for p in every if difflib.get_close_matches(part, [last(p)], cutoff=0.8)]
      )
      return ".".join([*walked, part]), list(dict.fromkeys(found))[:3]
    node, walked = node[part], [*walked, part]
  return None
