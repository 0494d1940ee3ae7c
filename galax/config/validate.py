"""`validate`: the checks of a config's values that types alone do not make, in one place
beside the dataclasses (the types themselves: `typed.from_data`).

Each config flag either acts or is rejected here with one line naming it: choices, ranges,
sizes that must divide each other, and flags the chosen algorithm or env would ignore.
"""

from __future__ import annotations

from ml_collections import ConfigDict

import galax.config.typed as typed
import galax.envs as envs
from galax.algorithms.registry import spec_for
from galax.config.schema import Config
from galax.config.settings import run_settings
from galax.core.networks import INIT_SCHEMES
from galax.envs import video
from galax.envs.backend import EnvSettings
from galax.envs.pool_async import check_batch_size
from galax.framework import spec as spec_lib
from galax.framework.spec import check_choice, check_positive
from galax.parallel.topology import make_topology

COMBINES = ("independent", "allreduce", "gossip")


# Fields that must be >= 0 (0: off, or the default), and fields that must be > 0.
NON_NEGATIVE = (
  "time_limit_s",
  "eval.every_steps",
  "eval.num_envs",
  "eval.noop_max",
  "eval.max_episode_steps",
)
POSITIVE = (
  "total_env_steps",
  "num_learners",
  "envs_per_learner",
  "t_max",
  "updates_per_call",
  "optimizer.learning_rate",
  "stats_window",
)


def validate(config: ConfigDict | Config) -> ConfigDict | Config:
  """Checks values that types alone do not; returns the config. Raises ValueError."""
  algorithm = spec_for(config.algorithm)  # one line for an unknown name
  c = typed.from_data(config)  # the types: one line for a value of another type
  check_choice("combine", c.combine, COMBINES)
  check_choice("returns", c.returns, ("nstep", "gae"))
  opt = c.optimizer
  _validate_optimizer(
    opt.name, opt.rmsprop_convention, opt.lr_scaling, opt.anneal, opt.anneal_steps
  )
  check_choice("initial_params", c.initial_params, ("shared", "per_learner"))
  check_choice("platform", c.platform, ("auto", "cpu", "gpu", "tpu"))
  check_choice("eval.learners", c.eval.learners, ("first", "all", "average"))
  check_choice("track_mode", c.track_mode, ("online", "offline", "disabled"))
  _check_positive_fields(c, "eval.episodes")
  _check_positive_fields(c, *NON_NEGATIVE, or_zero=True)
  _check_positive_fields(c, *POSITIVE)
  if not 0.0 <= c.gamma <= 1.0:
    raise ValueError(f"config.gamma must be in [0, 1], got {c.gamma}.")
  _validate_learners(algorithm, c)
  network = c.network
  _validate_execution(
    algorithm,
    c.learner_map,
    c.update_loop,
    network.init,
    network.conv_impl,
    network.activation,
    network.name,
    c.grad_chunks,
  )
  if c.hts.microbatches and not algorithm.supports(spec_lib.MICROBATCHES):
    raise ValueError(
      f"config.hts.microbatches={c.hts.microbatches} splits HTS segments;"
      f" algorithm {algorithm.name!r} has none."
    )
  # The algorithm's own settings (ppo.*, hts.*, impala.*, a3c.*), checked by its spec.
  settings = run_settings(c, algorithm)
  _validate_env(
    algorithm, settings.env, c.envs_per_learner, c.num_learners, c.capture_video, c.eval.every_steps
  )
  # chunked_batch: PPO checks its minibatches
  _validate_chunks(settings.plan.grad_chunks, algorithm.chunked_batch(settings))
  return config


def _check_positive_fields(config: Config, *names: str, or_zero: bool = False) -> None:
  """One line for the first of the dotted `names` whose value is not > 0 (`or_zero`: < 0)."""
  for name in names:
    value = config
    for part in name.split("."):
      value = getattr(value, part)
    check_positive(name, value, or_zero)


def _validate_learners(algorithm: spec_lib.AlgorithmSpec, config: Config) -> None:
  """How the learners combine (`combine`, `gossip.*`) and the distributed baselines' fields
  (`optimizer.clip_average_norm`, `optimizer.sharded_state`, `stragglers.*`)."""
  g, opt, stragglers = config.gossip, config.optimizer, config.stragglers
  _validate_combine(
    algorithm,
    config.combine,
    config.num_learners,
    config.initial_params,
    config.grad_similarity,
    delay=g.delay,
    topology=g.topology,
    peers=g.peers,
    metrics=g.metrics,
  )
  _validate_baselines(
    algorithm,
    config.combine,
    config.num_learners,
    clip_average_norm=opt.clip_average_norm,
    sharded_state=opt.sharded_state,
    step_time=stragglers.step_time,
    num_kept=stragglers.num_kept,
    scale=stragglers.scale,
  )


