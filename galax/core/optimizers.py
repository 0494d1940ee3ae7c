"""Optimizers of the papers, built from optax pieces.

RMSProp comes in two conventions, which differ in where epsilon goes:

  TensorFlow (PAAC):  nu <- decay nu + (1 - decay) g^2;  x <- x - lr g / sqrt(nu + eps)
  PyTorch (GALA, HTS): nu <- decay nu + (1 - decay) g^2;  x <- x - lr g / (sqrt(nu) + eps)

With PAAC's eps = 0.1 the two differ a lot. TF1's RMSPropOptimizer also starts nu at 1,
PyTorch at 0 (`rmsprop_initial_scale`).

Learning-rate rules: PAAC scales lr linearly with the number of envs (0.0007 x 32);
GALA scales it with the square root of the number of learners (7e-4 x sqrt(n)).
Annealing is linear to zero over the run (PAAC, HTS-PPO) or none.

Clipping comes first, in this order when both are on: per-tensor clipping by average norm
(TensorFlow's `clip_by_average_norm`, as distributed BA3C's tensorpack code uses), then
clipping by the global norm (PAAC, GALA, IMPALA).

The learners' optimizer step. Every algorithm steps its learners' optimizer through a
`LearnerOptimizer` (in the spirit of Flax's `TrainState.apply_gradients`): A2C, all-reduce
A2C, GALA, IMPALA, PPO's minibatch steps, HTS-A2C and HTS-PPO. (A3C applies one learner's
gradient at a time to one shared parameter set, with the same optax chain: per-tensor
clipping of that gradient first.) It acts inside `shard_map` on a device's block of L
learners, and knows nothing of how learners combine: the update itself calls the combiner
(`galax.parallel.combine`) between `clip_each` and `step`, and again after `step`:

  init(params)              the optimizer state of ONE learner (vmap-ed over learners)
  clip_each(grads)          per-tensor clipping of each learner's own gradient [L, ...]
  step(grads, opt_state, params)
                            -> (params, opt_state, grad_norm [L]): clip the (combined)
                            gradients globally, update, new params for the block's L learners

Per-tensor clipping by average norm (`optimizer.clip_average_norm`) applies to each
learner's own gradient, before combining: BA3C's tensorpack workers clipped their gradients
before SyncReplicas averaged them (and dropped the late ones: straggler weights apply to
the clipped gradients). Global-norm clipping applies to the combined gradient. This is the
one meaning of `clip_average_norm` in every algorithm.

`ReplicatedOptimizer` is the plain path: every learner runs the whole optimizer on its own
copy of the state. `galax.parallel.sharded_optimizer` shards the state over the learners
instead (ZeRO-1, BA3C's parameter servers), with the same update.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Protocol

import jax
import jax.numpy as jnp
import optax

from galax.core.types import OptState, Params, ParamsBlock

LR_SCALING_RULES = ("none", "linear_envs", "sqrt_learners")


@dataclasses.dataclass(frozen=True, kw_only=True)
class OptimizerSettings:
  """The `optimizer` section of a run's config."""

  name: str = "rmsprop"  # rmsprop | adam | sgd
  learning_rate: float = 7e-4  # before lr_scaling and anneal
  lr_scaling: str = "none"  # none | linear_envs (PAAC) | sqrt_learners (GALA)
  anneal: str = "none"  # none | linear (to 0 at the end of the run)
  # linear: the agent steps over which the lr reaches 0 (then stays 0), independent of the
  # run's length (PAAC's code: 80M); None = total_env_steps as the run started: a resume to
  # more steps keeps that end (sets it here, recorded); --resume naming it moves it.
  anneal_steps: int | None = None
  eps: float = 1e-5  # RMSProp / Adam epsilon
  rmsprop_decay: float = 0.99  # RMSProp: decay of the mean square
  rmsprop_convention: str = "torch"  # torch (eps outside sqrt) | tf (eps inside)
  rmsprop_initial_scale: float = 0.0  # TF1 starts the mean square at 1.0
  adam_b1: float = 0.9  # Adam: decay of the first moment
  adam_b2: float = 0.999  # Adam: decay of the second moment
  max_grad_norm: float = 0.5  # global-norm clipping; 0 = off
  # Per-tensor clipping by average norm ||g||_2 / size (TF clip_by_average_norm; BA3C 0.1);
  # applied before global-norm clipping; 0 = off.
  clip_average_norm: float = 0.0
  # ZeRO-1 (combine=allreduce): each learner keeps 1/n of the optimizer state; gradients are
  # reduce-scattered, updated shard-wise, parameters all-gathered (BA3C's parameter servers).
  sharded_state: bool = False

  def anneal_updates(self, total_updates: int, env_steps_per_update: int) -> int:
    """The updates over which a linear anneal takes the lr to 0: the run's `total_updates`,
    or `anneal_steps` agent steps (then the lr stays 0 until the run ends)."""
    if self.anneal_steps is None:
      return total_updates
    return max(1, round(self.anneal_steps / env_steps_per_update))


