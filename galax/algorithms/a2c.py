"""A2C / PAAC: synchronous batched actor-critic with n-step returns (Clemente et al. 2017).

One update of one learner:
  1. act t_max steps in its b envs with the current parameters (`rollout`),
  2. n-step returns (or GAE) bootstrapped from V(o_T), masking auto-reset steps,
  3. the A2C loss and its gradient,
  4. optionally draw which learners' gradients arrive late (`galax.parallel.stragglers`),
  5. `combiner.grads` (`galax.parallel.combine`): all-reduce averages the learners'
     gradients here (the first m to arrive, when dropping stragglers), after each learner's
     own per-tensor clipping,
  6. the optimizer step (its state replicated per learner, `galax.core.optimizers`, or
     sharded across learners, `galax.parallel.sharded_optimizer`),
  7. `combiner.params`: GALA's gossip mixes parameters here (and measures consensus).

The same learner serves a single PAAC learner (n = 1), all-reduce A2C and GALA-A2C; they
differ only in the combiner. All n learners run as one `shard_map` program.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import jax
import jax.numpy as jnp

import galax.framework.spec as spec  # the module, not the package (whose registry imports this)
from galax.core import losses
from galax.core.optimizers import LearnerOptimizer
from galax.core.returns import ReturnSettings, compute_targets
from galax.core.rollout import Trajectory, check_trajectory, episode_log, rollout
from galax.core.types import Params
from galax.framework.algorithm import Algorithm, assemble
from galax.framework.settings import RunSettings
from galax.framework.update import (
  BlockUpdate,
  LearnerState,
  Setup,
  block_policy,
  chunked,
  finish_update,
  make_learners,
)
from galax.parallel import diagnostics
from galax.parallel import layout as lx
from galax.parallel.combine import Combiner
from galax.parallel.stragglers import StragglerModel, make_straggler_model


def a2c_grads(
  apply_fn: Callable,
  returns: ReturnSettings,
  loss: losses.LossSettings,
  params: Params,
  traj: Trajectory,
  chunks: int = 1,
) -> tuple[Params, losses.LossTerms]:
  """Gradient of the A2C loss of one learner's trajectory [T, b] at `params`.

  With `chunks` = k > 1 the b envs are split into k equal chunks and the gradient is the
  mean of the chunks' gradients (`algorithm.chunked`): the loss is a mean over
  [T, b] (fixed normaliser), so this is the same gradient up to float rounding.
  """
  check_trajectory(traj)
  targets = compute_targets(traj, returns)
  mask = traj.valid.astype(jnp.float32)

  def chunk_grads(chunk):
    obs, actions, chunk_targets, chunk_mask = chunk

    def loss_fn(p):
      logits, values = apply_fn(p, obs)
      terms = losses.a2c_loss(
        logits,
        values,
        actions,
        chunk_targets,
        chunk_mask,
        loss.entropy_coef,
        loss.value_coef,
        loss.sum_over_time,
      )
      return terms.total, terms

    return jax.grad(loss_fn, has_aux=True)(params)

  return chunked(chunk_grads, chunks)((traj.obs, traj.actions, targets, mask))


def make_a2c_update(
  setup: Setup,
  optimizer: LearnerOptimizer,
  combiner: Combiner,
  stragglers: StragglerModel | None = None,
) -> BlockUpdate:
  """The block update (see module docstring) for `compile_step`; `optimizer` applies the
  gradients (`galax.core.optimizers.LearnerOptimizer`)."""
  settings = setup.settings
  learners = setup.layout.learners_per_device
  apply_fn = setup.network.apply
  how, chunks = setup.plan.learner_map, setup.plan.grad_chunks
  policy = block_policy(apply_fn, learners, how)
  returns, loss, t_max = settings.returns, settings.loss, settings.t_max

  def update(state: LearnerState):
    env_state, keys, traj = rollout(
      policy,
      state.params,
      setup.env,
      state.env_state,
      state.action_keys,
      t_max,
      lx.env_shard_index(),
    )
    per_learner = lx.split_learners(traj, learners)
    grads, terms = lx.map_learners(
      lambda p, t: a2c_grads(apply_fn, returns, loss, p, t, chunks),
      state.params,
      per_learner,
      how=how,
    )
    metrics = dict(loss=terms._asdict(), episodes=episode_log(traj)._asdict())
    weights = None  # straggler dropping: the all-reduce mean's weights [L]
    if stragglers is not None:
      weights, metrics["stragglers"] = stragglers.weights(learners, state.update_count[0])
    if settings.grad_similarity:  # GALA Fig. 2b: the learners' own gradients, [L, n]
      metrics["grad_cosine"] = diagnostics.grad_cosine_similarity(grads)
    grads = combiner.grads(optimizer.clip_each(grads), weights)  # all-reduce: the mean
    params, opt_state, metrics["grad_norm"] = optimizer.step(grads, state.opt_state, state.params)
    params, combiner_state, combine_metrics = combiner.params(  # gossip: mix with peers
      state.params, params, state.combiner
    )
    return finish_update(
      state,
      params=params,
      opt_state=opt_state,
      combiner_state=combiner_state,
      env_state=env_state,
      action_keys=keys,
      metrics={**metrics, **combine_metrics},
    )

  return update


@dataclasses.dataclass(frozen=True, kw_only=True)
class A2CSettings:
  """A2C's own section, `stragglers`: all-reduce learners' straggler mitigation
  (`galax.parallel.stragglers`; `galax.config.validate` checks it). Each update keeps the
  gradients of the first num_kept of the n learners to finish and drops the rest
  (SyncReplicas with ngrads < workers). Step times are simulated: 1 + scale * X, X drawn
  per learner and update (combine=allreduce, a2c)."""

  num_kept: int = 0  # m of n gradients aggregated; 0 = all (off)
  step_time: str = "exponential"  # exponential | lognormal | uniform (law of X)
  scale: float = 1.0  # spread of the step times around 1


def make_a2c(
  settings: RunSettings[A2CSettings], devices: Sequence[jax.Device] | None = None
) -> Algorithm:
  """A2C / PAAC (n = 1), all-reduce A2C and GALA-A2C (n > 1) from a run's settings."""
  setup, combiner, optimizer, schedule = make_learners(settings, SPECS[0], devices)
  s = settings.own
  stragglers = make_straggler_model(
    settings.num_learners, s.num_kept, s.step_time, s.scale, settings.seed
  )
  update = make_a2c_update(setup, optimizer, combiner, stragglers)
  return assemble(setup, update, optimizer, schedule, settings.t_max, combiner)


SPECS = (
  spec.AlgorithmSpec(
    "a2c",
    make_a2c,
    own=lambda config: config.stragglers,
    sections={"stragglers": A2CSettings},
    features=frozenset(
      {spec.LEARNER_MAP, spec.GRAD_SIMILARITY, spec.STRAGGLERS, spec.SHARDED_STATE, spec.ASYNC_ENVS}
    ),
  ),
)