def _validate_optimizer(
  name: str, rmsprop_convention: str, lr_scaling: str, anneal: str, anneal_steps: int | None
) -> None:
  """The optimizer's choices, and `anneal_steps` (None: the run's length) only with linear
  annealing."""
  check_choice("optimizer.name", name, ("rmsprop", "adam", "sgd"))
  check_choice("optimizer.rmsprop_convention", rmsprop_convention, ("tf", "torch"))
  check_choice("optimizer.lr_scaling", lr_scaling, ("none", "linear_envs", "sqrt_learners"))
  check_choice("optimizer.anneal", anneal, ("none", "linear"))
  if anneal_steps is None:
    return
  if anneal_steps <= 0:
    raise ValueError(
      f"config.optimizer.anneal_steps must be > 0 (or None for the run's "
      f"length), got {anneal_steps!r}."
    )
  if anneal != "linear":
    raise ValueError(
      f"config.optimizer.anneal_steps={anneal_steps} acts only with "
      f"optimizer.anneal='linear', not {anneal!r}."
    )


def _validate_env(
  algorithm: spec_lib.AlgorithmSpec,
  env: EnvSettings,
  envs_per_learner: int,
  num_learners: int,
  capture_video: bool,
  eval_every_steps: int,
) -> None:
  """The env: its id, its backend's own checks (`EnvBackend.validate`), envpool's async mode
  and videos."""
  envs.check_env_id(env.id)
  envs.backend_for(env.id).validate(env)
  _validate_async_envs(algorithm, env.batch_size, envs_per_learner, num_learners)
  if capture_video:
    _validate_video(env.id, eval_every_steps)


def _validate_combine(
  algorithm: spec_lib.AlgorithmSpec,
  combine: str,
  num_learners: int,
  initial_params: str,
  grad_similarity: bool,
  *,
  delay: int,
  topology: str,
  peers: int,
  metrics: bool,
) -> None:
  """How learners combine: with 2+ learners; GALA's gossip fields act only with
  combine='gossip'; GALA Fig. 2b's gradient cosine matrix only in A2C (the other algorithms
  have no single per-update gradient to compare)."""
  if combine != "independent" and num_learners < 2:
    raise ValueError(f"config.combine={combine!r} needs num_learners >= 2.")
  if delay < 0:
    raise ValueError(f"config.gossip.delay must be >= 0, got {delay}.")
  if combine == "gossip":
    make_topology(topology, num_learners, peers)
  elif metrics or delay:
    raise ValueError(
      f"config.gossip.metrics={metrics} and config.gossip.delay="
      f"{delay} act only with combine='gossip' (got "
      f"combine={combine!r})."
    )
  if delay >= 2 and combine == "gossip" and initial_params != "shared":
    raise ValueError(
      f"config.gossip.delay={delay} with initial_params="
      f"{initial_params!r}: the first delay - 1 mixes would use each "
      "learner's own start for its peers'; use initial_params='shared'."
    )
  if grad_similarity and not algorithm.supports(spec_lib.GRAD_SIMILARITY):
    raise ValueError(
      "config.grad_similarity compares the learners' A2C gradients: it needs "
      f"algorithm='a2c' (got {algorithm.name!r})."
    )


def _validate_async_envs(
  algorithm: spec_lib.AlgorithmSpec, batch_size: int, envs_per_learner: int, num_learners: int
) -> None:
  """envpool's async mode (`env.batch_size` below the envs): a batch that divides a
  learner's envs, in an algorithm whose targets follow each env (A2C, PPO), one learner
  (a batch of ready envs would mix learners' parameters)."""
  check_batch_size(batch_size, envs_per_learner, "envs per learner (envs_per_learner)")
  if batch_size in (0, envs_per_learner):
    return
  if not algorithm.supports(spec_lib.ASYNC_ENVS):
    raise ValueError(
      f"config.env.batch_size={batch_size} (envpool's async mode) acts in "
      f"'a2c' and 'ppo' only, not {algorithm.name!r} (HTS-RL's fixed lag needs "
      "every env at each segment's end; IMPALA's and A3C's targets follow "
      "one env per column)."
    )
  if num_learners > 1:
    raise ValueError(
      f"config.env.batch_size={batch_size} (envpool's async mode) needs "
      f"num_learners=1 (got {num_learners}): a batch of ready envs would mix "
      "learners."
    )


