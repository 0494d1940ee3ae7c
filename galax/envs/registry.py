"""The env backend registry: env ids to the `EnvBackend` that owns them.

Ids go to the first backend in `MODULES` order (then the `register`ed ones) that owns
them. Adding a backend touches two files: its module (an `Env` and `BACKEND`) and its
name in `MODULES`. The table holds module names, imported when first asked (envpool and
gymnax are heavy imports); the backends import only `galax.envs.backend` (the type), never
this module, so the lazy imports close no cycle.
"""

from __future__ import annotations

import importlib

from galax.envs.backend import EnvBackend

# Under galax.envs, each with BACKEND; ids go to the first owner, so envpool (which owns
# every id without a prefix) comes last.
MODULES = ("gymnax_env", "gymnasium_env", "pool")
_extra: list[EnvBackend] = []  # `register`ed outside MODULES (tests, user code)


def backends() -> list[EnvBackend]:
  """Every backend, in the order ids are offered to them (`register`ed ones first)."""
  return _extra + [importlib.import_module(f"galax.envs.{m}").BACKEND for m in MODULES]


def register(backend: EnvBackend) -> None:
  """Adds a backend defined outside galax/envs/ (offered ids before the built-in ones)."""
  unregister(backend.name)
  _extra.insert(0, backend)


def unregister(name: str) -> None:
  _extra[:] = [b for b in _extra if b.name != name]


def backend_for(env_id: str) -> EnvBackend:
  """The backend that owns `env_id` (one ValueError line if none does)."""
  for backend in backends():
    if backend.owns(env_id):
      return backend
  raise ValueError(
    f"Unknown env id {env_id!r}: no env backend owns it (backends: {[b.name for b in backends()]})."
  )
