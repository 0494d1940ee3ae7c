"""The algorithm registry: `config.algorithm` names to their `AlgorithmSpec`s.

The table `MODULES` holds module names under galax/algorithms/, imported when first asked
(`specs()`). The algorithm modules import only `galax.framework.spec` (the type), never
this module, so the lazy imports close no cycle. Adding an algorithm touches two files:
its module (a builder and `SPECS`) and its name in `MODULES`.
"""

from __future__ import annotations

import importlib

from galax.framework.spec import AlgorithmSpec

MODULES = ("a2c", "ppo", "hts", "a3c", "impala")  # under galax.algorithms, each with SPECS
_extra: dict[str, AlgorithmSpec] = {}  # `register`ed outside MODULES (tests, experiments)


def specs() -> dict[str, AlgorithmSpec]:
  """Every algorithm's spec by name (the modules in `MODULES`, then `register`ed ones)."""
  found = {}
  for module in MODULES:
    for spec in importlib.import_module(f"galax.algorithms.{module}").SPECS:
      found[spec.name] = spec
  return {**found, **_extra}


def register(spec: AlgorithmSpec) -> None:
  """Adds an algorithm defined outside galax/algorithms/ (e.g. in a test)."""
  _extra[spec.name] = spec


def unregister(name: str) -> None:
  _extra.pop(name, None)


def spec_for(name: str) -> AlgorithmSpec:
  """The spec of `config.algorithm` = `name`; one ValueError line if there is none."""
  known = specs()
  if name not in known:
    raise ValueError(f"config.algorithm={name!r} is not one of {list(known)}.")
  return known[name]


def sections() -> dict[str, type]:
  """Every algorithm's own config sections by name (`AlgorithmSpec.sections`: the section's
  dataclass); a section two specs declare must be the same dataclass."""
  found: dict[str, type] = {}
  for spec in specs().values():
    for name, section in spec.sections.items():
      if found.setdefault(name, section) is not section:
        raise ValueError(
          f"config section {name!r} is declared twice, differently (algorithm {spec.name!r})."
        )
  return found
