"""Periodic evaluation of the learners' policies on separate environments.

The papers score agents on evaluation episodes, not on the training stream:

* full games: no episodic life, raw (unclipped) rewards, the env's own time limit;
* up to 30 no-op actions at the start of each Atari episode (envpool's `noop_max`);
* greedy actions argmax_a pi(a|s) (GALA Table 1) or actions sampled from pi (config);
* N episodes per evaluated policy (10 in GALA and HTS-RL).

An `Evaluator` owns its own envs (`eval_env`) (seeds disjoint from the training envs') and one
jitted `lax.while_loop` that plays every eval env until each has finished its quota of
episodes. It never touches the training state, so a run trains bit for bit the same with
evaluation on or off.

Which learner is evaluated (`config.eval.learners`):
  first    learner 0 (default). All-reduce learners are identical and GALA learners stay
           within an epsilon-ball of each other, so one learner stands for the run.
  all      every learner, each on its own envs (independent seeds run as learners; the
           GALA per-learner spread).
  average  the learners' mean parameters (GALA's consensus model x-bar).
All evaluated policies run in one pool on the default device (not sharded).

`EvalHook` schedules evaluations inside `galax.training.loop.train` (every `eval.every_steps` env
steps, at the first call boundary after each multiple, and once at the end), times them
so that training time can exclude them, and writes `eval.csv`. The papers' metrics over
the resulting series are pure functions in `galax.results.paper_protocols`.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import time
from typing import Callable, NamedTuple, Protocol, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from ml_collections import ConfigDict

from galax.core.networks import NetworkSettings
from galax.core.rollout import init_action_keys, sample_actions
from galax.core.types import JsonDict, Params, ParamsBlock
from galax.envs import Env, EnvSettings, EnvState, backend_for
from galax.parallel.layout import to_host

# Eval env j has envpool seed config.seed + EVAL_SEED_OFFSET + j: disjoint from the training
# envs (seed + global env index) for any run with fewer than a million training envs.
EVAL_SEED_OFFSET = 1_000_000
_EVAL_KEY_TAG = 0x5EED  # folded into the sampling key so eval draws differ from training's


@dataclasses.dataclass(frozen=True)
class EvalSettings:
  """What evaluation reads of a run's config, read once (`RunSettings.from_config`): the
  `eval` section, the run's seed, its env and its network."""

  episodes: int  # per evaluated policy
  num_envs: int  # envs per policy; 0 = one per episode
  greedy: bool  # argmax actions (else sampled)
  learners: str  # first | all | average
  every_steps: int  # env steps between periodic evaluations; 0 = none
  seed: int  # the run's (`config.seed`)
  env: EnvSettings
  network: NetworkSettings  # builds the policy where no apply_fn is given

  @classmethod
  def from_config(cls, config: ConfigDict, env: EnvSettings, network: NetworkSettings
                  ) -> EvalSettings:
    """The `eval` section and the seed of `config`, with the run's `env` and `network`
    (`galax.config.settings.RunSettings.from_config` reads them)."""
    e = config.eval
    return cls(int(e.episodes), int(e.num_envs), bool(e.greedy), str(e.learners),
               int(e.every_steps), int(config.seed), env, network)


@dataclasses.dataclass
class EvalRecord:
  """One evaluation of one policy: its episodes' full-game raw returns and lengths."""

  env_steps: int
  train_time_s: float  # training wall time so far, evaluations excluded
  wall_time_s: float  # wall time so far, evaluations included
  learner: int  # evaluated learner; -1 = the learners' average parameters
  returns: list[float]
  lengths: list[int]

  @property
  def mean_return(self) -> float:
    return float(np.mean(self.returns)) if self.returns else float("nan")

  def to_json(self) -> JsonDict:
    return dataclasses.asdict(self)


class EvalOutput(NamedTuple):
  """Episodes of each evaluated policy, [P, episodes]; `completed` False where an episode
  did not end within the step budget (its return is NaN)."""

  returns: np.ndarray
  lengths: np.ndarray
  completed: np.ndarray


