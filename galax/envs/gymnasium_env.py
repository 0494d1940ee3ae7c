"""Gymnasium-API envs of one's own behind galax's env interface (`base.Env`), host-stepped.

Ids are "gymnasium/<id>" for any id registered with `gymnasium.register` (or with
"module:Id", whose module registers it on import, as `gymnasium.make` reads it):

  gymnasium.register("Corridor-v0", entry_point=Corridor, max_episode_steps=50)
  config.env.id = "gymnasium/Corridor-v0"

Each shard's envs are one `gymnasium.make_vec(id, num_envs, **config.env.options)`: the
registration's `vector_entry_point` (a `gymnasium.vector.VectorEnv` of one's own) where it
has one, else a `SyncVectorEnv` of the single env. `env.options` are `make_vec`'s keyword
arguments (e.g. `vectorization_mode="sync"`, or the env's own constructor arguments).

The envs run on the host. `send` only records the actions (they are the handle, as for
gymnax); `recv` steps the shard's vector env from inside the jitted rollout through
`jax.experimental.io_callback`, so the rest of galax runs unchanged (slower: one host
round trip per step, docs/environments.md measures it). The env state lives in Python,
so a resumed run resets its envs, as envpool's do.

Semantics, matched to envpool's (`pool.py`): the vector env must auto-reset on the next
step (gymnasium's default, `AutoresetMode.NEXT_STEP`): a step that ends an episode returns
its real final observation, and the next step ignores its action, returns the new
episode's first observation and has `valid=False`. Termination zeroes the discount,
truncation (the time limit) bootstraps. Env j has seed `seed + j` (its first reset's).
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from galax.envs.backend import EnvBackend, EnvSettings, Frames, Policy, reject_envpool_options
from galax.envs.base import EnvSpec, EnvState, StepsInRecv, Timestep, to_timestep

if TYPE_CHECKING:
  import gymnasium

PREFIX = "gymnasium/"
_HINT = (
  "register it with gymnasium.register(id, entry_point=..., max_episode_steps=...) "
  "before training, or name its module as 'gymnasium/<module>:<id>'"
)


def is_gymnasium_id(env_id: str) -> bool:
  return env_id.startswith(PREFIX)


def gymnasium_env_ids() -> list[str]:
  import gymnasium

  return [PREFIX + name for name in gymnasium.registry]


def _import_here_too(module: str) -> None:
  """Imports `module`, from the working directory too, as `python -m` would: the installed
  `galax` command (a console script) does not put it on sys.path."""
  try:
    importlib.import_module(module)
  except ModuleNotFoundError as e:
    here = os.getcwd()
    if e.name != module.split(".")[0] or here in sys.path or "" in sys.path:
      raise
    sys.path.insert(0, here)
    importlib.import_module(module)


def registration(env_id: str) -> gymnasium.envs.registration.EnvSpec:
  """The gymnasium registration of "gymnasium/[module:]<id>" (its module imported first);
  one ValueError line, with close matches, if there is none."""
  import gymnasium

  name = env_id.removeprefix(PREFIX)
  if ":" in name:
    module, name = name.split(":", 1)
    try:
      _import_here_too(module)
    except ImportError as e:
      raise ValueError(
        f"Unknown env id {env_id!r}: module {module!r} does not import ({e})."
      ) from None
  if name in gymnasium.registry:
    return gymnasium.registry[name]
  close = difflib.get_close_matches(name, list(gymnasium.registry), n=5)
  hint = f" Did you mean one of {[PREFIX + c for c in close]}?" if close else ""
  raise ValueError(
    f"Unknown env id {env_id!r}: no env {name!r} is registered with gymnasium ({_HINT}).{hint}"
  )


def _check_id(env_id: str) -> None:
  registration(env_id)


def _make_vec(
  env_id: str,
  num_envs: int,
  time_limit: int | None,
  options: Mapping[str, Any],
  render: bool = False,
) -> gymnasium.vector.VectorEnv:
  """One shard's vector env; one ValueError line if gymnasium cannot build it or it does
  not auto-reset on the next step."""
  import gymnasium

  spec = registration(env_id)
  kwargs = dict(options, render_mode="rgb_array") if render else dict(options)
  try:
    env = gymnasium.make_vec(spec.id, num_envs, max_episode_steps=time_limit, **kwargs)
  except Exception as e:  # the user's constructor
    raise ValueError(
      f"gymnasium could not build {env_id!r} ({type(e).__name__}: "
      f"{' '.join(str(e).split())[:200]})."
    ) from None
  mode = env.metadata.get("autoreset_mode", gymnasium.vector.AutoresetMode.NEXT_STEP)
  if mode != gymnasium.vector.AutoresetMode.NEXT_STEP:
    env.close()
    raise ValueError(
      f"{env_id!r} auto-resets in {mode}: galax steps gymnasium vector envs "
      "that reset on the next step (AutoresetMode.NEXT_STEP, the default)."
    )
  return env


def _time_limit(env: EnvSettings, limit: int | None) -> int:
  """The time limit in agent steps: `limit` (the config's), else the registration's."""
  limit = limit or registration(env.id).max_episode_steps
  if not limit:
    raise ValueError(
      f"{env.id!r} has no time limit: set config.env.max_episode_steps (or "
      "max_episode_steps in its gymnasium.register), which evaluations need."
    )
  return int(limit)


class GymnasiumEnv(StepsInRecv):
  """`num_envs * num_shards` envs of a registered gymnasium id (see the module docstring).

  Args:
    env: the run's `EnvSettings` (`id`: "gymnasium/<id>"; `options`: make_vec's arguments).
    num_envs: envs per shard (one vector env per shard).
    seed: env j of shard s has seed `seed + s * num_envs + j`.
    num_shards: shards (local devices), each with its own vector env.
    time_limit: the time limit in agent steps (0: as `env` says, else the registration's).
    env_seeds: optional explicit seeds, one list of `num_envs` seeds per shard.
  """

  state_restorable = False  # the env state lives in the host's Python objects

  def __init__(
    self,
    env: EnvSettings,
    num_envs: int,
    seed: int = 0,
    num_shards: int = 1,
    time_limit: int = 0,
    env_seeds: Sequence[Sequence[int]] | None = None,
  ):
    if num_envs < 1 or num_shards < 1:
      raise ValueError(f"num_envs ({num_envs}) and num_shards ({num_shards}) must be >= 1.")
    if env_seeds is None:
      env_seeds = [[seed + s * num_envs + j for j in range(num_envs)] for s in range(num_shards)]
    if len(env_seeds) != num_shards or any(len(x) != num_envs for x in env_seeds):
      raise ValueError(f"env_seeds must hold {num_shards} list(s) of {num_envs} seeds.")
    self._seeds = [[int(x) for x in shard] for shard in env_seeds]
    self.num_envs, self.num_shards, self.seed = num_envs, num_shards, seed
    limit = _time_limit(env, time_limit or env.max_episode_steps)
    self._envs = [_make_vec(env.id, num_envs, limit, env.options) for _ in range(num_shards)]
    self.spec = _make_spec(env.id, self._envs[0], limit)
    obs = jax.ShapeDtypeStruct((num_envs, *self.spec.obs_shape), self.spec.obs_dtype)
    flags = jax.ShapeDtypeStruct((num_envs,), jnp.bool_)
    self._result = (obs, jax.ShapeDtypeStruct((num_envs,), jnp.float32), flags, flags)

  @property
  def total_envs(self) -> int:
    return self.num_envs * self.num_shards

  def reset(self) -> EnvState:
    """Resets every shard's envs with their seeds; fields are [num_shards * num_envs, ...]."""
    obs = np.concatenate(
      [
        np.asarray(env.reset(seed=_seed_arg(seeds))[0], self.spec.obs_dtype)
        for env, seeds in zip(self._envs, self._seeds)
      ]
    )
    n = obs.shape[0]
    return EnvState(
      handle=jnp.zeros((n,), jnp.int32),
      obs=jnp.asarray(obs),
      reset_next=jnp.zeros((n,), bool),
      episode_return=jnp.zeros((n,), jnp.float32),
      episode_length=jnp.zeros((n,), jnp.int32),
    )

  def close(self) -> None:
    jax.effects_barrier()  # no dispatched step may still call into a closed env
    for env in self._envs:
      env.close()

  def recv(self, state: EnvState, shard_index: int | jax.Array = 0) -> tuple[EnvState, Timestep]:
    """Steps the shard's vector env on the host with the actions in `state.handle`; each
    step's actions depend on the last step's observations, which orders the calls."""
    obs, reward, terminated, truncated = io_callback(
      self._host_step, self._result, state.handle, jnp.asarray(shard_index, jnp.int32)
    )
    return to_timestep(
      state,
      obs,
      reward,
      terminated,
      truncated,
      handle=state.handle,
      backend=(),
      reset_after_termination=True,
    )

  def _host_step(
    self, actions: np.ndarray, shard: np.ndarray
  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    obs, reward, terminated, truncated, _ = self._envs[int(shard)].step(np.asarray(actions))
    return (
      np.asarray(obs, self.spec.obs_dtype),
      np.asarray(reward, np.float32),
      np.asarray(terminated, bool),
      np.asarray(truncated, bool),
    )


def _seed_arg(seeds: list[int]) -> int | list[int]:
  """Contiguous seeds as their first (gymnasium's vector envs seed env j with seed + j; a
  vector env of one's own may take only an int), others as the list."""
  return seeds[0] if seeds == list(range(seeds[0], seeds[0] + len(seeds))) else seeds


def _make_spec(env_id: str, env: gymnasium.vector.VectorEnv, time_limit: int) -> EnvSpec:
  space, actions = env.single_observation_space, env.single_action_space
  if not hasattr(actions, "n") or getattr(actions, "start", 0) != 0:
    raise ValueError(
      f"{env_id!r} has the action space {actions}; galax's actor-critic heads "
      "are categorical (gymnasium.spaces.Discrete(n), starting at 0)."
    )
  shape = tuple(space.shape or ())
  if len(shape) not in (1, 3):
    raise ValueError(
      f"{env_id!r} has observations of shape {shape}; galax's networks take "
      "vectors or HWC images (a Box of rank 1 or 3)."
    )
  dtype = np.dtype(space.dtype)
  dtype = np.dtype(np.float32) if dtype == np.float64 else dtype  # JAX computes in 32 bits
  return EnvSpec(
    env_id=env_id,
    family="gymnasium",
    obs_shape=shape,
    obs_dtype=dtype,
    num_actions=int(actions.n),
    obs_layout="flat" if len(shape) == 1 else "HWC",
    max_episode_steps=time_limit,
  )


def _make(
  env: EnvSettings,
  num_envs: int,
  seed: int,
  num_shards: int,
  env_seeds: Sequence[Sequence[int]] | None,
) -> GymnasiumEnv:
  return GymnasiumEnv(env, num_envs, seed, num_shards, env_seeds=env_seeds)


def _make_eval(env: EnvSettings, num_envs: int, seed: int) -> GymnasiumEnv:
  return GymnasiumEnv(env, num_envs, seed, time_limit=env.eval_time_limit or 0)


def _validate(env: EnvSettings) -> None:
  """Rejects envpool's settings (`env.options` are the env's own keyword arguments);
  checks the time limit."""
  reject_envpool_options(env, "gymnasium", options=False)
  _time_limit(env, env.max_episode_steps)


def _renders(env_id: str) -> bool:
  """Whether the env draws `render_mode="rgb_array"` frames, tried on one env; one
  ValueError line saying why it cannot (a missing drawing package, say)."""
  vec = None
  try:
    vec = _make_vec(env_id, 1, registration(env_id).max_episode_steps, {}, render=True)
    vec.reset(seed=0)
    frames = vec.render()
  except Exception as e:  # the user's env
    raise ValueError(
      f"config.capture_video=True: {env_id!r} does not render "
      f"({type(e).__name__}: {' '.join(str(e).split())[:200]})."
    ) from None
  finally:
    if vec is not None:
      vec.close()
  return frames is not None and np.asarray(frames[0]).ndim == 3


def _episodes(env: EnvSettings, policy: Policy, episodes: int, seed: int) -> Frames:
  """(frame, return so far, episode) of each step of `episodes` games on one env drawn by its
  own `render()` (render_mode="rgb_array")."""
  vec = _make_vec(env.id, 1, _time_limit(env, env.eval_time_limit), env.options, render=True)
  key = jax.random.PRNGKey(seed)
  try:
    for episode in range(episodes):
      obs, _ = vec.reset(seed=seed + episode)
      total, done = 0.0, False
      while not done:
        yield np.asarray(vec.render()[0]), total, episode
        key, act_key = jax.random.split(key)
        obs, reward, terminated, truncated, _ = vec.step(np.asarray(policy(obs, act_key)))
        total += float(reward[0])
        done = bool(terminated[0] or truncated[0])
      yield np.asarray(vec.render()[0]), total, episode
  finally:
    vec.close()


BACKEND = EnvBackend(
  name="gymnasium",
  owns=is_gymnasium_id,
  known_ids=gymnasium_env_ids,
  check_id=_check_id,
  family=lambda env_id: "gymnasium",
  make=_make,
  make_eval=_make_eval,
  validate=_validate,
  episodes=_episodes,
  renders=_renders,
  id_form="gymnasium/<id registered with gymnasium.register>",
  in_program=False,
)
