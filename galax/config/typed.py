"""What galax derives from the config's dataclasses: the run's config type, its data
(config.json) both ways, the ConfigDict that config files and flags edit, field edits on
a dotted path, and every field's meaning.

One reader, `from_data`, turns a config's data (a ConfigDict, config.json's JSON, or the
fields of an older run, a subset) into the typed config, each value checked against its
field's type; `to_data` is the way back. Nothing here names a field: the dataclasses
(galax/config/schema.py and the sections beside their readers) are the one source.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import inspect
import json
import numbers
import re
import types
import typing
from typing import Any, Iterator, Mapping

import ml_collections

import galax.config.fields as field_names
from galax.algorithms.registry import sections as algorithm_sections
from galax.config.schema import SECTIONS_AFTER, Config


def config_type() -> type[Config]:
  """The run's config: `Config` with every registered algorithm's own sections."""
  return _with_sections(tuple(algorithm_sections().items()))


@functools.lru_cache(maxsize=None)
def _with_sections(sections: tuple[tuple[str, type], ...]) -> type[Config]:
  fields = [(name, cls, dataclasses.field(default=cls())) for name, cls in sections]
  return dataclasses.make_dataclass(
    "RunConfig", fields, bases=(Config,), frozen=True, kw_only=True, module=__name__
  )


def defaults() -> Config:
  """The run's config with every field at its default."""
  return config_type()()


def _names(value: Any) -> list[str]:
  """A dataclass's field names in config.json's order (the algorithms' sections after
  `SECTIONS_AFTER`)."""
  names = [f.name for f in dataclasses.fields(value)]
  if not isinstance(value, Config):
    return names
  shared = [f.name for f in dataclasses.fields(Config)]
  at = shared.index(SECTIONS_AFTER) + 1
  return shared[:at] + names[len(shared) :] + shared[at:]


def to_data(value: Any) -> dict[str, Any]:
  """A config (or section) as plain data, in config.json's order (tuples stay tuples)."""
  data = {}
  for name in _names(value):
    field = getattr(value, name)
    if dataclasses.is_dataclass(field):
      field = to_data(field)
    elif isinstance(field, Mapping):
      field = dict(field)
    data[name] = field
  return data


def json_data(config: Any) -> dict[str, Any]:
  """A config as config.json holds it (tuples as lists)."""
  return json.loads(json.dumps(to_data(config)))


def from_data(data: Any, cls: type | None = None, where: str = "") -> Any:
  """The typed config (or a section of type `cls`) of `data`: a ConfigDict, a typed config
  (returned as it is) or a mapping; fields it lacks keep their defaults (an older run's
  config.json). One ValueError line for a field the dataclass lacks or a value of the wrong
  type."""
  cls = cls or config_type()
  if isinstance(data, cls):
    return data
  if isinstance(data, ml_collections.ConfigDict):
    data = data.to_dict()
  if dataclasses.is_dataclass(data):
    data = to_data(data)
  hints = _hints(cls)
  for key in data:
    if key not in hints:
      raise _no_field({k: None for k in hints}, key, where, key)
  return cls(**{key: _typed(hints[key], value, where + key) for key, value in data.items()})


def _no_field(fields: Mapping[str, Any], asked: str, where: str, name: str) -> ValueError:
  """One line for a field `name` the config lacks, naming the fields `asked` may mean."""
  meant = field_names.unknown_part(fields, asked)[1]
  close = f" Did you mean {', '.join(where + c for c in meant)}?" if meant else ""
  return ValueError(f"config has no field {where + name!r}.{close}")


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
  names = {f.name for f in dataclasses.fields(cls) if f.init}
  return {k: v for k, v in typing.get_type_hints(cls).items() if k in names}


