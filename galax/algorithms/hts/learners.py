"""HTS-RL's learners: the learner's work on the storage D_{k-1} as a sequence of units.

A learner's work is `begin` (prepare a carry from the storage), `num_units` calls of
`unit(carry, u)` (each changes only the carry entries named in `mutable`), and `finish`
(parameters, optimizer state, metrics). The segment (galax/algorithms/hts/segment.py) spreads the
units over its env steps.

  HTS-A2C (`A2CStepLearner`): unit t adds the gradient of time step t of D_{k-1} at
    theta_{k-1}; `finish` takes one optimizer step from theta_k (Eq. 6).
    `CurrentA2CStepLearner` takes the same gradients at theta_k instead, where the authors'
    code's learner takes its (`config.hts.gradient_point = "current"`).
  HTS-PPO (`PPOSegmentLearner`): unit u is PPO minibatch update u, started at theta_k;
    the storage's behaviour logits (theta_{k-1}) give the ratios.

How the learners differ for the segment is their behaviour here, not a switch there:
`keep_behaviour` (what the state carries as theta_{k-1}) and `gradient_point` (which
parameters, of which version, the gradients are taken at).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Protocol

import jax
import jax.numpy as jnp

from galax.algorithms.ppo import PPOLearner
from galax.core import losses
from galax.core.optimizers import LearnerOptimizer
from galax.core.returns import ReturnSettings, compute_targets
from galax.core.rollout import Trajectory
from galax.core.types import Metrics, OptState, Params, ParamsBlock, PyTree
from galax.parallel.combine import Combiner
from galax.parallel.layout import split_learners


class SegmentLearner(Protocol):
  """A learner whose units the HTS segment hosts (see the module docstring)."""

  num_units: int
  combiner: Combiner
  mutable: tuple[str, ...]  # the carry fields a unit changes (the carry: a NamedTuple)

  def begin(
    self,
    grad_params: ParamsBlock,
    params: ParamsBlock,
    opt_state: OptState,
    traj: Trajectory,
    keys: jax.Array,
  ) -> NamedTuple:
    """The carry for D_{k-1} (time-major `traj`), gradients at `grad_params`."""

  def unit(self, carry: NamedTuple, u: int | jax.Array) -> NamedTuple:
    """Unit u (0 <= u < num_units; a Python int or a traced int32) applied to the carry."""

  def finish(self, carry: NamedTuple) -> tuple[ParamsBlock, OptState, Metrics]:
    """(params, opt_state, metrics) from the carry after the last unit."""

  def keep_behaviour(self, acting_params: ParamsBlock) -> PyTree:
    """What the state keeps of the acting parameters for the next segment."""

  def gradient_point(
    self, kept: PyTree, params: ParamsBlock, versions: tuple[jax.Array, jax.Array]
  ) -> tuple[ParamsBlock, jax.Array]:
    """(parameters, version) the gradients are taken at, from the kept theta_{k-1} and
    theta_k; `versions` = (version of theta_{k-1}, version of theta_k)."""


def windowed_targets(traj: Trajectory, returns: ReturnSettings, t_max: int) -> jax.Array:
  """A2C targets [T, b] of a T-step trajectory cut into T / t_max rollouts of t_max steps.

  Each window bootstraps from the behaviour value at its end, as t_max-step A2C would.
  """
  steps = traj.rewards.shape[0]
  windows = steps // t_max
  cut = lambda x: x.reshape(windows, t_max, *x.shape[1:])
  values = jnp.concatenate([cut(traj.values[:-1]), traj.values[t_max::t_max][:, None]], axis=1)
  window_trajs = Trajectory(
    obs=None,
    actions=None,
    rewards=cut(traj.rewards),
    terminated=cut(traj.terminated),
    truncated=cut(traj.truncated),
    valid=None,
    behaviour_logits=None,
    values=values,
    episode_over=None,
    episode_return=None,
    episode_length=None,
  )
  targets = jax.vmap(lambda t: compute_targets(t, returns))(window_trajs)
  return targets.reshape(steps, *targets.shape[2:])


class AtPreviousParameters:
  """Learners whose work on D_{k-1} starts at theta_{k-1}, the parameters that acted for
  it: the state keeps the acting parameters for the next segment."""

  def keep_behaviour(self, acting_params: ParamsBlock) -> ParamsBlock:
    """theta_k, kept for the next segment, where it is theta_{k-1}."""
    return acting_params

  def gradient_point(
    self, kept: ParamsBlock, params: ParamsBlock, versions: tuple[jax.Array, jax.Array]
  ) -> tuple[ParamsBlock, jax.Array]:
    """theta_{k-1} (`kept`) and its version."""
    del params
    return kept, versions[0]


class AtCurrentParameters:
  """Learners whose work on D_{k-1} starts at theta_k, the learner's latest parameters (the
  authors' code's learner): the state keeps nothing of the acting parameters."""

  def keep_behaviour(self, acting_params: ParamsBlock) -> tuple[()]:
    """Nothing: the gradients are taken at theta_k, which the state holds anyway."""
    del acting_params
    return ()

  def gradient_point(
    self, kept: tuple[()], params: ParamsBlock, versions: tuple[jax.Array, jax.Array]
  ) -> tuple[ParamsBlock, jax.Array]:
    """theta_k (`params`) and its version."""
    del kept
    return params, versions[1]


class A2CSums(NamedTuple):
  """Per-learner loss sums over the time steps done so far, [L] each."""

  total: jax.Array
  policy: jax.Array
  value: jax.Array
  entropy: jax.Array


class A2CStepCarry(NamedTuple):
  """HTS-A2C's carry: the storage as [L, T, b, ...] rows and the gradient accumulator."""

  grad_params: ParamsBlock  # the gradients are taken here: theta_{k-1} (Eq. 6) or theta_k
  params: ParamsBlock  # theta_k: the optimizer step starts here
  opt_state: OptState
  obs: jax.Array
  actions: jax.Array
  targets: jax.Array
  mask: jax.Array
  acc: ParamsBlock  # the sum of the time steps' gradients so far
  sums: A2CSums


