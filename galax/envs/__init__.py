"""Environments behind one interface (`base.Env`): envpool pools stepped inside jitted
code (`pool.py`) or gymnax's JAX envs vmapped inside the learner program
(`gymnax_env.py`, ids "gymnax/..."). See docs/environments.md."""

from __future__ import annotations

from galax.envs import pool
from galax.envs.base import Env, EnvSpec, EnvState, Timestep
from galax.envs.gymnax_env import GymnaxEnv, check_gymnax_id, gymnax_env_ids, is_gymnax_id
from galax.envs.pool import ATARI_DEFAULTS, BatchedEnv

__all__ = ["ATARI_DEFAULTS", "BatchedEnv", "Env", "EnvSpec", "EnvState", "GymnaxEnv",
           "Timestep", "check_env_id", "env_family", "is_gymnax_id", "known_env_ids",
           "make_env"]


def env_family(env_id: str) -> str:
  """"gymnax" for gymnax ids, else envpool's package: "atari", "classic_control", ..."""
  return "gymnax" if is_gymnax_id(env_id) else pool.env_family(env_id)


def known_env_ids() -> list[str]:
  return pool.known_env_ids() + gymnax_env_ids()


def check_env_id(env_id: str) -> None:
  """Raises ValueError naming close matches if no backend knows `env_id`."""
  if is_gymnax_id(env_id):
    check_gymnax_id(env_id)
    return
  try:
    pool.check_env_id(env_id)
  except ValueError as e:
    if "gymnax/" + env_id in gymnax_env_ids():
      raise ValueError(f"Unknown env id {env_id!r}: envpool has no such environment; gymnax "
                       f"has it as {'gymnax/' + env_id!r}.") from e
    raise


def make_env(config, num_envs: int, num_shards: int = 1, seed_offset: int = 0,
             env_seeds=None) -> Env:
  """Builds the training envs described by `config.env` (see configs/).

  `env_seeds` (one list of seeds per shard) overrides the contiguous seeds.
  """
  env = config.env
  if is_gymnax_id(env.id):
    return GymnaxEnv(env.id, num_envs=num_envs, seed=config.seed + seed_offset,
                     num_shards=num_shards, max_episode_steps=env.max_episode_steps or None,
                     env_seeds=env_seeds)
  return BatchedEnv(
      env_id=env.id,
      num_envs=num_envs,
      seed=config.seed + seed_offset,
      num_shards=num_shards,
      episodic_life=env.episodic_life,
      reward_clip=env.reward_clip,
      max_episode_steps=env.max_episode_steps or None,
      num_threads=env.num_threads,
      extra_options=dict(env.options),
      env_seeds=env_seeds,
  )
