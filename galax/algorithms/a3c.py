"""A3C (Mnih et al. 2016), the asynchronous baseline of GALA and HTS-RL, as one
deterministic SPMD program.

In A3C, n actor-learners share one set of parameters (and RMSProp statistics). Each one
copies the shared parameters, acts t_max steps, computes the A2C gradient at its copy and
applies it to the shared parameters while the others keep doing the same: by the time a
gradient is applied, the parameters it was computed at are some updates old. GALA and
HTS-RL compare with the large-batch variant (Stooke & Abbeel 2018): b envs per learner.

The model. theta_k are the shared parameters after k gradient applications. One `update`
is a round of n applications; at its start k = u n (u = rounds so far):

  1. learner j draws a staleness s_j in {0, ..., S}, S = config.a3c.max_staleness
     (`staleness` "uniform": s_j ~ U{0..S}; "fixed": s_j = S), and reads theta_{un - s_j}
     from a history of the last S + 1 versions (theta_0 stands in for versions before it);
  2. learner j acts t_max steps in its b envs with theta_{un - s_j} and computes its A2C
     gradient g_j there (galax.algorithms.a2c.a2c_grads);
  3. the n gradients are applied one after another, in an order pi drawn per round
     (`shuffle_order`; else 0..n-1), to the shared parameters and the one shared
     optimizer state:
        theta_{un+i+1} = theta_{un+i} + optimizer_step(g_{pi(i)}),   i = 0..n-1,
     and every new version enters the history.

The gradient of learner pi(i) is thus applied s_{pi(i)} + i updates after the parameters
it was computed at (reported as metrics["staleness"]). Gradient clipping applies to each
gradient on its own, as in A3C; the learning rate is not scaled with n (GALA's Table 2) and
its annealing counts applications. Staleness draws and the order come from a key kept in
the state, so a seed reproduces a run.

Exact equivalences (tests/algorithms/test_a3c.py):
  * n = 1, S = 0: theta_{u+1} = theta_u + step(g(theta_u)), i.e. A2C, with any optimizer;
  * n learners, S = 0, SGD with lr eta: theta_{(u+1)n} = theta_{un} - eta sum_j g_j(theta_{un}),
    i.e. all-reduce A2C with lr n eta.

Layout: every learner keeps a copy of the shared parameters and optimizer state (identical
copies, as in all-reduce A2C); the history [S + 1, ...] and the round key are kept once per
device (state leaves [D, ...]). The n gradients are all-gathered, and every device applies
all of them, so all copies stay equal.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import flax.struct
import jax
import jax.numpy as jnp
import optax

import galax.framework.spec as spec  # the module, not the package (whose registry imports this)
from galax.algorithms.a2c import a2c_grads
from galax.core.optimizers import make_optimizer
from galax.core.rollout import episode_log, rollout
from galax.core.types import OptState, Params, ParamsBlock
from galax.framework.algorithm import Algorithm, assemble
from galax.framework.settings import RunSettings
from galax.framework.spec import RunConfig, check_choice, check_positive
from galax.framework.update import (
  BlockUpdate,
  LearnerState,
  Setup,
  block_policy,
  finish_update,
  make_setup,
)
from galax.parallel import layout as lx

STREAM = 0xA3C  # separates the staleness draws from the other uses of config.seed


@flax.struct.dataclass
class A3CExtra:
  """Per-device state: leaves [D, ...] globally, [1, ...] inside shard_map."""

  history: ParamsBlock  # [D, S + 1, ...]: theta_k sits in slot k mod (S + 1)
  key: jax.Array  # [D, 2]: the round key (equal on every device)


def draw_staleness(key: jax.Array, num_learners: int, max_staleness: int, kind: str) -> jax.Array:
  """s_j for every learner, [n] int32, in {0..max_staleness}."""
  if kind == "fixed":
    return jnp.full((num_learners,), max_staleness, jnp.int32)
  if kind == "uniform":
    return jax.random.randint(key, (num_learners,), 0, max_staleness + 1, jnp.int32)
  raise ValueError(f"Unknown staleness {kind!r}; use 'uniform' or 'fixed'.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class A3CSettings:
  """The `a3c` section: each round, every learner's gradient, computed at shared
  parameters s updates old (s drawn per learner and round), is applied in turn to the
  shared parameters (the module docstring has the exact semantics)."""

  max_staleness: int = 0  # bound on s, in updates (gradient applications) before the round
  staleness: str = "uniform"  # uniform (s ~ U{0..max}) | fixed (s = max)
  shuffle_order: bool = True  # apply the round's gradients in a random order (else 0..n-1)


def a3c_settings(config: RunConfig) -> A3CSettings:
  """The run's `a3c` section, checked: one ValueError line for a value A3C cannot run."""
  c = config.a3c
  check_choice("a3c.staleness", c.staleness, ("uniform", "fixed"))
  check_positive("a3c.max_staleness", c.max_staleness, or_zero=True)
  if config.combine != "independent":
    raise ValueError(
      "algorithm='a3c' applies every learner's gradient to the shared "
      f"parameters itself; config.combine={config.combine!r} must stay "
      "'independent'."
    )
  return c


