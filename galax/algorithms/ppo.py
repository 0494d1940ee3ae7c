"""PPO: synchronous proximal policy optimization (Schulman et al. 2017), as in HTS-RL's baseline.

One update of one learner:
  1. act t_max steps in its b envs with the current parameters (`rollout`),
  2. GAE advantages and value targets from the behaviour values (`returns.gae_advantages`),
     advantages normalized over the whole batch (valid steps only),
  3. `epochs` passes over the t_max * b samples, each a fresh random permutation cut into
     `minibatches` minibatches; every minibatch is one gradient of the PPO-clip loss
     (`losses.ppo_loss`: clipped surrogate, clipped value loss with the same clip, entropy
     bonus), clipped per tensor, combined (`combiner.grads`: all-reduce for n > 1
     learners) and applied by the learners' optimizer (`LearnerOptimizer.step`),
  4. `combiner.params` after the last minibatch: gossip mixes parameters here.

Diagnostics beside the losses (CleanRL's): `clip_fraction` and `approx_kl` (the minibatches'
mean; `first_clip_fraction` the first minibatch's), and `explained_variance` of the value
targets by the behaviour values (`losses.approx_kl`, `losses.explained_variance`).

`PPOLearner`: `begin` prepares the batch, `run_epochs` runs `for epoch: for minibatch:
minibatch_update`, `finish` returns the parameters. HTS-PPO (galax/algorithms/hts/segment.py)
runs the same minibatch updates as "units" (`unit(u)`: minibatch u % minibatches of epoch
u // minibatches), spread over the next rollout's env steps.

Shuffling keys derive from `config.seed`, the learner's global index and the update count,
so a seed reproduces a run bit for bit. The learning rate (Adam, linearly annealed in the
GFootball config) counts minibatch steps: it reaches zero after the last one.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple, Sequence

import flax.struct
import jax
import jax.numpy as jnp

import galax.framework.spec as spec  # the module, not the package (whose registry imports this)
from galax.core import losses
from galax.core.losses import approx_kl, explained_variance
from galax.core.optimizers import LearnerOptimizer
from galax.core.returns import ReturnSettings, gae_targets
from galax.core.rollout import Trajectory, episode_log, rollout
from galax.core.types import Metrics, OptState, Params, ParamsBlock, PyTree
from galax.framework.algorithm import Algorithm, assemble
from galax.framework.settings import RunSettings
from galax.framework.spec import RunConfig, check_positive
from galax.framework.update import (
  BlockUpdate,
  LearnerState,
  Setup,
  block_policy,
  chunked,
  finish_update,
  make_learners,
  scan_loop,
)
from galax.parallel import layout as lx
from galax.parallel.combine import Combiner


def learner_keys(seed: int, first_learner: int, count: int) -> jax.Array:
  """Per-learner base keys for minibatch shuffling (global learner ids first..first+count-1)."""
  base = jax.random.PRNGKey(seed + 2)
  return jax.vmap(lambda i: jax.random.fold_in(base, i))(
    jnp.arange(first_learner, first_learner + count)
  )


class PPOBatch(NamedTuple):
  """One learner block's update batch, [L, T * b, ...] (values: the behaviour policy's)."""

  obs: jax.Array
  actions: jax.Array
  behaviour_logits: jax.Array
  behaviour_values: jax.Array
  advantages: jax.Array
  targets: jax.Array
  mask: jax.Array


class PPOSums(NamedTuple):
  """Per-learner sums over the minibatch updates done so far, [L] each."""

  total: jax.Array
  policy: jax.Array
  value: jax.Array
  entropy: jax.Array
  grad_norm: jax.Array
  clip_fraction: jax.Array
  first_clip_fraction: jax.Array  # the first minibatch's only
  approx_kl: jax.Array


class PPOCarry(NamedTuple):
  """The carry of the minibatch updates (`PPOLearner.unit`)."""

  params: ParamsBlock
  opt_state: OptState
  batch: PPOBatch
  perms: jax.Array  # [L, epochs, samples]: each epoch's sample order
  explained_variance: jax.Array  # [L], of the behaviour values
  sums: PPOSums
  anchor: PyTree = ()  # what `finish` needs besides (stale HTS-PPO: theta_k, theta_{k-1})


@flax.struct.dataclass
class PPOExtra:
  """PPO's own state: each learner's minibatch-shuffling key, [L, 2] (folded with the
  update count)."""

  shuffle_key: jax.Array


@dataclasses.dataclass(frozen=True, kw_only=True)
class PPOSection:
  """The `ppo` section (PPO and HTS-PPO). Advantages: GAE with gae_lambda when
  returns = "gae" (lambda 1 otherwise); value targets = advantages + V."""

  epochs: int = 2  # passes over each batch of t_max x envs samples
  minibatches: int = 8  # minibatches per epoch (must divide t_max x envs_per_learner)
  clip: float = 0.08  # ratio clip eps, also the value-loss clip (HTS-RL GFootball)
  normalize_advantages: bool = True  # (A - mean) / (std + 1e-5) over the whole batch


def ppo_section(config: RunConfig) -> PPOSection:
  """The run's `ppo` section, checked: one ValueError line for a value PPO cannot run."""
  section = config.ppo
  for name in ("epochs", "minibatches", "clip"):
    check_positive(f"ppo.{name}", getattr(section, name))
  return section


