"""`validate`: the checks of a config's values that types alone do not make.

Each config flag either acts or is rejected here with one line naming it: choices, ranges,
sizes that must divide each other, and flags the chosen algorithm or env would ignore.
"""

from __future__ import annotations

import ml_collections

from galax import algorithm_spec as spec_lib
from galax.algorithm_registry import spec_for
from galax.checks import check_choice, check_positive  # noqa: F401  (also galax.config_checks.*)

COMBINES = ("independent", "allreduce", "gossip")


def validate(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """Checks values that types alone do not; returns the config. Raises ValueError."""
  algorithm = spec_for(config.algorithm)  # one line for an unknown name
  check_choice("combine", config.combine, COMBINES)
  check_choice("returns", config.returns, ("nstep", "gae"))
  check_choice("optimizer.name", config.optimizer.name, ("rmsprop", "adam", "sgd"))
  check_choice("optimizer.rmsprop_convention", config.optimizer.rmsprop_convention, ("tf", "torch"))
  check_choice("optimizer.lr_scaling", config.optimizer.lr_scaling,
          ("none", "linear_envs", "sqrt_learners"))
  check_choice("optimizer.anneal", config.optimizer.anneal, ("none", "linear"))
  check_choice("initial_params", config.initial_params, ("shared", "per_learner"))
  check_choice("platform", config.platform, ("auto", "cpu", "gpu", "tpu"))
  check_choice("eval.learners", config.eval.learners, ("first", "all", "average"))
  check_choice("track_mode", config.track_mode, ("online", "offline", "disabled"))
  check_positive(config, "eval.episodes")
  for name in ("time_limit_s", "eval.every_steps", "eval.num_envs", "eval.noop_max",
               "eval.max_episode_steps"):
    value = config
    for part in name.split("."):
      value = value[part]
    if value < 0:
      raise ValueError(f"config.{name} must be >= 0, got {value!r}.")
  check_positive(config, "total_env_steps", "num_learners", "envs_per_learner", "t_max",
            "updates_per_call", "optimizer.learning_rate", "stats_window")
  if not 0.0 <= config.gamma <= 1.0:
    raise ValueError(f"config.gamma must be in [0, 1], got {config.gamma}.")
  if config.combine != "independent" and config.num_learners < 2:
    raise ValueError(f"config.combine={config.combine!r} needs num_learners >= 2.")
  _validate_gossip(config, algorithm)
  _validate_baselines(config, algorithm)
  _validate_batches(config, algorithm)
  from galax import envs  # pylint: disable=g-import-not-at-top

  envs.check_env_id(config.env.id)
  envs.backend_for(config.env.id).validate(envs.EnvSettings.from_config(config))
  algorithm.validate(config)  # the algorithm's own section (ppo.*, hts.*, impala.*, a3c.*)
  return config


def _validate_gossip(config: ml_collections.ConfigDict, algorithm: spec_lib.AlgorithmSpec
                     ) -> None:
  """GALA's gossip fields act only with combine='gossip'; GALA Fig. 2b's gradient cosine
  matrix only in A2C (the other algorithms have no single per-update gradient to compare)."""
  gossip = config.gossip
  if gossip.delay < 0:
    raise ValueError(f"config.gossip.delay must be >= 0, got {gossip.delay}.")
  if config.combine == "gossip":
    from galax.parallel.topology import make_topology  # pylint: disable=g-import-not-at-top

    make_topology(gossip.topology, config.num_learners, gossip.peers)
  elif gossip.metrics or gossip.delay:
    raise ValueError(f"config.gossip.metrics={gossip.metrics} and config.gossip.delay="
                     f"{gossip.delay} act only with combine='gossip' (got "
                     f"combine={config.combine!r}).")
  if gossip.delay >= 2 and config.combine == "gossip" and config.initial_params != "shared":
    raise ValueError(f"config.gossip.delay={gossip.delay} with initial_params="
                     f"{config.initial_params!r}: the first delay - 1 mixes would use each "
                     "learner's own start for its peers'; use initial_params='shared'.")
  if config.grad_similarity and not algorithm.supports(spec_lib.GRAD_SIMILARITY):
    raise ValueError("config.grad_similarity compares the learners' A2C gradients: it needs "
                     f"algorithm='a2c' (got {config.algorithm!r}).")


def _validate_batches(config: ml_collections.ConfigDict, algorithm: spec_lib.AlgorithmSpec
                      ) -> None:
  """Sizes that must divide each other: PPO minibatches, HTS micro-batches, grad chunks."""
  check_choice("learner_map", config.learner_map, ("auto", "vmap", "unroll", "loop"))
  if (config.learner_map not in ("auto", "vmap")
      and not algorithm.supports(spec_lib.LEARNER_MAP)):
    raise ValueError(f"config.learner_map={config.learner_map!r} acts on A2C-family "
                     f"learners (algorithm 'a2c'); {config.algorithm!r} vmaps its learners.")
  check_choice("update_loop", config.update_loop, ("auto", "scan", "host"))
  check_choice("network.conv_impl", config.network.conv_impl, ("auto", "xla", "patches"))
  check_choice("network.activation", config.network.activation, ("", "relu", "tanh"))
  if config.network.conv_impl == "patches" and config.network.name == "mlp":
    raise ValueError("config.network.conv_impl='patches' changes how convolutions run; "
                     "network 'mlp' has none (use 'auto', the default).")
  chunks = config.grad_chunks
  if chunks < 0:
    raise ValueError(f"config.grad_chunks={chunks} must be >= 0 (0 = auto).")
  batch, _, what = algorithm.chunked_batch(config)  # PPO: checks its minibatches
  if chunks and batch % chunks:
    raise ValueError(f"config.grad_chunks={chunks} must divide the {batch} {what}.")
  if config.hts.microbatches and not algorithm.supports(spec_lib.MICROBATCHES):
    raise ValueError(f"config.hts.microbatches={config.hts.microbatches} splits HTS segments;"
                     f" algorithm {config.algorithm!r} has none.")


def _validate_baselines(config: ml_collections.ConfigDict, algorithm: spec_lib.AlgorithmSpec
                        ) -> None:
  """Fields of distributed BA3C (sharded state, stragglers), A3C and IMPALA."""
  if config.optimizer.clip_average_norm < 0:
    raise ValueError("config.optimizer.clip_average_norm must be >= 0 (0 = off), got "
                     f"{config.optimizer.clip_average_norm}.")
  if config.optimizer.sharded_state:
    if config.combine != "allreduce" or not algorithm.supports(spec_lib.SHARDED_STATE):
      raise ValueError("config.optimizer.sharded_state=True shards the state of learners that "
                       "share parameters: it needs combine='allreduce' and an algorithm that "
                       f"supports it, such as 'a2c' or 'impala' (got combine="
                       f"{config.combine!r}, algorithm={config.algorithm!r}).")
  stragglers = config.stragglers
  check_choice("stragglers.step_time", stragglers.step_time, ("exponential", "lognormal", "uniform"))
  if stragglers.num_kept:
    if not 0 < stragglers.num_kept <= config.num_learners:
      raise ValueError(f"config.stragglers.num_kept={stragglers.num_kept} must be in "
                       f"[1, num_learners={config.num_learners}] (0 = keep all).")
    if config.combine != "allreduce" or not algorithm.supports(spec_lib.STRAGGLERS):
      raise ValueError("config.stragglers.num_kept drops gradients of all-reduce A2C: it needs "
                       f"combine='allreduce' and algorithm='a2c' (got combine={config.combine!r},"
                       f" algorithm={config.algorithm!r}).")
    if stragglers.scale < 0:
      raise ValueError(f"config.stragglers.scale must be >= 0, got {stragglers.scale}.")

