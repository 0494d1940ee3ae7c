"""envpool's ids and options (host side, without JAX): which ids envpool has (`check_env_id`
names close matches), an id's family, the papers' Atari preprocessing (`ATARI_DEFAULTS`) and
the `envpool.make` keyword arguments of an env, checked against its id's config keys
(`env_options`). `pool.BatchedEnv` and the envpool backend's hooks build their pools with
them.
"""

from __future__ import annotations

import difflib
from typing import Any

# Atari preprocessing of the papers (PAAC, GALA, HTS-RL): 84x84 gray, frame skip 4 with a
# max over the last two frames (envpool always max-pools), stack 4, up to 30 no-op starts.
ATARI_DEFAULTS = dict(
  img_height=84,
  img_width=84,
  gray_scale=True,
  frame_skip=4,
  stack_num=4,
  noop_max=30,
  repeat_action_probability=0.0,
)


def env_family(env_id: str) -> str:
  """envpool's package for the id: "atari", "classic_control", "gfootball", ..."""
  from envpool.registration import registry

  import_path = registry.specs[env_id][0]  # e.g. "envpool.atari"
  return import_path.split(".")[1]


def known_env_ids() -> list[str]:
  import envpool

  return list(envpool.list_all_envs())


def check_env_id(env_id: str) -> None:
  """Raises ValueError naming close matches if envpool does not know `env_id`."""
  ids = known_env_ids()
  if env_id not in ids:
    close = difflib.get_close_matches(env_id, ids, n=5)
    hint = f" Did you mean one of {close}?" if close else ""
    raise ValueError(
      f"Unknown env id {env_id!r}: envpool has no such environment.{hint} "
      "(envpool.list_all_envs() lists all of them.)"
    )


def env_options(
  env_id: str,
  family: str,
  episodic_life: bool,
  reward_clip: bool,
  max_episode_steps: int | None,
  num_threads: int,
  extra: dict[str, Any] | None,
) -> dict[str, Any]:
  """The envpool.make keyword arguments for an env, validated against its config keys."""
  import envpool

  options: dict[str, Any] = {}
  if family == "atari":
    options.update(ATARI_DEFAULTS)
    options.update(episodic_life=episodic_life, reward_clip=reward_clip)
  if max_episode_steps:
    options["max_episode_steps"] = int(max_episode_steps)
  options["num_threads"] = int(num_threads)
  options.update(extra or {})
  allowed = set(envpool.make_spec(env_id).config._fields)  # type: ignore[attr-defined]
  unknown = sorted(set(options) - allowed)
  if unknown:
    raise ValueError(
      f"Unknown envpool option(s) {unknown} for {env_id!r}; "
      f"valid options are {sorted(allowed - {'num_envs', 'seed', 'batch_size'})}."
    )
  return options
