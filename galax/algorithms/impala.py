"""IMPALA (Espeholt et al. 2018), the off-policy baseline of GALA and HTS-RL, with a
deterministic policy lag.

In IMPALA, actors fetch the learner's parameters, act an unroll, and queue it; the learner
trains on batches of queued unrolls, so the policy that acted (behaviour, mu) lags the
learner's (target, pi) by several updates (HTS-RL, Claim 2: the lag grows with the number
of actors). V-trace corrects for the lag. Here the lag is a fixed number of updates K
(config.impala.policy_lag), which makes runs reproducible.

theta_u are the learner's parameters after u updates. Update u:
  1. the actors act t_max steps (the unroll) in the learner's b envs with theta_{u-K}
     (theta_0 for u < K), read from a queue of the last K versions; the unrolls keep the
     behaviour logits;
  2. the learner evaluates pi and V at theta_u on the unroll and V(x_T) to bootstrap;
     log rho_t = log pi(a_t | x_t) - log mu(a_t | x_t);
  3. V-trace targets and advantages (`galax.core.returns.vtrace`; rho-bar, c-bar = 1);
  4. the loss (`galax.core.losses.off_policy_actor_critic_loss`, mean or TorchBeast's sum), its
     gradient, and the learners' optimizer step (`galax.core.optimizers`;
     several learners with combine=allreduce form a synchronous multi-device learner);
  5. theta_u replaces theta_{u-K} in the queue.

With K = 0 the data are on-policy, V-trace gives the n-step returns and IMPALA (reduction
"mean") is A2C (tests/algorithms/test_impala.py). The unroll length is `t_max` and the learner batch
(unrolls per update) is `envs_per_learner`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import chex
import flax.struct
import jax
import jax.numpy as jnp

import galax.framework.spec as spec  # the module, not the package (whose registry imports this)
from galax.core import losses
from galax.core import returns as returns_lib
from galax.core.optimizers import LearnerOptimizer
from galax.core.rollout import Trajectory, check_trajectory, episode_log, rollout
from galax.core.types import Params, ParamsBlock
from galax.framework.algorithm import Algorithm, assemble
from galax.framework.settings import RunSettings
from galax.framework.spec import RunConfig, check_choice, check_positive
from galax.framework.update import (
  BlockUpdate,
  LearnerState,
  Setup,
  block_policy,
  chunked,
  finish_update,
  make_learners,
)
from galax.parallel import layout as lx
from galax.parallel.combine import Combiner


@flax.struct.dataclass
class ImpalaExtra:
  queue: ParamsBlock  # [n, K, ...]: theta_v sits in slot v mod K (K = policy_lag; empty if K = 0)


@dataclasses.dataclass(frozen=True)
class VTraceSettings:
  """V-trace's targets and the loss's reduction: discount, rho-bar, c-bar, "mean"/"sum"."""

  gamma: float
  rho_bar: float
  c_bar: float
  reduction: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class ImpalaSettings:
  """The `impala` section: actors act with parameters policy_lag updates old; the learner
  corrects with V-trace. The unroll length is t_max; the batch is envs_per_learner."""

  policy_lag: int = 2  # updates between the acting and the learning parameters
  rho_bar: float = 1.0  # V-trace truncation of the importance weights in delta_t
  c_bar: float = 1.0  # V-trace truncation of the trace coefficients
  reduction: str = "mean"  # mean over the batch | sum (TorchBeast: loss summed over T, B)


def impala_settings(config: RunConfig) -> ImpalaSettings:
  """The run's `impala` section, checked: one ValueError line for a value it cannot run."""
  c = config.impala
  check_choice("impala.reduction", c.reduction, ("mean", "sum"))
  check_positive("impala.policy_lag", c.policy_lag, or_zero=True)
  check_positive("impala.rho_bar", c.rho_bar)
  check_positive("impala.c_bar", c.c_bar)
  return c


def impala_grads(
  apply_fn: Callable,
  vtrace: VTraceSettings,
  loss: losses.LossSettings,
  params: Params,
  traj: Trajectory,
  last_obs: jax.Array,
  chunks: int = 1,
) -> tuple[Params, tuple[losses.LossTerms, jax.Array]]:
  """Gradient of the V-trace actor-critic loss of one learner's unroll [T, b] at `params`.

  `last_obs` [b, ...] is x_T, whose value bootstraps the last step. Also returns the
  log importance ratios log pi / mu, [T, b]. With `chunks` > 1: `chunked_impala_grads`.
  """
  check_trajectory(traj)
  chex.assert_shape(last_obs, traj.obs.shape[1:])
  if chunks > 1:
    return chunked_impala_grads(apply_fn, vtrace, loss, params, traj, last_obs, chunks)
  obs = jnp.concatenate([traj.obs, last_obs[None]], axis=0)  # x_0 .. x_T
  discounts = vtrace.gamma * (1.0 - traj.terminated.astype(jnp.float32))
  mask = traj.valid.astype(jnp.float32)
  behaviour_log_probs = losses.action_log_prob(traj.behaviour_logits, traj.actions)

  def loss_fn(p):
    logits, values = apply_fn(p, obs)
    logits = logits[:-1]
    log_rhos = losses.action_log_prob(logits, traj.actions) - behaviour_log_probs
    targets = returns_lib.vtrace(
      traj.rewards, discounts, values, traj.truncated, log_rhos, vtrace.rho_bar, vtrace.c_bar
    )
    terms = losses.off_policy_actor_critic_loss(
      logits,
      values[:-1],
      traj.actions,
      targets.pg_advantages,
      targets.vs,
      mask,
      loss.entropy_coef,
      loss.value_coef,
      vtrace.reduction,
    )
    return terms.total, (terms, jax.lax.stop_gradient(log_rhos))

  grads, aux = jax.grad(loss_fn, has_aux=True)(params)
  return grads, aux


