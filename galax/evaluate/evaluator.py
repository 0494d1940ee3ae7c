"""Evaluation of the learners' policies on separate environments.

The papers score agents on evaluation episodes, not on the training stream:

* full games: raw (unclipped) rewards, the env's own time limit; lives keep the training
  env's handling, so Atari's FIRE after a lost life is pressed as in training (and as
  baselines' EpisodicLifeEnv + FireResetEnv press it), and the score is the whole game's;
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

During training, `galax.evaluate.periodic.EvalHook` runs an `Evaluator` every
`eval.every_steps` env steps and writes `eval.csv`; `evaluate_params` is a one-off
evaluation of one parameter set (GALA's best-policy table).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from ml_collections import ConfigDict

import galax.config as config_lib
from galax.config import Config
from galax.config.settings import pick
from galax.core.networks import NetworkSettings
from galax.core.rollout import init_action_keys, sample_actions
from galax.core.types import Params, ParamsBlock
from galax.envs import Env, EnvSettings, EnvState, backend_for
from galax.framework.settings import RunSettings

# Eval env j has envpool seed config.seed + EVAL_SEED_OFFSET + j: disjoint from the training
# envs (seed + global env index) for any run with fewer than a million training envs.
EVAL_SEED_OFFSET = 1_000_000
_EVAL_KEY_TAG = 0x5EED  # folded into the sampling key so eval draws differ from training's


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvalSettings:
  """What evaluation reads of a run's config (`eval_settings`): the `eval` section, the
  run's seed, its env and its network."""

  episodes: int  # per evaluated policy
  num_envs: int  # envs per policy; 0 = one per episode
  greedy: bool  # argmax actions (else sampled)
  learners: str  # first | all | average
  every_steps: int  # env steps between periodic evaluations; 0 = none
  seed: int  # the run's (`config.seed`)
  env: EnvSettings
  network: NetworkSettings  # builds the policy where no apply_fn is given


def eval_settings(config: Config, run: RunSettings | None = None) -> EvalSettings:
  """The evaluation settings of a run's typed config, with the env and network of its
  `run` settings (made here if not given)."""
  run = run or config_lib.run_settings(config)
  return pick(EvalSettings, config.eval, seed=config.seed, env=run.env, network=run.network)


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