class A2CStepLearner(AtPreviousParameters):
  """HTS-A2C's learner: grad L(theta_{k-1}; D_{k-1}) in per-time-step units, then one step.

  L is the A2C loss (`losses.a2c_loss`) of the alpha x b storage, normalized by alpha * b;
  it is the sum over t of the losses of the time steps, each normalized the same way, so
  unit t adds the gradient of time step t at the behaviour parameters to an accumulator.
  """

  def __init__(
    self,
    apply_fn: Callable,
    returns: ReturnSettings,
    loss: losses.LossSettings,
    t_max: int,
    optimizer: LearnerOptimizer,
    combiner: Combiner,
    learners: int,
    alpha: int,
  ):
    """Targets bootstrap every `t_max` steps of the alpha-step storage, as A2C's would."""
    self.apply_fn, self.returns, self.loss = apply_fn, returns, loss
    self.t_max, self.optimizer = t_max, optimizer
    self.combiner, self.learners, self.alpha = combiner, learners, alpha
    self.num_units = alpha
    self.mutable = ("acc", "sums")  # the carry entries a unit changes
    # a2c_loss with sum_over_time multiplies by the rollout length t_max.
    self.scale = (t_max if loss.sum_over_time else 1.0) / alpha

  def begin(
    self,
    grad_params: ParamsBlock,
    params: ParamsBlock,
    opt_state: OptState,
    traj: Trajectory,
    keys: jax.Array,
  ) -> A2CStepCarry:
    del keys
    per_learner = split_learners(traj, self.learners)  # [L, T, b, ...]
    targets = jax.vmap(lambda t: windowed_targets(t, self.returns, self.t_max))(per_learner)
    zeros = jnp.zeros((self.learners,), jnp.float32)
    return A2CStepCarry(
      grad_params=grad_params,
      params=params,
      opt_state=opt_state,
      obs=per_learner.obs,
      actions=per_learner.actions,
      targets=targets,
      mask=per_learner.valid.astype(jnp.float32),
      acc=jax.tree.map(jnp.zeros_like, grad_params),
      sums=A2CSums(zeros, zeros, zeros, zeros),
    )

  def _step_grads(self, params: Params, row: dict) -> tuple[Params, losses.LossTerms]:
    loss = self.loss

    def loss_fn(p):
      logits, values = self.apply_fn(p, row["obs"])
      terms = losses.a2c_loss(
        logits,
        values,
        row["actions"],
        row["targets"],
        row["mask"],
        loss.entropy_coef,
        loss.value_coef,
      )
      return self.scale * terms.total, terms

    return jax.grad(loss_fn, has_aux=True)(params)

  def unit(self, carry: A2CStepCarry, t: int | jax.Array) -> A2CStepCarry:
    """Adds the gradient of time step t (a Python int or traced int32)."""
    row = {
      k: jax.lax.dynamic_index_in_dim(getattr(carry, k), t, axis=1, keepdims=True)
      for k in ("obs", "actions", "targets", "mask")
    }  # [L, 1, b, ...]
    grads, terms = jax.vmap(self._step_grads)(carry.grad_params, row)
    acc = jax.tree.map(jnp.add, carry.acc, grads)
    sums = A2CSums(
      *[s + getattr(terms, k) / self.alpha for k, s in zip(A2CSums._fields, carry.sums)]
    )
    return carry._replace(acc=acc, sums=sums)

  def finish(self, carry: A2CStepCarry) -> tuple[ParamsBlock, OptState, Metrics]:
    grads = self.combiner.grads(self.optimizer.clip_each(carry.acc))  # all-reduce: the mean
    params, opt_state, grad_norm = self.optimizer.step(grads, carry.opt_state, carry.params)
    return params, opt_state, dict(loss=carry.sums._asdict(), grad_norm=grad_norm)