def eval_env(env: EnvSettings, seed: int, num_envs: int, seed_offset: int = 0) -> Env:
  """The evaluation envs of a run's `env` settings and `seed` (`config.seed`)
  (`EnvBackend.make_eval`: full games, raw rewards, eval no-op starts), seeded apart from
  the training envs."""
  return backend_for(env.id).make_eval(env, num_envs, seed + EVAL_SEED_OFFSET + seed_offset)


def make_play(apply_fn: Callable, env: Env, num_policies: int, episodes_per_env: int,
              greedy: bool) -> Callable:
  """A jitted `play(params [P, ...], env_state, keys [B, 2]) -> (returns, lengths, count)`.

  Env j of the pool (B = P * E envs) is played by policy j // E until it has finished
  `episodes_per_env` episodes; returns/lengths are [B, episodes_per_env], count is [B].
  The loop stops when every env has its quota or after a step budget that covers the
  quota at the env's time limit (plus one auto-reset step per episode).
  """
  num_envs = env.num_envs
  if num_envs % num_policies:
    raise ValueError(f"{num_envs} eval envs do not split over {num_policies} policies.")
  per_policy = num_envs // num_policies
  quota = episodes_per_env
  max_steps = quota * (env.spec.max_episode_steps + 1) + 1
  rows = jnp.arange(num_envs)

  def act(params, obs, keys):
    obs = obs.reshape(num_policies, per_policy, *obs.shape[1:])
    logits, _ = jax.vmap(apply_fn)(params, obs)
    logits = logits.reshape(num_envs, -1)
    if greedy:
      return keys, jnp.argmax(logits, axis=-1)
    return sample_actions(keys, logits)

  def play(params, env_state: EnvState, keys):
    def cond(carry):
      _, _, count, _, _, t = carry
      return jnp.any(count < quota) & (t < max_steps)

    def body(carry):
      env_state, keys, count, returns, lengths, t = carry
      keys, actions = act(params, env_state.obs, keys)
      env_state, ts = env.step(env_state, actions)
      record = ts.episode_over & (count < quota)
      slot = jnp.minimum(count, quota - 1)
      returns = returns.at[rows, slot].set(
          jnp.where(record, ts.episode_return, returns[rows, slot]))
      lengths = lengths.at[rows, slot].set(
          jnp.where(record, ts.episode_length, lengths[rows, slot]))
      return env_state, keys, count + record.astype(jnp.int32), returns, lengths, t + 1

    init = (env_state, keys, jnp.zeros((num_envs,), jnp.int32),
            jnp.full((num_envs, quota), jnp.nan, jnp.float32),
            jnp.zeros((num_envs, quota), jnp.int32), jnp.int32(0))
    _, _, count, returns, lengths, _ = jax.lax.while_loop(cond, body, init)
    return returns, lengths, count

  return jax.jit(play)


