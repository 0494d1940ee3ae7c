"""The run's config: its typed form, the ConfigDict that config files edit, `load`.

The config is one frozen dataclass per section, each beside the code that reads it, and
the shared fields in galax/config/schema.py (`Config`); `typed.config_type` adds each
algorithm's own sections. Everything else comes from the dataclasses
(galax/config/typed.py): `base_config()`, the locked ConfigDict that experiment files in
configs/ start from and that `--config.<field>=` flags edit (a misspelt field is an error
and ml_collections keeps each field's type); config.json, written and read back
(`to_data`, `from_data`); `--help_config`'s meanings; the fields meant by a misspelt one.
`validate` (galax/config/validate.py) checks what crosses fields.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import ml_collections

import galax.config.typed as typed
from galax.config import fields as field_names
from galax.config.schema import Config  # noqa: F401
from galax.config.settings import make_algorithm, run_settings  # noqa: F401
from galax.config.typed import from_data, to_data, with_fields  # noqa: F401

# Re-exported: users and configs reach `validate` as galax.config.validate.
from galax.config.validate import validate  # noqa: F401


def _configs_dir() -> str:
  """configs/ of a checkout, or the installed copy (pyproject maps it to galax.configs)."""
  galax_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  checkout = os.path.join(os.path.dirname(galax_dir), "configs")
  if os.path.isdir(checkout):
    return checkout
  spec = importlib.util.find_spec("galax.configs")
  if spec is not None and spec.submodule_search_locations:
    return list(spec.submodule_search_locations)[0]
  return checkout


CONFIGS_DIR = _configs_dir()


def base_config() -> ml_collections.ConfigDict:
  """Every field galax reads, with its default, as the locked ConfigDict a config file
  edits: a misspelt field is an error."""
  return typed.config_dict(typed.defaults())


def config_names() -> list[str]:
  """The names of the configs in configs/ ("pong_paac", ...)."""
  return sorted(
    f[:-3] for f in os.listdir(CONFIGS_DIR) if f.endswith(".py") and not f.startswith("_")
  )


def config_path(name_or_path: str) -> str:
  """The file of a config: an existing file, or a name in configs/ ("pong_paac").

  Raises FileNotFoundError (one line, listing the available names) otherwise.
  """
  if os.path.isfile(name_or_path):
    return name_or_path
  path = os.path.join(CONFIGS_DIR, f"{os.path.basename(name_or_path).removesuffix('.py')}.py")
  if os.sep not in name_or_path and os.path.isfile(path):
    return path
  names = config_names()
  raise FileNotFoundError(
    f"No config {name_or_path!r}: not a file, and not one of {', '.join(names)} (in {CONFIGS_DIR})."
  )


def load(name_or_path: str, **overrides: Any) -> ml_collections.ConfigDict:
  """Loads an experiment config: a name in configs/ ("pong_paac") or a file path.

  Keyword overrides use '__' for nesting: load("pong_paac", optimizer__eps=0.01). A
  keyword that names no field is one ValueError naming the fields meant.
  """
  path = config_path(name_or_path)
  spec = importlib.util.spec_from_file_location(f"galax_config_{os.path.basename(path)[:-3]}", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = module.get_config()
  if not isinstance(config, ml_collections.ConfigDict):  # its fields would go unchecked
    raise ValueError(
      f"config file {path}: get_config() returned a {type(config).__name__}, not the ConfigDict of "
      "galax.config.base_config() with its fields set (as configs/cartpole_a2c.py does)."
    )
  fields = {key.replace("__", "."): value for key, value in overrides.items()}
  for dotted in fields:
    _check_keyword(config, dotted, name_or_path)
  note = foreign_target(config, fields, name_or_path, "target_return=X")
  if note:
    fields["target_return"] = 0.0
    print(f"note: {note}")
  return set_fields(config, fields)


def _check_keyword(config: ml_collections.ConfigDict, dotted: str, name: str) -> None:
  """ValueError (one line) if load's keyword `dotted` names no field: a locked ConfigDict's
  own KeyError prints every field of the config."""
  found = field_names.unknown_part(config, dotted)
  if found is None:
    return
  keyword = lambda path: path.replace(".", "__")
  close = ", ".join(f"{keyword(c)}=" for c in found[1])
  raise ValueError(
    f"load_config({name!r}): no field {found[0]!r} (keyword {keyword(dotted)}=)."
    + (f" Did you mean {close}?" if close else "")
  )


def foreign_target(
  config: ml_collections.ConfigDict, overrides: dict[str, Any], name: str, how: str
) -> str | None:
  """The line saying a config's target_return was cleared, or None to keep it.

  A config's target is a score on its own env (pong_fast's 18 is Pong's solved level):
  `overrides` that change env.id but not target_return would carry it to another game, and
  stop that run at a score that means nothing there (18 on Breakout is an early stage).
  A target given with the new env is the user's own and stays, and so does the target of
  the same game on another backend. `how`: how to set one.
  """
  env_id = overrides.get("env.id")
  game = lambda i: str(i).rsplit("/", 1)[-1]  # gymnax/CartPole-v1 plays CartPole-v1
  if env_id is None or "target_return" in overrides or not config.target_return:
    return None
  if game(env_id) == game(config.env.id):
    return None
  source = os.path.basename(name).removesuffix(".py")
  return (
    f"target_return={config.target_return:g} is {source}'s target on {config.env.id}, not on "
    f"{env_id}: cleared, so the run goes to total_env_steps ({how} stops it at a running mean of X)"
  )


def set_fields(
  config: ml_collections.ConfigDict, values: dict[str, Any]
) -> ml_collections.ConfigDict:
  """Sets dotted fields in place ({"optimizer.name": "adam"}); returns the config."""
  for key, value in values.items():
    node = config
    *parents, leaf = key.split(".")
    for parent in parents:
      node = node[parent]
    node[leaf] = value
  return config