def scaled_learning_rate(base_lr: float, rule: str, num_envs: int, num_learners: int) -> float:
  """Applies an lr scaling rule: 'none', 'linear_envs' (PAAC) or 'sqrt_learners' (GALA)."""
  if rule == "none":
    return base_lr
  if rule == "linear_envs":
    return base_lr * num_envs
  if rule == "sqrt_learners":
    return base_lr * math.sqrt(num_learners)
  raise ValueError(f"Unknown lr scaling rule {rule!r}; choose from {LR_SCALING_RULES}.")


def learning_rate_schedule(lr: float, anneal: str, total_updates: int) -> optax.Schedule:
  if anneal == "none":
    return optax.constant_schedule(lr)
  if anneal == "linear":
    if total_updates >= 2**31:
      raise ValueError(
        f"Annealing over {total_updates} updates overflows the int32 update "
        "count; lower config.total_env_steps."
      )
    return optax.linear_schedule(lr, 0.0, max(int(total_updates), 1))
  raise ValueError(f"Unknown lr annealing {anneal!r}; use 'none' or 'linear'.")


def rmsprop(
  learning_rate: optax.ScalarOrSchedule,
  decay: float,
  eps: float,
  convention: str,
  initial_scale: float | None = None,
) -> optax.GradientTransformation:
  """RMSProp without momentum in the TF ('tf': eps inside sqrt) or PyTorch ('torch') form."""
  if convention not in ("tf", "torch"):
    raise ValueError(f"Unknown RMSProp convention {convention!r}; use 'tf' or 'torch'.")
  if initial_scale is None:
    initial_scale = 0.0
  return optax.chain(
    optax.scale_by_rms(
      decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=(convention == "tf")
    ),
    optax.scale_by_learning_rate(learning_rate),
  )


def average_norm_scale(squared_norm: jax.Array, size: int, clip_norm: float) -> jax.Array:
  r"""The factor of TF's `clip_by_average_norm` for a tensor of `size` elements.

    average_norm = ||t||_2 / size   (the L2 norm divided by the element count, not an RMS)
    t <- t * clip_norm / max(average_norm, clip_norm)

  written as TF does, t * clip_norm * min(size / ||t||, 1 / clip_norm), so that an
  all-zero tensor passes unchanged.
  """
  return clip_norm * jnp.minimum(jax.lax.rsqrt(squared_norm) * size, 1.0 / clip_norm)


def clip_by_average_norm(clip_norm: float) -> optax.GradientTransformation:
  """Clips every tensor (leaf) on its own by its average norm (see `average_norm_scale`).

  Distributed BA3C (Adamski et al. 2018) clips each gradient tensor at average norm 0.1.
  """

  def update(updates, state, params=None):
    del params

    def clip(t):
      return t * average_norm_scale(jnp.sum(jnp.square(t)), t.size, clip_norm).astype(t.dtype)

    return jax.tree.map(clip, updates), state

  return optax.GradientTransformation(optax.init_empty_state, update)


def elementwise_optimizer(
  cfg: OptimizerSettings, schedule: optax.Schedule
) -> optax.GradientTransformation:
  """The optimizer of `cfg.name` alone (no clipping). It acts element by element, so it
  gives the same result on a flat slice of the parameters as on the whole tree (what the
  sharded optimizer state of `galax.parallel.sharded_optimizer` relies on)."""
  if cfg.name == "rmsprop":
    return rmsprop(
      schedule, cfg.rmsprop_decay, cfg.eps, cfg.rmsprop_convention, cfg.rmsprop_initial_scale
    )
  if cfg.name == "adam":
    return optax.adam(schedule, b1=cfg.adam_b1, b2=cfg.adam_b2, eps=cfg.eps)
  if cfg.name == "sgd":
    return optax.sgd(schedule)
  raise ValueError(f"Unknown optimizer {cfg.name!r}; choose 'rmsprop', 'adam' or 'sgd'.")


def make_schedule(
  cfg: OptimizerSettings, num_envs: int, num_learners: int, total_updates: int
) -> optax.Schedule:
  """The scaled (`cfg.lr_scaling`) and annealed (`cfg.anneal`) learning-rate schedule."""
  lr = scaled_learning_rate(cfg.learning_rate, cfg.lr_scaling, num_envs, num_learners)
  return learning_rate_schedule(lr, cfg.anneal, total_updates)


