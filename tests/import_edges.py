"""Prints, as JSON, every import between galax modules made while importing all of galax
and asking both registries for their entries (their lazy imports included): the runtime
import graph's edges [importer, imported] (tests/project/test_structure.py)."""

import builtins
import importlib
import importlib.util
import json
import pkgutil
import sys

EDGES = set()
_import, _import_module = builtins.__import__, importlib.import_module


def _record(importer: str, target: str) -> None:
  if importer.startswith("galax") and target.startswith("galax") and importer != target:
    EDGES.add((importer, target))


def _hooked_import(name, globals=None, locals=None, fromlist=(), level=0):
  module = _import(name, globals, locals, fromlist, level)
  globals = globals or {}
  base = (
    importlib.util.resolve_name("." * level + name, globals.get("__package__")) if level else name
  )
  _record(globals.get("__name__", ""), base)
  for item in fromlist or ():
    if f"{base}.{item}" in sys.modules:  # `from package import module`
      _record(globals.get("__name__", ""), f"{base}.{item}")
  return module


def _hooked_import_module(name, package=None):
  _record(
    sys._getframe(1).f_globals.get("__name__", ""),
    importlib.util.resolve_name(name, package) if name.startswith(".") else name,
  )
  return _import_module(name, package)


def main() -> None:
  builtins.__import__ = _hooked_import
  importlib.import_module = _hooked_import_module
  import galax

  for info in pkgutil.walk_packages(galax.__path__, "galax."):
    _import_module(info.name)
  from galax.algorithms import registry as algorithm_registry
  from galax.envs import registry

  algorithm_registry.specs()
  registry.backends()
  print(json.dumps(sorted(EDGES)))


if __name__ == "__main__":
  main()
