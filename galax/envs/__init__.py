"""Environments behind one interface (`base.Env`), from backends that each describe
themselves with an `EnvBackend` (`backend.py`): envpool pools stepped inside jitted code
(`pool.py`), gymnax's JAX envs vmapped inside the learner program (`gymnax_env.py`, ids
"gymnax/...") and envs registered with gymnasium, stepped on the host (`gymnasium_env.py`,
ids "gymnasium/..."). See docs/environments.md."""

from __future__ import annotations

from typing import Sequence

from galax.envs import pool
from galax.envs.backend import EnvBackend, EnvSection, EnvSettings
from galax.envs.base import Env, EnvSpec, EnvState, Timestep
from galax.envs.gymnax_env import GymnaxEnv, is_gymnax_id
from galax.envs.pool import BatchedEnv
from galax.envs.pool_options import ATARI_DEFAULTS
from galax.envs.registry import backend_for, backends, register, unregister

__all__ = [
  "ATARI_DEFAULTS",
  "BatchedEnv",
  "Env",
  "EnvBackend",
  "EnvSection",
  "EnvSettings",
  "EnvSpec",
  "EnvState",
  "GymnaxEnv",
  "Timestep",
  "backend_for",
  "check_env_id",
  "env_family",
  "is_gymnax_id",
  "known_env_ids",
  "make_env",
  "pool",
  "register",
  "unregister",
]


def env_family(env_id: str) -> str:
  """The id's game family: "gymnax", or envpool's package ("atari", "classic_control", ...)."""
  return backend_for(env_id).family(env_id)


def known_env_ids() -> list[str]:
  return [env_id for backend in backends() for env_id in backend.known_ids()]


def check_env_id(env_id: str) -> None:
  """Raises ValueError naming close matches if the backend that owns `env_id` lacks it,
  and the other backends' id for the same game where one has it ("gymnax/" + id)."""
  owner = backend_for(env_id)
  try:
    owner.check_id(env_id)
  except ValueError as e:
    for other in backends():
      if other is owner:
        continue
      same = [i for i in other.known_ids() if i.rsplit("/", 1)[-1] == env_id]
      if same:
        raise ValueError(
          f"Unknown env id {env_id!r}: {owner.name} has no such environment; "
          f"{other.name} has it as {same[0]!r}."
        ) from e
    # An id that fell through to the backend of unprefixed ids: say what the others take.
    forms = [f"{b.name}: {b.id_form}" for b in backends() if b is not owner and b.id_form]
    if owner.id_form or not forms:
      raise
    raise ValueError(f"{e} Other backends' ids: {'; '.join(forms)}.") from None


def make_env(
  env: EnvSettings,
  num_envs: int,
  seed: int,
  num_shards: int = 1,
  env_seeds: Sequence[Sequence[int]] | None = None,
) -> Env:
  """Builds the training envs `env` describes (`EnvSettings`, from the `env` section; see configs/),
  env j seeded `seed + j` (a run's: `config.seed` plus its first global env index).

  `env_seeds` (one list of seeds per shard) overrides the contiguous seeds.
  """
  return backend_for(env.id).make(env, num_envs, seed, num_shards, env_seeds)