def chunked_impala_grads(
  apply_fn: Callable,
  vtrace: VTraceSettings,
  loss: losses.LossSettings,
  params: Params,
  traj: Trajectory,
  last_obs: jax.Array,
  chunks: int,
) -> tuple[Params, tuple[losses.LossTerms, jax.Array]]:
  """`impala_grads` with the b envs cut into `chunks` = k equal chunks (V-trace runs along
  each env's time axis, so the chunks' targets are the whole batch's) and the chunk
  gradients combined as the loss reduction combines them: averaged for "mean" (each chunk's
  mean has the same fixed normaliser), summed for "sum". The same gradient up to float
  rounding, computed as k smaller programs (`algorithm.chunked`)."""
  scale = 1.0 / chunks if vtrace.reduction == "mean" else 1.0

  def combine(parts):  # gradients and loss terms as the reduction; log rhos side by side
    grads, terms = jax.tree.map(
      lambda *xs: sum(xs) * scale, *[(g, terms) for g, (terms, _) in parts]
    )
    return grads, (terms, jnp.concatenate([rhos for _, (_, rhos) in parts], axis=1))

  # last_obs [b, ...] rides along as [1, b, ...]: both chunk along the env axis 1.
  per_chunk = lambda part: impala_grads(apply_fn, vtrace, loss, params, part[0], part[1][0])
  return chunked(per_chunk, chunks, combine=combine)((traj, last_obs[None]))


def make_impala_update(
  setup: Setup, optimizer: LearnerOptimizer, combiner: Combiner, vtrace: VTraceSettings, lag: int
) -> BlockUpdate:
  """The block update (see the module docstring) for `compile_step`: actors `lag` updates
  behind the learner."""
  learners = setup.layout.learners_per_device
  loss, t_max = setup.settings.loss, setup.settings.t_max
  apply_fn = setup.network.apply
  policy = block_policy(apply_fn, learners)
  chunks = setup.plan.grad_chunks

  def update(state: LearnerState):
    rows = jnp.arange(learners)
    if lag:
      slot = state.update_count % lag  # [L]: holds theta_{u-K}, then receives theta_u
      behaviour = jax.tree.map(lambda q: q[rows, slot], state.extra.queue)
    else:
      behaviour = state.params
    env_state, keys, traj = rollout(
      policy, behaviour, setup.env, state.env_state, state.action_keys, t_max, lx.env_shard_index()
    )
    last_obs = lx.learner_block(env_state.obs, learners)
    grads, (terms, log_rhos) = jax.vmap(
      lambda p, t, o: impala_grads(apply_fn, vtrace, loss, p, t, o, chunks)
    )(state.params, lx.split_learners(traj, learners), last_obs)
    grads = combiner.grads(optimizer.clip_each(grads))  # all-reduce: the mean
    params, opt_state, grad_norm = optimizer.step(grads, state.opt_state, state.params)
    params, combiner_state, combine_metrics = combiner.params(  # gossip: mix with peers
      state.params, params, state.combiner
    )
    queue = state.extra.queue
    if lag:
      queue = jax.tree.map(lambda q, p: q.at[rows, slot].set(p), queue, state.params)
    mask = lx.split_learners(traj, learners).valid
    abs_log_rho = jnp.sum(jnp.abs(log_rhos) * mask, axis=(1, 2)) / jnp.maximum(
      jnp.sum(mask, axis=(1, 2)), 1
    )
    metrics = dict(
      loss=terms._asdict(),
      grad_norm=grad_norm,
      abs_log_rho=abs_log_rho,
      episodes=episode_log(traj)._asdict(),
      **combine_metrics,
    )
    return finish_update(
      state,
      params=params,
      opt_state=opt_state,
      combiner_state=combiner_state,
      env_state=env_state,
      action_keys=keys,
      metrics=metrics,
      extra=ImpalaExtra(queue),
    )

  return update


def make_impala(
  settings: RunSettings[ImpalaSettings], devices: Sequence[jax.Device] | None = None
) -> Algorithm:
  """IMPALA with a policy lag of `impala.policy_lag` updates; see the module docstring."""
  setup, combiner, optimizer, schedule = make_learners(settings, SPECS[0], devices)
  impala = settings.own
  lag = impala.policy_lag
  vtrace = VTraceSettings(settings.returns.gamma, impala.rho_bar, impala.c_bar, impala.reduction)

  def init_extra(params):  # params: this process's learners, [local_learners, ...]
    queue = jax.tree.map(lambda x: jnp.repeat(x[:, None], lag, axis=1), params)
    return ImpalaExtra(queue)

  update = make_impala_update(setup, optimizer, combiner, vtrace, lag)
  return assemble(setup, update, optimizer, schedule, settings.t_max, combiner, init_extra)


SPECS = (
  spec.AlgorithmSpec(
    "impala",
    make_impala,
    own=impala_settings,
    features=frozenset({spec.SHARDED_STATE}),
    sections={"impala": ImpalaSettings},
  ),
)