def make_optimizer(
  cfg: OptimizerSettings,
  num_envs: int,
  num_learners: int,
  total_updates: int,
  per_tensor_clip: bool = True,
) -> tuple[optax.GradientTransformation, optax.Schedule]:
  """Gradient clipping, then the optimizer of `cfg.name` with a scaled, annealed lr.

  `per_tensor_clip=False` leaves `cfg.clip_average_norm` out of the chain (for callers
  that clip each learner's gradient before combining). Returns the transformation and its
  lr schedule (a function of the update count).
  """
  schedule = make_schedule(cfg, num_envs, num_learners, total_updates)
  return clipped_optimizer(cfg, schedule, per_tensor_clip), schedule


def clipped_optimizer(
  cfg: OptimizerSettings, schedule: optax.Schedule, per_tensor_clip: bool = True
) -> optax.GradientTransformation:
  """Gradient clipping (per tensor first, with `per_tensor_clip`), then the optimizer of
  `cfg.name` with the lr `schedule`."""
  clip = []
  if per_tensor_clip and cfg.clip_average_norm > 0:
    clip.append(clip_by_average_norm(cfg.clip_average_norm))
  if cfg.max_grad_norm > 0:
    clip.append(optax.clip_by_global_norm(cfg.max_grad_norm))
  return optax.chain(*clip, elementwise_optimizer(cfg, schedule))


def learner_schedule(
  cfg: OptimizerSettings,
  num_envs: int,
  num_learners: int,
  anneal_updates: int,
  steps_per_update: int = 1,
) -> tuple[optax.Schedule, optax.Schedule]:
  """The learning rate as a function of the optimizer step, and of the update count.

  `anneal_updates`: the updates over which a linear anneal reaches 0 (`Setup`).
  `steps_per_update`: optimizer steps per update (PPO's minibatch steps, A3C's n
  applications); the schedule counts steps.
  """
  schedule = make_schedule(cfg, num_envs, num_learners, anneal_updates * steps_per_update)
  if steps_per_update == 1:
    return schedule, schedule
  return schedule, lambda update: schedule(update * steps_per_update)


class LearnerOptimizer(Protocol):
  """The optimizer step of a device's block of L learners (see the module docstring)."""

  def init(self, params: Params) -> OptState:
    """The optimizer state of one learner."""

  def clip_each(self, grads: ParamsBlock) -> ParamsBlock:
    """Each learner's own gradient [L, ...] clipped per tensor (`clip_average_norm`), the
    first thing done to it, before the learners combine; unchanged where that is off."""

  def step(
    self, grads: ParamsBlock, opt_state: OptState, params: ParamsBlock
  ) -> tuple[ParamsBlock, OptState, jax.Array]:
    """(params, opt_state, norm of the gradient each learner applies [L]) after one step
    on the (combined) gradients `grads`."""


def clip_each_learner(grads: ParamsBlock, clip_average_norm: float) -> ParamsBlock:
  """Per-tensor clipping by average norm of every learner's gradient in a block [L, ...]."""
  if clip_average_norm <= 0:
    return grads
  clip = clip_by_average_norm(clip_average_norm)
  return jax.vmap(lambda g: clip.update(g, ())[0])(grads)


class ReplicatedOptimizer:
  """Every learner holds the whole optimizer state and steps it on its own gradient.

  `optimizer` must not clip by average norm itself when `clip_average_norm` > 0.
  """

  def __init__(self, optimizer: optax.GradientTransformation, clip_average_norm: float = 0.0):
    self.optimizer = optimizer
    self.clip_average_norm = clip_average_norm

  def init(self, params: Params) -> OptState:
    return self.optimizer.init(params)

  def clip_each(self, grads: ParamsBlock) -> ParamsBlock:
    return clip_each_learner(grads, self.clip_average_norm)

  def step(
    self, grads: ParamsBlock, opt_state: OptState, params: ParamsBlock
  ) -> tuple[ParamsBlock, OptState, jax.Array]:
    updates, opt_state = jax.vmap(self.optimizer.update)(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, jax.vmap(optax.tree.norm)(grads)


def make_replicated_optimizer(
  cfg: OptimizerSettings, schedule: optax.Schedule
) -> ReplicatedOptimizer:
  """The replicated optimizer step for the run's optimizer `cfg`, with the lr `schedule`
  (a function of the optimizer step: `learner_schedule`'s, the one the logger reads)."""
  return ReplicatedOptimizer(clipped_optimizer(cfg, schedule, False), cfg.clip_average_norm)