def make_play(
  apply_fn: Callable, env: Env, num_policies: int, episodes_per_env: int, greedy: bool
) -> Callable:
  """A jitted `play(params [P, ...], env_state, keys [B, 2]) -> (returns, lengths, count)`.

  Env j of the pool (B = P * E envs) is played by policy j // E until it has finished
  `episodes_per_env` episodes; returns/lengths are [B, episodes_per_env], count is [B].
  The loop stops when every env has its quota or after a step budget that covers the
  quota at the env's time limit, plus auto-reset steps: one per episode, and one per lost
  life where lives end training episodes (the budget doubles the time limit for them).
  """
  num_envs = env.num_envs
  if num_envs % num_policies:
    raise ValueError(f"{num_envs} eval envs do not split over {num_policies} policies.")
  per_policy = num_envs // num_policies
  quota = episodes_per_env
  max_steps = quota * 2 * (env.spec.max_episode_steps + 1) + 1
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
        jnp.where(record, ts.episode_return, returns[rows, slot])
      )
      lengths = lengths.at[rows, slot].set(
        jnp.where(record, ts.episode_length, lengths[rows, slot])
      )
      return env_state, keys, count + record.astype(jnp.int32), returns, lengths, t + 1

    init = (
      env_state,
      keys,
      jnp.zeros((num_envs,), jnp.int32),
      jnp.full((num_envs, quota), jnp.nan, jnp.float32),
      jnp.zeros((num_envs, quota), jnp.int32),
      jnp.int32(0),
    )
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

  def __init__(
    self,
    settings: EvalSettings,
    apply_fn: Callable | None = None,
    num_policies: int = 1,
    seed_offset: int = 0,
  ):
    self.episodes = settings.episodes
    self.envs_per_policy = settings.num_envs or self.episodes
    self.episodes_per_env = -(-self.episodes // self.envs_per_policy)
    self.num_policies = num_policies
    self.greedy = settings.greedy
    self.env = eval_env(
      settings.env, settings.seed, num_policies * self.envs_per_policy, seed_offset
    )
    if apply_fn is None:
      apply_fn = settings.network.build(self.env.spec).apply
    self._play = make_play(apply_fn, self.env, num_policies, self.episodes_per_env, self.greedy)
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
    returns, lengths, count = jax.tree.map(np.asarray, self._play(params, self.env.reset(), keys))
    e, k = self.envs_per_policy, self.episodes_per_env
    # Env-major order within a policy: env 0's episodes, then env 1's, ...; first N kept.
    shape = (self.num_policies, e * k)
    returns = returns.reshape(shape)[:, : self.episodes]
    lengths = lengths.reshape(shape)[:, : self.episodes]
    completed = (np.arange(k)[None, :] < count[:, None]).reshape(shape)[:, : self.episodes]
    return EvalOutput(returns, lengths, completed)

  def close(self) -> None:
    self.env.close()


def select_params(
  params: ParamsBlock, which: str, num_learners: int
) -> tuple[ParamsBlock, list[int]]:
  """Host params [n, ...] -> (evaluated params [P, ...], learner ids; -1 = average)."""
  if which == "first":
    return jax.tree.map(lambda x: x[:1], params), [0]
  if which == "all":
    return params, list(range(num_learners))
  if which == "average":
    return jax.tree.map(lambda x: np.mean(x, axis=0, keepdims=True, dtype=x.dtype), params), [-1]
  raise ValueError(f"config.eval.learners={which!r}; use 'first', 'all' or 'average'.")


def evaluate_params(
  config: Config | ConfigDict | EvalSettings,
  params: Params,
  episodes: int | None = None,
  seed_offset: int = 0,
  apply_fn: Callable | None = None,
  greedy: bool | None = None,
) -> np.ndarray:
  """Plays fresh evaluation episodes with one parameter set; returns their returns [N].

    config = galax.load_config("cartpole_a2c", total_env_steps=20_000, target_return=0)
    result = galax.train(config)
    params = jax.tree.map(lambda x: x[0], result.state.params)  # learner 0's (no learner axis)
    returns = galax.evaluate_params(config, params, episodes=10)

  Args:
    config: the run's config (`galax.load_config`, or the one `galax.load_policy` returns),
      whose `eval` section, seed, env and network are used; or its `EvalSettings`
      (`eval_settings(config)`).
    params: one parameter set of the config's network, without the learner axis that a
      run's state has (`result.state.params` is [num_learners, ...]: take one learner's).
    episodes: episodes to play (default: `config.eval.episodes`).
    seed_offset: shifts the eval env seeds and sampling keys from the run's evaluation
      envs (GALA's best-policy table re-evaluates its selected policy on fresh episodes).
    apply_fn: (params, obs) -> (logits, values); default: the config's network.
    greedy: argmax actions (True) or sampled (False); default: `config.eval.greedy`.

  Returns the returns of the episodes that ended within the step budget (the protocol of
  this module's docstring: full games, raw rewards, no-op starts on Atari).
  """
  settings = _eval_settings(config)
  if episodes is not None:
    if isinstance(episodes, bool) or not isinstance(episodes, (int, np.integer)) or episodes < 1:
      raise ValueError(f"episodes={episodes!r}: give a whole number >= 1.")
    settings = dataclasses.replace(settings, episodes=int(episodes))
  if greedy is not None:
    settings = dataclasses.replace(settings, greedy=bool(greedy))
  evaluator = Evaluator(settings, apply_fn, 1, seed_offset=seed_offset)
  try:
    if apply_fn is None:
      _check_params(settings.network, evaluator.env.spec, params)
    out = evaluator.evaluate(jax.tree.map(lambda x: np.asarray(x)[None], params))
  finally:
    evaluator.close()
  return out.returns[0][out.completed[0]]


def _eval_settings(config: Config | ConfigDict | EvalSettings) -> EvalSettings:
  if isinstance(config, EvalSettings):
    return config
  if isinstance(config, (Config, ConfigDict)):
    return eval_settings(config_lib.from_data(config))
  raise TypeError(
    f"evaluate_params takes a run's config (galax.load_config or galax.load_policy gives "
    f"one), not a {type(config).__name__}."
  )


def _check_params(network: NetworkSettings, spec, params: Params) -> None:
  """One line where `params` are not one parameter set of `network` (e.g. a run's state
  with its learner axis, or another network's)."""
  dummy = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype)
  expected = jax.eval_shape(network.build(spec).init, jax.random.PRNGKey(0), dummy)
  want_leaves, want_tree = jax.tree.flatten(expected)
  got_leaves, got_tree = jax.tree.flatten(params)
  if got_tree == want_tree:
    want = [tuple(x.shape) for x in want_leaves]
    got = [tuple(np.shape(x)) for x in got_leaves]
    if got == want:
      return
    extra = {g[: len(g) - len(w)] if g[len(g) - len(w) :] == w else None for g, w in zip(got, want)}
    if len(extra) == 1 and None not in extra and len(next(iter(extra))) == 1:
      raise ValueError(
        f"params have a learner axis of {next(iter(extra))[0]} (a run's state has one): "
        "pass one learner's, e.g. jax.tree.map(lambda x: x[0], params)."
      )
  raise ValueError(
    f"params do not fit the config's network ({network.name}, for observations of shape "
    f"{tuple(spec.obs_shape)}): pass the parameters of a run of this config."
  )


def frames_per_step(env: EnvSettings) -> int:
  """Emulator frames per agent step of `env`: Atari's frame skip (4 by default), else 1."""
  return backend_for(env.id).frames_per_step(env)
