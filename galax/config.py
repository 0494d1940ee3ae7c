"""The config schema: every field galax reads, with its default and meaning.

Experiment files in configs/ start from `base_config()` and change fields. The returned
ConfigDict is locked, so a misspelt key (in a file or as `--config.key=value`) is an
error, and ml_collections keeps each field's type. `validate` checks values.
"""

from __future__ import annotations

from typing import Any

import ml_collections

ALGORITHMS = ("a2c", "ppo", "hts_a2c", "hts_ppo")
COMBINES = ("independent", "allreduce")


def base_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.algorithm = "a2c"  # see ALGORITHMS
  c.seed = 0  # seeds params, env seeds (seed + global env index) and action sampling keys
  c.total_env_steps = 1_000_000  # agent steps of all learners together (x4 for Atari frames)

  c.env = ml_collections.ConfigDict()
  c.env.id = "CartPole-v1"  # any envpool id: Pong-v5, Breakout-v5, gfootball/academy_...-v1
  c.env.episodic_life = False  # Atari: a lost life ends the *training* episode
  c.env.reward_clip = False  # Atari: clip training rewards to [-1, 1] (stats stay raw)
  c.env.max_episode_steps = 0  # time limit in agent steps; 0 = envpool's default
  c.env.num_threads = 0  # envpool worker threads per pool; 0 = envpool's choice
  c.env.options = ml_collections.ConfigDict()  # extra envpool.make options, e.g. noop_max

  # The learner axis: num_learners learners x envs_per_learner envs each.
  c.num_learners = 1
  c.envs_per_learner = 16
  c.num_devices = 0  # devices carrying the learners; 0 = as many as divide num_learners
  c.combine = "independent"  # independent | allreduce (see galax/parallel/combine.py)

  c.t_max = 5  # rollout length per update (n of the n-step return)
  c.gamma = 0.99
  c.returns = "nstep"  # nstep (PAAC/A2C) | gae (lambda-returns)
  c.gae_lambda = 0.95

  c.network = ml_collections.ConfigDict()
  c.network.name = "mlp"  # mlp | archnips | archnature | gala | ba3c | impala_shallow
  c.network.fc_width = 0  # 0 = the architecture's own (BA3C small model: 128)
  c.network.mlp_hidden = (64, 64)
  c.network.init = "orthogonal"  # orthogonal | lecun

  c.loss = ml_collections.ConfigDict()
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5  # times mean (G - V)^2
  c.loss.sum_over_time = False  # PAAC code: loss summed over the t_max steps

  # PPO (algorithms ppo, hts_ppo; galax/algorithms/ppo.py). Advantages: GAE with
  # gae_lambda when returns = "gae" (lambda 1 otherwise); value targets = advantages + V.
  c.ppo = ml_collections.ConfigDict()
  c.ppo.epochs = 2  # passes over each batch of t_max x envs samples
  c.ppo.minibatches = 8  # minibatches per epoch (must divide t_max x envs_per_learner)
  c.ppo.clip = 0.08  # ratio clip eps, also the value-loss clip (HTS-RL GFootball)
  c.ppo.normalize_advantages = True  # (A - mean) / (std + 1e-5) over the whole batch

  # HTS-RL (algorithms hts_a2c, hts_ppo; galax/algorithms/hts.py): rollout and learning
  # run concurrently; the gradient lags exactly one segment behind the acting parameters.
  c.hts = ml_collections.ConfigDict()
  c.hts.alpha = 0  # sync interval: env steps per segment (multiple of t_max); 0 = t_max
  c.hts.delayed = True  # False: learn on the segment just collected (plain A2C / PPO)
  c.hts.microbatches = 0  # pieces the learner's work is split into, each overlapping one
  #                         env step; must divide alpha and the learner's units; 0 = auto
  c.hts.num_actors = 1  # actor groups: each has its own envpool pool and forward pass,
  #                       sent to its envs as soon as it is ready (divides envs_per_learner)

  c.optimizer = ml_collections.ConfigDict()
  c.optimizer.name = "rmsprop"  # rmsprop | adam | sgd
  c.optimizer.learning_rate = 7e-4
  c.optimizer.lr_scaling = "none"  # none | linear_envs (PAAC) | sqrt_learners (GALA)
  c.optimizer.anneal = "none"  # none | linear (to 0 at the end of the run)
  c.optimizer.eps = 1e-5  # RMSProp / Adam epsilon
  c.optimizer.rmsprop_decay = 0.99
  c.optimizer.rmsprop_convention = "torch"  # torch (eps outside sqrt) | tf (eps inside)
  c.optimizer.rmsprop_initial_scale = 0.0  # TF1 starts the mean square at 1.0
  c.optimizer.adam_b1 = 0.9
  c.optimizer.adam_b2 = 0.999
  c.optimizer.max_grad_norm = 0.5  # global-norm clipping; 0 = off

  # Running the job.
  c.updates_per_call = 100  # updates per host round trip (metrics, logging)
  c.update_loop = "auto"  # scan (one XLA loop per call) | host (a Python loop) | auto
  c.log_every_steps = 50_000  # env steps between progress lines / metric rows
  c.checkpoint_every_steps = 0  # env steps between checkpoints; 0 = only at the end
  c.keep_checkpoints = 3
  c.stats_window = 100  # completed episodes in the running mean return
  c.target_return = 0.0  # stop once the running mean reaches it (0 = run all steps)
  c.tensorboard = True
  c.distributed = False  # call jax.distributed.initialize() (multi-host pods)
  return c