def _validate_execution(
  algorithm: spec_lib.AlgorithmSpec,
  learner_map: str,
  update_loop: str,
  init: str,
  conv_impl: str,
  activation: str,
  network: str,
  grad_chunks: int,
) -> None:
  """How the learners run: their map, the update loop, the network's initialisation,
  convolutions and activation (`network`: its name), and the sign of grad_chunks."""
  check_choice("network.init", init, INIT_SCHEMES)
  check_choice("learner_map", learner_map, ("auto", "vmap", "unroll", "loop"))
  if learner_map not in ("auto", "vmap") and not algorithm.supports(spec_lib.LEARNER_MAP):
    raise ValueError(
      f"config.learner_map={learner_map!r} acts on A2C-family "
      f"learners (algorithm 'a2c'); {algorithm.name!r} vmaps its learners."
    )
  check_choice("update_loop", update_loop, ("auto", "scan", "host"))
  check_choice("network.conv_impl", conv_impl, ("auto", "xla", "patches"))
  check_choice("network.activation", activation, ("", "relu", "tanh"))
  if conv_impl == "patches" and network == "mlp":
    raise ValueError(
      "config.network.conv_impl='patches' changes how convolutions run; "
      "network 'mlp' has none (use 'auto', the default)."
    )
  if grad_chunks < 0:
    raise ValueError(f"config.grad_chunks={grad_chunks} must be >= 0 (0 = auto).")


def _validate_chunks(grad_chunks: int, chunked_batch: tuple[int, int, str]) -> None:
  """grad_chunks must divide the algorithm's `chunked_batch`."""
  batch, _, what = chunked_batch
  if grad_chunks and batch % grad_chunks:
    raise ValueError(f"config.grad_chunks={grad_chunks} must divide the {batch} {what}.")


def _validate_baselines(
  algorithm: spec_lib.AlgorithmSpec,
  combine: str,
  num_learners: int,
  *,
  clip_average_norm: float,
  sharded_state: bool,
  step_time: str,
  num_kept: int,
  scale: float,
) -> None:
  """Fields of distributed BA3C (`optimizer.clip_average_norm`, `optimizer.sharded_state`,
  `stragglers.*`), A3C and IMPALA."""
  if clip_average_norm < 0:
    raise ValueError(
      f"config.optimizer.clip_average_norm must be >= 0 (0 = off), got {clip_average_norm}."
    )
  if sharded_state:
    if combine != "allreduce" or not algorithm.supports(spec_lib.SHARDED_STATE):
      raise ValueError(
        "config.optimizer.sharded_state=True shards the state of learners that "
        "share parameters: it needs combine='allreduce' and an algorithm that "
        f"supports it, such as 'a2c' or 'impala' (got combine="
        f"{combine!r}, algorithm={algorithm.name!r})."
      )
  check_choice("stragglers.step_time", step_time, ("exponential", "lognormal", "uniform"))
  if num_kept:
    if not 0 < num_kept <= num_learners:
      raise ValueError(
        f"config.stragglers.num_kept={num_kept} must be in "
        f"[1, num_learners={num_learners}] (0 = keep all)."
      )
    if combine != "allreduce" or not algorithm.supports(spec_lib.STRAGGLERS):
      raise ValueError(
        "config.stragglers.num_kept drops gradients of all-reduce A2C: it needs "
        f"combine='allreduce' and algorithm='a2c' (got combine={combine!r},"
        f" algorithm={algorithm.name!r})."
      )
    if scale < 0:
      raise ValueError(f"config.stragglers.scale must be >= 0, got {scale}.")


def _validate_video(env_id: str, eval_every_steps: int) -> None:
  """Videos are recorded at evaluations, of an env the backend draws."""
  if eval_every_steps <= 0:
    raise ValueError(
      "config.capture_video=True records an episode at each evaluation: set "
      "config.eval.every_steps > 0 (e.g. --config.eval.every_steps=100000)."
    )

  video.check_capture(env_id)