def _typed(hint: Any, value: Any, where: str) -> Any:
  """`value` as a field of type `hint` holds it; one ValueError line if it cannot."""
  origin, args = typing.get_origin(hint), typing.get_args(hint)
  if dataclasses.is_dataclass(hint):
    return from_data(value, hint, where + ".")
  if origin in (typing.Union, types.UnionType):
    if value is None and type(None) in args:
      return None
    return _typed(next(a for a in args if a is not type(None)), value, where)
  if origin is tuple and isinstance(value, (list, tuple)):
    return tuple(_typed(args[0], v, where) for v in value)
  if origin is collections.abc.Mapping and isinstance(value, Mapping):
    return types.MappingProxyType(dict(value))
  if hint is float and isinstance(value, numbers.Real) and not isinstance(value, bool):
    return float(value)
  if hint is int and isinstance(value, numbers.Integral) and not isinstance(value, bool):
    return int(value)
  if hint in (bool, str) and isinstance(value, hint):
    return value
  name = getattr(hint, "__name__", str(hint))
  raise ValueError(f"config.{where}={value!r} is not {'an' if name in ('int',) else 'a'} {name}.")


def with_fields(config: Any, values: Mapping[str, Any]) -> Any:
  """`config` with dotted fields replaced ({"optimizer.learning_rate": 1e-3}), each by
  `dataclasses.replace` along its path, its value checked against the field's type; one
  ValueError line, naming the fields meant, for a field the config lacks."""
  for dotted, value in values.items():
    config = _with_field(config, dotted.split("."), value, "")
  return config


def _with_field(node: Any, path: list[str], value: Any, where: str) -> Any:
  hints = _hints(type(node))
  if path[0] not in hints:
    raise _no_field(to_data(node), ".".join(path), where, path[0])
  name = path[0]
  if len(path) > 1:
    value = _with_field(getattr(node, name), path[1:], value, f"{where}{name}.")
  else:
    value = _typed(hints[name], value, where + name)
  return dataclasses.replace(node, **{name: value})


def config_dict(config: Any) -> ml_collections.ConfigDict:
  """The locked ConfigDict that config files and `--config.<field>` flags edit: the
  fields of `config` with their types (an optional field as a typed placeholder), so a
  misspelt field or a value of another type is an error."""
  node = _config_dict(config)
  node.lock()
  return node


def _config_dict(value: Any) -> ml_collections.ConfigDict:
  node = ml_collections.ConfigDict()
  hints = _hints(type(value))
  for name in _names(value):
    field, hint = getattr(value, name), hints[name]
    if dataclasses.is_dataclass(field):
      node[name] = _config_dict(field)
    elif isinstance(field, Mapping):
      node[name] = ml_collections.ConfigDict(dict(field))
    elif field is None:
      kind = next(a for a in typing.get_args(hint) if a is not type(None))
      node[name] = ml_collections.config_dict.placeholder(kind)
    else:
      node[name] = field
  return node


def section_types(cls: type | None = None, prefix: str = "") -> Iterator[tuple[type, str]]:
  """(each dataclass of the config's tree, the dotted prefix of its fields)."""
  cls = cls or config_type()
  yield cls, prefix
  for name, hint in _hints(cls).items():
    if dataclasses.is_dataclass(hint):
      yield from section_types(hint, f"{prefix}{name}.")


_FIELD = re.compile(r"^  (\w+)\s*:[^=#]*=\s*(.*)$")
_TRAILING = re.compile(r"\s#\s?(.*)$")


def _comment(line: str) -> tuple[str, int]:
  """The text of a comment line and the column it starts at."""
  after = line[line.index("#") + 1 :]
  return after.strip(), len(line) - len(after.lstrip())


def source_docs(source: str, prefix: str = "") -> dict[str, str]:
  """{dotted field: doc} of a dataclass's source: a field's trailing comment, with the
  comment lines aligned under it, or else the comment block just above it."""
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
    found = _FIELD.match(line)
    trailing = _TRAILING.search(found.group(2)) if found else None
    if found:
      docs[prefix + found.group(1)] = trailing.group(1).strip() if trailing else " ".join(block)
    last = prefix + found.group(1) if trailing else None
    column = _comment(line)[1] if trailing else -1
    block = []
  return docs


def field_docs() -> dict[str, str]:
  """Every dotted field's one-line meaning, from its dataclass's source."""
  docs: dict[str, str] = {}
  for cls, prefix in section_types():
    for base in reversed(cls.__mro__):
      if dataclasses.is_dataclass(base) and base.__module__ != __name__:
        try:
          docs.update(source_docs(inspect.getsource(base), prefix))
        except (OSError, TypeError):  # a section defined where its source is not kept
          pass
  return docs
