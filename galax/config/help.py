"""`galax --help_config[=NAME]`: every config field with its value and a one-line doc.

The docs are the comments of the schema's source (galax/config/__init__.py and each algorithm's
section, e.g. `ppo_config` in galax/algorithms/ppo.py): a field's trailing comment, with
the comment lines aligned under it, or else the comment block just above it. So the
schema stays the one place a field is documented.
"""

from __future__ import annotations

import inspect
import re
import sys
from typing import Any, Callable, Iterator, Sequence

from ml_collections import ConfigDict

import galax.config as config_lib
from galax.algorithms.registry import specs
from galax.config import cli

_FLAG = "--help_config"
_ASSIGN = re.compile(r"^\s*\w+\.([\w.]+)\s*=\s*(.*)$")
_TRAILING = re.compile(r"\s#\s?(.*)$")


def _builders() -> list[tuple[Callable[[], Any], str]]:
  """(the function that declares a group of fields, the prefix of their names)."""
  found = [
    (config_lib.base_config, ""),
    (config_lib._learner_fields, ""),
    (config_lib._model_fields, ""),
    (config_lib._optimizer_fields, ""),
    (config_lib._running_fields, ""),
    (config_lib._env_section, "env."),
    (config_lib._eval_section, "eval."),
  ]
  for spec in specs().values():  # each section's builder: `<section>_config` (ppo_config)
    for name in spec.config_sections():
      builder = spec.config_sections.__globals__.get(f"{name}_config")
      if builder is not None and (builder, f"{name}.") not in found:
        found.append((builder, f"{name}."))
  return found


def _comment(line: str) -> tuple[str, int]:
  """The text of a comment line and the column it starts at."""
  after = line[line.index("#") + 1 :]
  return after.strip(), len(line) - len(after.lstrip())


def source_docs(source: str, prefix: str = "") -> dict[str, str]:
  """{dotted field: doc} from the assignments (`c.network.name = "mlp"  # doc`) of a
  function's source."""
  docs: dict[str, str] = {}
  block: list[str] = []
  last, column = None, -1  # the field with a trailing comment just before, and its column
  for line in source.splitlines():
    if line.strip().startswith("#"):
      text, at = _comment(line)
      if last is not None and at == column:  # a trailing comment's next line
        docs[last] += " " + text
      else:
        block.append(text)
        last = None
      continue
    found = _ASSIGN.match(line)
    trailing = _TRAILING.search(found.group(2)) if found else None
    if found:
      docs[prefix + found.group(1)] = trailing.group(1).strip() if trailing else " ".join(block)
    last = prefix + found.group(1) if trailing else None
    column = _comment(line)[1] if trailing else -1
    block = []
  return docs


def field_docs() -> dict[str, str]:
  docs: dict[str, str] = {}
  for builder, prefix in _builders():
    docs.update(source_docs(inspect.getsource(builder), prefix))
  return docs


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
    title = "the config schema (galax/config/__init__.py) with its defaults"
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
