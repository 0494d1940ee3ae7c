"""What the rest of galax may know about an env backend: its `EnvBackend`.

Each backend module (galax/envs/pool.py: envpool; galax/envs/gymnax_env.py: gymnax;
galax/envs/gymnasium_env.py: registered gymnasium envs, host-stepped) defines
`BACKEND` next to its `Env`; galax/envs/registry.py gives env ids to their owners.
Training envs (`make_env`), config checks, evaluation envs, videos, the frames-per-step
count and `galax.aot.compile` ask the backend, so no module outside a backend's own tells backends
apart by id.

This module is the type only: it imports no backend and no registry, so the backends that
import it form no cycle with the registry that imports them.
"""

from __future__ import annotations

import dataclasses
import types
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
  import jax

  from galax.envs.base import Env

# A policy as videos play it: (obs [1, ...], key) -> actions [1].
Policy = Callable[[np.ndarray, "jax.Array"], np.ndarray]
# (frame [H, W, 3] uint8, return so far, episode index) of each step of a video's games.
Frames = Iterator[tuple[np.ndarray, float, int]]


@dataclasses.dataclass(frozen=True, kw_only=True)
class EnvSection:
  """The `env` section of a run's config: the training envs (docs/environments.md)."""

  # any envpool id (Pong-v5, Breakout-v5, gfootball/academy_...-v1) or gymnax id
  # (gymnax/CartPole-v1, gymnax/Breakout-MinAtar: docs/environments.md)
  id: str = "CartPole-v1"
  episodic_life: bool = False  # Atari: a lost life ends the *training* episode
  reward_clip: bool = False  # Atari: clip training rewards to [-1, 1] (stats stay raw)
  max_episode_steps: int = 0  # time limit in agent steps; 0 = the env's default
  num_threads: int = 0  # envpool worker threads per pool; 0 = envpool's choice (envpool only)
  # envpool's async mode: each step acts in the first batch_size of a learner's envs to
  # finish; divides envs_per_learner; 0 = all (sync). A2C, PPO, one learner; not reproducible
  batch_size: int = 0
  # Extra envpool.make options (validated against the env's own), set in a config file:
  # env.options = ml_collections.ConfigDict(dict(noop_max=0)).
  options: Mapping[str, Any] = types.MappingProxyType({})


@dataclasses.dataclass(frozen=True, kw_only=True)
class EnvSettings(EnvSection):
  """What the backends' hooks read of a run's config: the `env` section, and the
  evaluation's time limit and no-op starts (`eval`)."""

  eval_noop_max: int
  eval_max_episode_steps: int  # 0 = as max_episode_steps

  @property
  def eval_time_limit(self) -> int | None:
    """The evaluation's time limit in agent steps (None: the env's own)."""
    return self.eval_max_episode_steps or self.max_episode_steps or None


def reject_envpool_options(env: EnvSettings, family: str, options: bool = True) -> None:
  """One line for a setting only envpool acts on (episodic life, reward clipping, worker
  threads, async batches and, unless the family takes them, `env.options`), and for a
  negative time limit: the validate hook of a backend that is not envpool."""
  envpool_only = dict(
    episodic_life=env.episodic_life,
    reward_clip=env.reward_clip,
    num_threads=env.num_threads,
    batch_size=env.batch_size,
  )
  if options:
    envpool_only["options"] = dict(env.options)
  for name, value in envpool_only.items():
    if value:
      raise ValueError(
        f"config.env.{name}={value!r} is an envpool option; the {family} env "
        f"{env.id!r} has no such setting (leave it unset)."
      )
  if env.max_episode_steps < 0:
    raise ValueError(f"config.env.max_episode_steps must be >= 0, got {env.max_episode_steps}.")


def _no_videos(env: EnvSettings, policy: Policy, episodes: int, seed: int) -> Frames:
  raise ValueError(f"no renderer for {env.id!r}: its backend draws no frames.")


@dataclasses.dataclass(frozen=True)
class EnvBackend:
  """One env backend as the rest of galax sees it.

  name: shown in messages ("envpool", "gymnax").
  owns: whether an env id is this backend's (a prefix such as "gymnax/", or anything).
  known_ids: every id it can build (close-match hints in messages).
  check_id: raises one ValueError line naming close matches for an id it owns but lacks.
  family: the id's game family ("atari", "classic_control", "gymnax", ...): `EnvSpec.family`.
  The hooks take the run's `EnvSettings`:
  make: `make(env, num_envs, seed, num_shards, env_seeds)` -> the training `Env`.
  make_eval: `make_eval(env, num_envs, seed)` -> evaluation envs (full games, raw
    rewards, the evaluation's no-op starts where the backend has them).
  validate: raises one ValueError line for an env option the backend would ignore.
  episodes: `episodes(env, policy, episodes, seed)` -> `Frames` for `galax.envs.video`.
  renders: whether `episodes` draws frames of an id (`config.capture_video` asks first; a
    backend may raise one ValueError line saying why not).
  frames_per_step: emulator frames per agent step (Atari's frame skip; else 1).
  id_form: how its ids look, for the line that rejects an id no backend has.
  in_program: the envs step inside the XLA program (vmapped JAX code), so a program that
    holds them compiles for any accelerator (`galax.aot.compile`) and has no host stepping to
    overlap (HTS-RL's micro-batches); False for envs stepped by host threads.
  """

  name: str
  owns: Callable[[str], bool]
  known_ids: Callable[[], list[str]]
  check_id: Callable[[str], None]
  family: Callable[[str], str]
  make: Callable[[EnvSettings, int, int, int, Sequence[Sequence[int]] | None], Env]
  make_eval: Callable[[EnvSettings, int, int], Env]
  validate: Callable[[EnvSettings], None] = lambda env: None
  episodes: Callable[[EnvSettings, Policy, int, int], Frames] = _no_videos
  renders: Callable[[str], bool] = lambda env_id: False
  frames_per_step: Callable[[EnvSettings], int] = lambda env: 1
  id_form: str = ""
  in_program: bool = False