def apply_in_turn(
  optimizer: optax.GradientTransformation,
  all_grads: ParamsBlock,
  order: jax.Array,
  carry: tuple[Params, OptState, ParamsBlock],
  start: jax.Array,
  slots: int,
) -> tuple[Params, OptState, ParamsBlock]:
  """Step 3 of a round: the n gradients `all_grads` [n, ...] applied one after another, in
  `order`, to the shared (params, opt_state); version `start + i + 1` of the parameters is
  written to slot (start + i + 1) % slots of the `history` [S + 1, ...] (carry: params,
  opt_state, history)."""

  def apply(carry, i):
    params, opt_state, history = carry
    g = jax.tree.map(lambda x: x[order[i]], all_grads)
    updates, opt_state = optimizer.update(g, opt_state, params)
    params = optax.apply_updates(params, updates)
    slot = (start + i + 1) % slots
    history = jax.tree.map(lambda h, x: h.at[slot].set(x), history, params)
    return (params, opt_state, history), None

  return jax.lax.scan(apply, carry, jnp.arange(order.shape[0]))[0]


def make_a3c_update(
  setup: Setup, optimizer: optax.GradientTransformation, a3c: A3CSettings
) -> BlockUpdate:
  """The round (see the module docstring) for `compile_step`."""
  learners = setup.layout.learners_per_device
  n = setup.layout.num_learners
  apply_fn = setup.network.apply
  policy = block_policy(apply_fn, learners)
  chunks = setup.plan.grad_chunks
  returns, loss, t_max = setup.settings.returns, setup.settings.loss, setup.settings.t_max
  max_staleness, staleness_kind = a3c.max_staleness, a3c.staleness
  shuffle_order, slots = a3c.shuffle_order, a3c.max_staleness + 1

  def update(state: LearnerState):
    key, staleness_key, order_key = jax.random.split(state.extra.key[0], 3)
    staleness = draw_staleness(staleness_key, n, max_staleness, staleness_kind)
    order = jax.random.permutation(order_key, n) if shuffle_order else jnp.arange(n)
    position = jnp.argsort(order)  # position[j] = i where order[i] = j
    start = state.update_count[0] * n  # applications before this round
    mine = jax.lax.axis_index(lx.AXIS) * learners + jnp.arange(learners)

    # 1-2. Every learner acts and computes its gradient at its stale read of theta.
    history = jax.tree.map(lambda h: h[0], state.extra.history)  # [S + 1, ...]
    read_slots = (start - staleness[mine]) % slots
    read = jax.tree.map(lambda h: h[read_slots], history)  # [L, ...]
    env_state, keys, traj = rollout(
      policy, read, setup.env, state.env_state, state.action_keys, t_max, lx.env_shard_index()
    )
    grads, terms = jax.vmap(lambda p, t: a2c_grads(apply_fn, returns, loss, p, t, chunks))(
      read, lx.split_learners(traj, learners)
    )

    # 3. Apply all n gradients in turn to the shared parameters (the same on every device).
    all_grads = jax.tree.map(lambda g: jax.lax.all_gather(g, lx.AXIS, axis=0, tiled=True), grads)
    shared = jax.tree.map(lambda x: x[0], (state.params, state.opt_state))
    params, opt_state, history = apply_in_turn(
      optimizer, all_grads, order, (*shared, history), start, slots
    )
    copies = lambda x: jnp.broadcast_to(x, (learners, *x.shape))
    metrics = dict(
      loss=terms._asdict(),
      grad_norm=jax.vmap(optax.tree.norm)(grads),
      staleness=(staleness + position)[mine],
      episodes=episode_log(traj)._asdict(),
    )
    return finish_update(
      state,
      params=jax.tree.map(copies, params),
      opt_state=jax.tree.map(copies, opt_state),
      combiner_state=state.combiner,
      env_state=env_state,
      action_keys=keys,
      metrics=metrics,
      extra=A3CExtra(history=jax.tree.map(lambda h: h[None], history), key=key[None]),
    )

  return update


def make_a3c(
  settings: RunSettings[A3CSettings], devices: Sequence[jax.Device] | None = None
) -> Algorithm:
  """A3C with n learners of b envs each; see the module docstring."""
  setup = make_setup(settings, SPECS[0], devices=devices)
  layout = setup.layout
  n = layout.num_learners
  # A3C applies one learner's gradient at a time to the one shared parameter set (not a
  # block of learners: no `LearnerOptimizer`); per-tensor clipping, first in the chain,
  # thus clips each learner's gradient on its own, the meaning it has everywhere.
  optimizer, schedule = make_optimizer(
    setup.settings.optimizer, layout.envs_per_learner, n, setup.anneal_updates * n
  )
  a3c = settings.own
  slots = a3c.max_staleness + 1

  def init_extra(params):  # params: this process's learners, [local_learners, ...]
    devices = layout.local_devices
    one = jax.tree.map(lambda x: x[0], params)
    history = jax.tree.map(lambda x: jnp.broadcast_to(x, (devices, slots, *x.shape)), one)
    key = jax.random.fold_in(jax.random.PRNGKey(settings.seed), STREAM)
    return A3CExtra(history=history, key=jnp.broadcast_to(key, (devices, *key.shape)))

  return assemble(
    setup,
    make_a3c_update(setup, optimizer, a3c),
    optimizer,
    lambda update: schedule(update * n),  # rounds -> applications
    settings.t_max,
    init_extra=init_extra,
  )


SPECS = (
  spec.AlgorithmSpec(
    "a3c",
    make_a3c,
    own=a3c_settings,
    features=frozenset(),
    sections={"a3c": A3CSettings},
  ),
)