def _choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
  if value not in allowed:
    raise ValueError(f"config.{name}={value!r} is not one of {list(allowed)}.")


def _positive(config: ml_collections.ConfigDict, *names: str) -> None:
  for name in names:
    value = config
    for part in name.split("."):
      value = value[part]
    if value <= 0:
      raise ValueError(f"config.{name} must be > 0, got {value!r}.")


def validate(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """Checks values that types alone do not; returns the config. Raises ValueError."""
  _choice("algorithm", config.algorithm, ALGORITHMS)
  _choice("combine", config.combine, COMBINES)
  _choice("returns", config.returns, ("nstep", "gae"))
  _choice("optimizer.name", config.optimizer.name, ("rmsprop", "adam", "sgd"))
  _choice("optimizer.rmsprop_convention", config.optimizer.rmsprop_convention, ("tf", "torch"))
  _choice("optimizer.lr_scaling", config.optimizer.lr_scaling,
          ("none", "linear_envs", "sqrt_learners"))
  _choice("optimizer.anneal", config.optimizer.anneal, ("none", "linear"))
  _positive(config, "total_env_steps", "num_learners", "envs_per_learner", "t_max",
            "updates_per_call", "optimizer.learning_rate", "stats_window")
  if not 0.0 <= config.gamma <= 1.0:
    raise ValueError(f"config.gamma must be in [0, 1], got {config.gamma}.")
  _positive(config, "ppo.epochs", "ppo.minibatches", "hts.num_actors")
  if config.ppo.clip <= 0:
    raise ValueError(f"config.ppo.clip must be > 0, got {config.ppo.clip}.")
  if config.hts.alpha < 0 or config.hts.microbatches < 0:
    raise ValueError(f"config.hts.alpha ({config.hts.alpha}) and config.hts.microbatches "
                     f"({config.hts.microbatches}) must be >= 0 (0 = automatic).")
  if config.hts.alpha and config.hts.alpha % config.t_max:
    raise ValueError(f"config.hts.alpha={config.hts.alpha} must be a multiple of "
                     f"config.t_max={config.t_max} (a segment holds whole rollouts).")
  if config.envs_per_learner % config.hts.num_actors:
    raise ValueError(f"config.hts.num_actors={config.hts.num_actors} must divide "
                     f"config.envs_per_learner={config.envs_per_learner}.")
  if config.combine != "independent" and config.num_learners < 2:
    raise ValueError(f"config.combine={config.combine!r} needs num_learners >= 2.")
  from galax.envs import check_env_id  # pylint: disable=g-import-not-at-top

  check_env_id(config.env.id)
  return config