class Evaluator:
  """Evaluates `num_policies` parameter sets at once, `settings.episodes` episodes each.

  Args:
    settings: the run's `EvalSettings`.
    apply_fn: the network's apply, (params, obs [b, ...]) -> (logits, values); None builds
      the network of `settings.network`.
    num_policies: parameter sets per call (their leading axis).
    seed_offset: shifts the eval env seeds and sampling keys (e.g. fresh episodes for a
      best-policy re-evaluation).
  """

  def __init__(self, settings: EvalSettings, apply_fn: Callable | None = None,
               num_policies: int = 1, seed_offset: int = 0):
    self.episodes = settings.episodes
    self.envs_per_policy = settings.num_envs or self.episodes
    self.episodes_per_env = -(-self.episodes // self.envs_per_policy)
    self.num_policies = num_policies
    self.greedy = settings.greedy
    self.env = eval_env(settings.env, settings.seed, num_policies * self.envs_per_policy,
                        seed_offset)
    if apply_fn is None:
      apply_fn = settings.network.build(self.env.spec).apply
    self._play = make_play(apply_fn, self.env, num_policies, self.episodes_per_env,
                           self.greedy)
    self._key_seed = settings.seed + _EVAL_KEY_TAG + seed_offset
    self.calls = 0

  def evaluate(self, params: ParamsBlock) -> EvalOutput:
    """Plays fresh episodes with `params` (leading axis [num_policies]); blocks."""
    params = jax.tree.map(jnp.asarray, params)
    lead = {x.shape[0] for x in jax.tree.leaves(params)}
    if lead != {self.num_policies}:
      raise ValueError(f"params have leading axis {lead}; expected {{{self.num_policies}}}.")
    keys = init_action_keys(self._key_seed, self.calls * self.env.num_envs, self.env.num_envs)
    self.calls += 1
    returns, lengths, count = jax.tree.map(
        np.asarray, self._play(params, self.env.reset(), keys))
    e, k = self.envs_per_policy, self.episodes_per_env
    # Env-major order within a policy: env 0's episodes, then env 1's, ...; first N kept.
    shape = (self.num_policies, e * k)
    returns = returns.reshape(shape)[:, :self.episodes]
    lengths = lengths.reshape(shape)[:, :self.episodes]
    completed = (np.arange(k)[None, :] < count[:, None]).reshape(shape)[:, :self.episodes]
    return EvalOutput(returns, lengths, completed)

  def close(self) -> None:
    self.env.close()


def select_params(params: ParamsBlock, which: str, num_learners: int
                  ) -> tuple[ParamsBlock, list[int]]:
  """Host params [n, ...] -> (evaluated params [P, ...], learner ids; -1 = average)."""
  if which == "first":
    return jax.tree.map(lambda x: x[:1], params), [0]
  if which == "all":
    return params, list(range(num_learners))
  if which == "average":
    return jax.tree.map(lambda x: np.mean(x, axis=0, keepdims=True, dtype=x.dtype),
                        params), [-1]
  raise ValueError(f"config.eval.learners={which!r}; use 'first', 'all' or 'average'.")


def best_mean_return(records: Sequence[EvalRecord]) -> float:
  """The best evaluation so far: the highest mean over learners of one step's records."""
  by_step: dict[int, list[float]] = {}
  for r in records:
    by_step.setdefault(r.env_steps, []).append(r.mean_return)
  means = [float(np.mean(v)) for v in by_step.values() if np.all(np.isfinite(v))]
  return max(means, default=float("-inf"))


class VideoRecorder(Protocol):
  """Records a video at each evaluation (`config.capture_video`: galax/training/videos.py)."""

  def record(self, params: ParamsBlock, env_steps: int) -> str: ...


def eval_line(env_steps: int, records: Sequence[EvalRecord]) -> str:
  """The progress line of one evaluation's records."""
  means = [r.mean_return for r in records]
  if len(records) == 1:
    who = "average params" if records[0].learner < 0 else f"learner {records[0].learner}"
  else:
    who = f"{len(records)} learners (min {min(means):.2f}, max {max(means):.2f})"
  return (f"eval  {env_steps:>10d} | return {np.mean(means):8.2f} over "
          f"{len(records[0].returns)} episodes | {who}")


class EvalHook:
  """Runs evaluations from the training loop and keeps their records.

  `next_due(env_steps)` is the step count of the next periodic evaluation; `run(...)`
  evaluates, appends rows to `<workdir>/eval.csv` (process 0) and returns the new
  records. `eval_time_s` accumulates the wall time spent evaluating (and recording the
  `videos`, if given: process 0 only), which `train` subtracts to report training time.
  """

  FIELDS = ("env_steps", "train_time_s", "wall_time_s", "learner", "mean_return",
            "episodes", "returns", "lengths")

  def __init__(self, settings: EvalSettings, apply_fn: Callable, num_learners: int,
               workdir: str | None = None, resume: bool = False,
               log: Callable[[str], None] = print, videos: VideoRecorder | None = None):
    self.every = settings.every_steps
    self.which = settings.learners
    self.num_learners = num_learners
    policies = num_learners if self.which == "all" else 1
    self.records: list[EvalRecord] = []
    self.eval_time_s = 0.0
    self._log, self._videos = log, videos
    self._is_writer = jax.process_index() == 0
    self._evaluator = Evaluator(settings, apply_fn, policies) if self._is_writer else None
    self.path = os.path.join(workdir, "eval.csv") if workdir else None
    if self.path and resume and os.path.exists(self.path):
      self.records = read_eval_csv(self.path)
    if self.path and self._is_writer and not (resume and os.path.exists(self.path)):
      with open(self.path, "w", newline="") as f:
        csv.writer(f).writerow(self.FIELDS)
    self.last_env_steps = self.records[-1].env_steps if self.records else -1

  def next_due(self, env_steps: int) -> int:
    """The env-step count at which the next periodic evaluation is due."""
    return (env_steps // self.every + 1) * self.every

  def run(self, params: ParamsBlock, env_steps: int, train_time_s: float, wall_time_s: float
          ) -> list[EvalRecord]:
    """Evaluates the learners' `params` (global [n, ...] arrays) at `env_steps`."""
    host_params = to_host(params)  # a collective under multi-host: every process calls it
    if not self._is_writer:
      return []
    start = time.perf_counter()
    chosen, learners = select_params(host_params, self.which, self.num_learners)
    out = self._evaluator.evaluate(chosen)
    if self._videos is not None:
      self._videos.record(host_params, env_steps)
    self.eval_time_s += time.perf_counter() - start
    new = []
    for p, learner in enumerate(learners):
      done = out.completed[p]
      if not done.all():
        self._log(f"eval: {int((~done).sum())} episode(s) of learner {learner} did not end "
                  "within the step budget; dropped")
      new.append(EvalRecord(env_steps, train_time_s, wall_time_s, learner,
                            out.returns[p][done].tolist(), out.lengths[p][done].tolist()))
    self.records.extend(new)
    self.last_env_steps = env_steps
    if self.path:
      with open(self.path, "a", newline="") as f:
        writer = csv.writer(f)
        for r in new:
          writer.writerow([r.env_steps, f"{r.train_time_s:.3f}", f"{r.wall_time_s:.3f}",
                           r.learner, r.mean_return, len(r.returns), json.dumps(r.returns),
                           json.dumps(r.lengths)])
    return new

  def close(self) -> None:
    if self._evaluator is not None:
      self._evaluator.close()


def read_eval_csv(path: str) -> list[EvalRecord]:
  """Reads the records an `EvalHook` wrote."""
  with open(path, newline="") as f:
    return [EvalRecord(int(row["env_steps"]), float(row["train_time_s"]),
                       float(row["wall_time_s"]), int(row["learner"]),
                       json.loads(row["returns"]), json.loads(row["lengths"]))
            for row in csv.DictReader(f)]


def records_by_learner(records: Sequence[EvalRecord]) -> dict[int, list[EvalRecord]]:
  """Groups records by evaluated learner, each list in evaluation order."""
  out: dict[int, list[EvalRecord]] = {}
  for r in records:
    out.setdefault(r.learner, []).append(r)
  return out


def evaluate_params(settings: EvalSettings, params: Params, episodes: int | None = None,
                    seed_offset: int = 0, apply_fn: Callable | None = None) -> np.ndarray:
  """One-off evaluation of a single parameter set (no learner axis): its returns [N].

  Used for GALA's best-policy table, which re-evaluates the selected final policy on
  fresh episodes (a different `seed_offset` than the training-time evaluations).
  """
  if episodes is not None:
    settings = dataclasses.replace(settings, episodes=int(episodes))
  evaluator = Evaluator(settings, apply_fn, 1, seed_offset=seed_offset)
  try:
    out = evaluator.evaluate(jax.tree.map(lambda x: np.asarray(x)[None], params))
  finally:
    evaluator.close()
  return out.returns[0][out.completed[0]]


def frames_per_step(env: EnvSettings) -> int:
  """Emulator frames per agent step of `env`: Atari's frame skip (4 by default), else 1."""
  return backend_for(env.id).frames_per_step(env)
