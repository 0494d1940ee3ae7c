"""`galax --help_config[=NAME]`: every config field with its value and a one-line doc.

The docs are the comments of the config's dataclasses (galax/config/schema.py and each
section beside its reader, e.g. `PPOSection` in galax/algorithms/ppo.py): a field's
trailing comment, with the comment lines aligned under it, or else the comment block just
above it (`typed.field_docs`). So the dataclass stays the one place a field is documented.
"""

from __future__ import annotations

import sys
from typing import Any, Iterator, Sequence

from ml_collections import ConfigDict

import galax.config as config_lib
from galax.config import cli
from galax.config.typed import field_docs

_FLAG = "--help_config"


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
  """(dotted name, value) of every field of a config tree (an empty section: {})."""
  for key, value in node.items():
    if isinstance(value, ConfigDict) and len(value):
      yield from _leaves(value, f"{prefix}{key}.")
    else:
      yield prefix + key, value.to_dict() if isinstance(value, ConfigDict) else value


def describe(name: str | None = None) -> list[str]:
  """The lines of the listing: the schema's defaults, or config `name`'s values, the fields
  it changes from the schema's defaults first (each with the default), then the others."""
  schema = dict(_leaves(config_lib.base_config()))
  docs = field_docs()
  line = lambda path, value, extra="": (
    f"  {path} = {value!r}{extra}" + (f"  # {docs[path]}" if docs.get(path) else "")
  )
  if not name:
    title = "the config (galax/config/schema.py and its sections' dataclasses) with its defaults"
    return [f"Fields of {title}; set one with --config.<field>=<value>:"] + [
      line(path, value) for path, value in schema.items()
    ]
  values = dict(_leaves(config_lib.load(name)))
  changed = [p for p, v in values.items() if p not in schema or schema[p] != v]
  same = [p for p in values if p not in changed]
  return (
    [
      f"Fields of config {name} ({config_lib.config_path(name)}); set one with "
      "--config.<field>=<value>:",
      f"{name} changes {len(changed)} of its {len(values)} fields from the schema's defaults:",
    ]
    + [line(p, values[p], f" (schema: {schema[p]!r})" if p in schema else "") for p in changed]
    + [f"The other {len(same)}, at the schema's defaults:"]
    + [line(p, values[p]) for p in same]
  )


def answer(argv: Sequence[str]) -> None:
  """On `--help_config[=NAME]`: prints the listing (of NAME, or of the schema) and exits 0;
  an unknown NAME is one `error:` line."""
  asked = [a for a in argv[1:] if a == _FLAG or a.startswith(_FLAG + "=")]
  if not asked:
    return

  name = asked[-1].partition("=")[2] or None
  try:
    lines = describe(name)
  except FileNotFoundError as e:
    cli.fail(str(e))
  try:
    print("\n".join(lines), flush=True)
  except BrokenPipeError:  # `| head`: the reader has what it wanted
    sys.stdout = None
  sys.exit(0)
