"""Straggler mitigation for all-reduce: aggregate the first m of n learners' gradients.

Distributed BA3C (Adamski et al. 2018, after Chen et al. 2016) ran TensorFlow's
SyncReplicasOptimizer with ngrads < workers: an update is applied as soon as m of the n
workers' gradients have arrived, and the late gradients are discarded (never applied
later). In one SPMD program every learner computes its gradient; which ones arrive late
is decided by a straggler model of per-learner step times, drawn for every update:

  exponential  T_i = 1 + scale * E_i,   E_i ~ Exp(1)      (shifted exponential, long tail)
  uniform      T_i = 1 + scale * U_i,   U_i ~ U(0, 1)
  lognormal    T_i = exp(scale * Z_i),  Z_i ~ N(0, 1)      (median 1)

The kept learners are the m with the smallest T_i (ties go to the lower index). The
all-reduce mean weights learner i's gradient by w_i = (n / m) [i kept], so it becomes
(1 / m) sum_{i kept} g_i, the mean of the kept gradients (after each learner's per-tensor
clipping, as SyncReplicas averaged clipped worker gradients: `LearnerOptimizer`); with
m = n, w_i = 1.
The simulated duration of the update is the m-th smallest T_i (waiting for all would take
max_i T_i); both are reported so that the time saved can be read off the metrics.

The draws of update u use the key fold_in(fold_in(PRNGKey(seed), STREAM), u): a key made
from the seed and the update count kept in the training state, so a run (and a resumed
one) is reproducible bit for bit without extra state, and every learner draws the same
times and agrees on who is kept.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from galax.parallel.layout import AXIS

STREAM = 0x57A6  # separates these draws from the other uses of config.seed
STEP_TIME_LAWS = ("exponential", "uniform", "lognormal")


def step_times(key: jax.Array, num_learners: int, law: str, scale: float) -> jax.Array:
  """Simulated step times T_i of n learners for one update, [n]."""
  if law == "exponential":
    return 1.0 + scale * jax.random.exponential(key, (num_learners,))
  if law == "uniform":
    return 1.0 + scale * jax.random.uniform(key, (num_learners,))
  if law == "lognormal":
    return jnp.exp(scale * jax.random.normal(key, (num_learners,)))
  raise ValueError(f"Unknown step-time law {law!r}; choose from {STEP_TIME_LAWS}.")


def kept_mask(times: jax.Array, num_kept: int) -> jax.Array:
  """True for the `num_kept` learners with the smallest step times, [n] bool."""
  ranks = jnp.argsort(jnp.argsort(times, stable=True), stable=True)
  return ranks < num_kept


def gradient_weights(kept: jax.Array) -> jax.Array:
  """w_i = (n / m) [i kept]: an all-reduce mean of w_i g_i is the mean of the kept g_i."""
  n = kept.shape[0]
  return kept.astype(jnp.float32) * (n / jnp.sum(kept))


class StragglerModel:
  """Drops late learners' gradients (see the module docstring). Acts inside `shard_map`."""

  def __init__(self, num_learners: int, num_kept: int, law: str, scale: float, seed: int):
    if law not in STEP_TIME_LAWS:
      raise ValueError(f"Unknown step-time law {law!r}; choose from {STEP_TIME_LAWS}.")
    if not 0 < num_kept <= num_learners:
      raise ValueError(f"num_kept={num_kept} must be in [1, num_learners={num_learners}].")
    self.num_learners = num_learners
    self.num_kept = num_kept
    self.law = law
    self.scale = scale
    self.key = jax.random.fold_in(jax.random.PRNGKey(seed), STREAM)

  def draw(self, update: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Step times [n] and kept mask [n] of update number `update`."""
    times = step_times(
      jax.random.fold_in(self.key, update), self.num_learners, self.law, self.scale
    )
    return times, kept_mask(times, self.num_kept)

  def weights(self, learners: int, update: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
    """The block's gradient weights w_i [L] for the all-reduce mean of update `update`
    (exactly 1 when every gradient is kept, m = n), and per-learner metrics [L]: kept (0/1),
    wait_time (the simulated update time, m-th smallest T) and wait_all (max T, without
    dropping). Acts inside `shard_map` on a device's block of L learners."""
    times, kept = self.draw(update)
    mine = jax.lax.axis_index(AXIS) * learners + jnp.arange(learners)
    weights = gradient_weights(kept)[mine]
    wait = jnp.sort(times)[self.num_kept - 1]
    metrics = dict(
      kept=kept[mine].astype(jnp.float32),
      wait_time=jnp.broadcast_to(wait, (learners,)),
      wait_all=jnp.broadcast_to(jnp.max(times), (learners,)),
    )
    return weights, metrics


def make_straggler_model(
  num_learners: int, num_kept: int, step_time: str, scale: float, seed: int
) -> StragglerModel | None:
  """The model of `config.stragglers` (`num_kept`, `step_time`, `scale`) for a run's
  learners and `seed`, or None when every gradient is kept (num_kept 0)."""
  if not num_kept:
    return None
  return StragglerModel(num_learners, num_kept, step_time, scale, seed)
