"""Environments: envpool pools stepped inside jitted code (see `pool.py`)."""

from galax.envs.pool import (ATARI_DEFAULTS, BatchedEnv, EnvSpec, EnvState, Timestep,
                             check_env_id, env_family, known_env_ids)

__all__ = ["ATARI_DEFAULTS", "BatchedEnv", "EnvSpec", "EnvState", "Timestep", "check_env_id",
           "env_family", "known_env_ids", "make_env"]


def make_env(config, num_envs: int, num_shards: int = 1, seed_offset: int = 0,
             env_seeds=None) -> BatchedEnv:
  """Builds the training envs described by `config.env` (see configs/).

  `env_seeds` (one list of seeds per shard) overrides the contiguous seeds.
  """
  env = config.env
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