class CurrentA2CStepLearner(AtCurrentParameters, A2CStepLearner):
  """HTS-A2C with its gradient at theta_k (`config.hts.gradient_point = "current"`):

      theta_{k+1} = theta_k - eta * grad L(theta_k; D_{k-1})

  The storage D_{k-1} was collected by theta_{k-1}, so the policy gradient is one update
  off-policy, uncorrected, as the authors' code's learner takes its gradients at its latest
  parameters. The targets still bootstrap from the storage's behaviour values; the
  advantages and the value loss use theta_k's values. With the delay off it is A2C.
  """


class PPOSegmentLearner(AtCurrentParameters):
  """HTS-PPO's learner: `PPOLearner` started at theta_k on D_{k-1} (ratios vs theta_{k-1}).

  Its metrics are PPO's (`PPOLearner.finish`): clip fraction and approximate KL against
  the storage's behaviour policy theta_{k-1}, explained variance of its behaviour values.
  """

  def __init__(self, ppo: PPOLearner):
    self.ppo, self.num_units = ppo, ppo.num_units
    self.combiner = ppo.combiner
    self.mutable = ("params", "opt_state", "sums")

  def begin(self, behaviour_params, params, opt_state, traj, keys):
    del behaviour_params  # the storage holds the behaviour logits and values
    return self.ppo.begin(params, opt_state, traj, keys)

  def unit(self, carry, u):
    return self.ppo.unit(carry, u)

  def finish(self, carry):
    return self.ppo.finish(carry)


class StalePPOSegmentLearner(AtPreviousParameters, PPOSegmentLearner):
  """HTS-PPO with Eq. 6 read literally (`config.hts.gradient_point = "stale"`).

  The epochs on D_{k-1} start at theta_{k-1}, the parameters that collected it, so the
  first minibatch is on-policy (ratio 1); they end at theta'. The change is then applied
  to the current parameters:

      theta_{k+1} = theta_k + (theta' - theta_{k-1})

  The optimizer state is carried through the epochs as in PPO (Adam's moments see the
  gradients at the points the epochs pass through). With the delay off (theta_{k-1} =
  theta_k) make_learner builds `PPOSegmentLearner` instead: plain PPO, bit for bit.
  """

  def begin(self, behaviour_params, params, opt_state, traj, keys):
    carry = self.ppo.begin(behaviour_params, opt_state, traj, keys)
    return carry._replace(anchor=(params, behaviour_params))  # (theta_k, theta_{k-1})

  def finish(self, carry):
    moved, opt_state, metrics = self.ppo.finish(carry)
    current, start = carry.anchor
    params = jax.tree.map(lambda now, end, start: now + (end - start), current, moved, start)
    return params, opt_state, metrics