@dataclasses.dataclass(frozen=True, kw_only=True)
class PPOSettings(PPOSection):
  """PPO's settings inside the traced update: the section, the run's targets and loss
  weights (`ppo_settings`)."""

  returns: ReturnSettings
  loss: losses.LossSettings


def ppo_settings(run: RunSettings, ppo: PPOSection) -> PPOSettings:
  """The `ppo` section with the run's targets and loss weights (PPO's, HTS-PPO's builders)."""
  return PPOSettings(**dataclasses.asdict(ppo), returns=run.returns, loss=run.loss)


class PPOLearner:
  """The PPO update of a device's block of L learners: `epochs` x `minibatches` steps.

  All arrays carry the learner axis [L, ...] first; per-learner maths is vmapped.
  """

  def __init__(
    self,
    apply_fn: Callable,
    settings: PPOSettings,
    optimizer: LearnerOptimizer,
    combiner: Combiner,
    learners: int,
    steps: int,
    envs: int,
    chunks: int = 1,
  ):
    """`optimizer`: the learners' optimizer (`galax.core.optimizers.LearnerOptimizer`); each
    minibatch gradient is the mean of `chunks` sample chunks' (`algorithm.chunked`)."""
    self.apply_fn, self.settings, self.optimizer = apply_fn, settings, optimizer
    self.combiner, self.learners = combiner, learners
    self.epochs, self.minibatches = settings.epochs, settings.minibatches
    self.num_units = self.epochs * self.minibatches
    samples = steps * envs  # `galax.config.validate` checks that minibatches divide them
    self.samples, self.minibatch_size = samples, samples // self.minibatches
    self.chunks = chunks

  def begin(
    self, params: ParamsBlock, opt_state: OptState, traj: Trajectory, keys: jax.Array
  ) -> PPOCarry:
    """Prepares the batch: traj [T, L * b] (values [T + 1, L * b]), keys [L, 2]."""
    returns = self.settings.returns
    per_learner = lx.split_learners(traj, self.learners)  # [L, T, b, ...]
    lam = returns.gae_lambda if returns.kind == "gae" else 1.0
    advantages, targets = jax.vmap(lambda t: gae_targets(t, returns.gamma, lam))(per_learner)
    mask = per_learner.valid.astype(jnp.float32)
    if self.settings.normalize_advantages:
      advantages = jax.vmap(losses.normalize_advantages)(advantages, mask)
    flat = lambda x: x.reshape(x.shape[0], -1, *x.shape[3:])  # [L, T, b, ...] -> [L, T*b, ...]
    batch = PPOBatch(
      obs=flat(per_learner.obs),
      actions=flat(per_learner.actions),
      behaviour_logits=flat(per_learner.behaviour_logits),
      behaviour_values=flat(per_learner.values[:, :-1]),
      advantages=flat(advantages),
      targets=flat(targets),
      mask=flat(mask),
    )
    perms = jax.vmap(
      lambda k: jnp.stack(
        [jax.random.permutation(jax.random.fold_in(k, e), self.samples) for e in range(self.epochs)]
      )
    )(keys)  # [L, epochs, samples]
    zeros = jnp.zeros((self.learners,), jnp.float32)
    # Of the values before the update (the behaviour values), over the whole batch.
    ev = jax.vmap(explained_variance)(batch.targets, batch.behaviour_values, batch.mask)
    return PPOCarry(
      params=params,
      opt_state=opt_state,
      batch=batch,
      perms=perms,
      explained_variance=ev,
      sums=PPOSums(*[zeros] * len(PPOSums._fields)),
    )

  def _grads(self, params: Params, mb: PPOBatch) -> tuple[Params, dict]:
    clip, loss = self.settings.clip, self.settings.loss

    def loss_fn(p):
      logits, values = self.apply_fn(p, mb.obs)
      terms = losses.ppo_loss(
        logits,
        values,
        mb.actions,
        mb.behaviour_logits,
        mb.behaviour_values,
        mb.advantages,
        mb.targets,
        mb.mask,
        clip,
        loss.entropy_coef,
        loss.value_coef,
      )
      log_ratio = losses.action_log_prob(logits, mb.actions) - losses.action_log_prob(
        mb.behaviour_logits, mb.actions
      )
      clipped = (jnp.abs(jnp.exp(log_ratio) - 1.0) > clip).astype(jnp.float32)
      stats = dict(
        clip_fraction=losses.masked_mean(clipped, mb.mask), approx_kl=approx_kl(log_ratio, mb.mask)
      )
      return terms.total, (terms, stats)

    grads, (terms, stats) = jax.grad(loss_fn, has_aux=True)(params)
    return grads, dict(
      total=terms.total, policy=terms.policy, value=terms.value, entropy=terms.entropy, **stats
    )

  def _chunked_grads(self, params: Params, mb: PPOBatch) -> tuple[Params, dict]:
    """`_grads` of the minibatch, as the mean of `self.chunks` equal sample chunks' (the
    loss and clip fraction are means with a fixed normaliser: the same up to rounding)."""
    return chunked(lambda chunk: self._grads(params, chunk), self.chunks, axis=0)(mb)

  def run_epochs(self, carry: PPOCarry, unroll: bool) -> PPOCarry:
    """Every minibatch update of the batch, `for epoch: for minibatch:` (two `lax.scan`s,
    or Python loops with `unroll`: `ExecutionPlan.unroll_units`)."""

    def epoch(carry, e):
      minibatch = lambda carry, m: self.minibatch_update(carry, e, m)
      return scan_loop(minibatch, carry, self.minibatches, unroll)

    return scan_loop(epoch, carry, self.epochs, unroll)

  def unit(self, carry: PPOCarry, u: int | jax.Array) -> PPOCarry:
    """Minibatch update u in `run_epochs`' order, as one unit (HTS-PPO spreads them over its
    segment's env steps)."""
    return self.minibatch_update(carry, u // self.minibatches, u % self.minibatches)

  def minibatch_update(
    self, carry: PPOCarry, epoch: int | jax.Array, index: int | jax.Array
  ) -> PPOCarry:
    """One optimizer step on minibatch `index` of epoch `epoch`'s sample order (Python ints
    or traced int32s)."""
    size = self.minibatch_size

    def minibatch(batch, perms):
      order = jax.lax.dynamic_index_in_dim(perms, epoch, keepdims=False)
      idx = jax.lax.dynamic_slice_in_dim(order, index * size, size)
      return jax.tree.map(lambda x: jnp.take(x, idx, axis=0), batch)

    mb = jax.vmap(minibatch)(carry.batch, carry.perms)
    grads, terms = jax.vmap(self._chunked_grads)(carry.params, mb)
    grads = self.combiner.grads(self.optimizer.clip_each(grads))  # all-reduce: the mean
    params, opt_state, grad_norm = self.optimizer.step(grads, carry.opt_state, carry.params)
    # The first minibatch's: how far the start of the epochs is from the behaviour policy
    # (HTS-PPO: pi_theta_k / pi_theta_{k-1} on D_{k-1}; 0 for on-policy PPO).
    first = jnp.where((epoch == 0) & (index == 0), terms["clip_fraction"], 0.0)
    terms = PPOSums(grad_norm=grad_norm, first_clip_fraction=first, **terms)
    sums = jax.tree.map(lambda s, t: s + t, carry.sums, terms)
    return carry._replace(params=params, opt_state=opt_state, sums=sums)

  def finish(self, carry: PPOCarry) -> tuple[ParamsBlock, OptState, Metrics]:
    """(params, opt_state, metrics): losses, grad norm, clip fraction and approx. KL
    averaged over the units; the batch's explained variance."""
    means = jax.tree.map(lambda s: s / self.num_units, carry.sums)
    loss = dict(total=means.total, policy=means.policy, value=means.value, entropy=means.entropy)
    return (
      carry.params,
      carry.opt_state,
      dict(
        loss=loss,
        grad_norm=means.grad_norm,
        clip_fraction=means.clip_fraction,
        first_clip_fraction=carry.sums.first_clip_fraction,  # one unit's only
        approx_kl=means.approx_kl,
        explained_variance=carry.explained_variance,
      ),
    )


def make_ppo_update(setup: Setup, learner: PPOLearner) -> BlockUpdate:
  t_max = setup.settings.t_max
  learners = setup.layout.learners_per_device
  policy = block_policy(setup.network.apply, learners)
  unroll = setup.plan.unroll_units

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
    shuffle_keys = jax.vmap(jax.random.fold_in)(state.extra.shuffle_key, state.update_count)
    carry = learner.begin(state.params, state.opt_state, traj, shuffle_keys)
    carry = learner.run_epochs(carry, unroll)
    params, opt_state, metrics = learner.finish(carry)
    params, combiner_state, combine_metrics = learner.combiner.params(  # gossip: mix
      state.params, params, state.combiner
    )
    metrics = dict(metrics, episodes=episode_log(traj)._asdict(), **combine_metrics)
    return finish_update(
      state,
      params=params,
      opt_state=opt_state,
      combiner_state=combiner_state,
      env_state=env_state,
      action_keys=keys,
      metrics=metrics,
    )

  return update


def make_ppo(
  settings: RunSettings[PPOSection], devices: Sequence[jax.Device] | None = None
) -> Algorithm:
  """Synchronous PPO (n = 1) or n learners, independent or all-reducing gradients."""
  ppo = settings.own
  units = ppo.epochs * ppo.minibatches
  setup, combiner, optimizer, schedule = make_learners(settings, SPECS[0], devices, units)
  layout = setup.layout
  learner = PPOLearner(
    setup.network.apply,
    ppo_settings(settings, ppo),
    optimizer,
    combiner,
    layout.learners_per_device,
    settings.t_max,
    layout.envs_per_learner,
    setup.plan.grad_chunks,
  )

  def init_extra(params):
    return PPOExtra(learner_keys(settings.seed, layout.first_learner, layout.local_learners))

  return assemble(
    setup,
    make_ppo_update(setup, learner),
    optimizer,
    schedule,
    settings.t_max,
    combiner,
    init_extra,
  )


SPECS = (
  spec.AlgorithmSpec(
    "ppo",
    make_ppo,
    own=ppo_section,
    features=frozenset({spec.COMBINE, spec.ASYNC_ENVS}),
    sections={"ppo": PPOSection},
    chunked_batch=lambda s: spec.ppo_minibatch(s.t_max, s.envs_per_learner, s.own.minibatches),
    gradient_steps=lambda s: s.own.epochs * s.own.minibatches,
  ),
)
