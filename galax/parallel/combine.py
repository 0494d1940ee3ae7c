"""How learners combine: where all-reduce A2C and GALA differ.

All-reduce averages gradients before the optimizer step, GALA mixes parameters after it.
Every algorithm's update calls its combiner at both points, on lines of its own:

  grads = combiner.grads(optimizer.clip_each(grads), weights)
  params, opt_state, grad_norm = optimizer.step(grads, opt_state, params)
  params, combiner_state, combine_metrics = combiner.params(old_params, params, combiner_state)

A combiner (`Combiner`) acts on a device's block of L learners inside `shard_map` over `AXIS`:

  grads(g, weights)  before the optimizer step (all-reduce averages gradients here)
  params(x_old, x_new, state) -> (x, state, metrics)
                     after the optimizer step (gossip mixes parameters here), with the
                     combiner's diagnostics under its name (GALA's consensus metrics);
                     x_old are the parameters before the optimizer step

With `optimizer.sharded_state` (ZeRO-1, galax/parallel/sharded_optimizer.py) the all-reduce
is split in two: `ShardedAllReduce.grads` reduce-scatters the gradients into one slice per
learner, and the sharded optimizer's step all-gathers the updated slices.

`init(params_block)` builds the combiner's state (kept in `LearnerState.combiner`) from the
host's block of initial parameters; every leaf has the learner axis first.

`Independent` leaves learners alone (one A2C learner, or n independent seeds),
`AllReduce` averages gradients (all-reduce A2C), `Gossip` mixes parameters with in-peers
along a ring of devices (GALA-A2C; topologies in `galax.parallel.topology`).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple, Protocol

import chex
import jax
import jax.numpy as jnp
import numpy as np

from galax.core.types import Metrics, ParamsBlock, PyTree
from galax.parallel import diagnostics
from galax.parallel.layout import AXIS, learner_sum
from galax.parallel.topology import Topology, make_topology, prop1_window


class Combiner(Protocol):
  """How a device's block of L learners combines with the others (see module docstring)."""

  name: str

  def init(self, params_block: ParamsBlock) -> PyTree:
    """The combiner's state (kept in `LearnerState.combiner`) for the block's parameters."""

  def grads(self, grads_block: ParamsBlock, weights: jax.Array | None = None) -> ParamsBlock:
    """The block's gradients [L, ...], combined, before the optimizer step. `weights` [L]:
    per-learner weights of an all-reduce mean (straggler dropping; AllReduce only)."""

  def params(
    self, old_params: ParamsBlock, new_params: ParamsBlock, state: PyTree
  ) -> tuple[ParamsBlock, PyTree, Metrics]:
    """The block's parameters [L, ...] after the optimizer step (`new_params`), combined,
    the combiner's new state, and its metrics under its name ({} without any);
    `old_params` are those before the step."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class GossipSection:
  """The `gossip` section of a run's config. GALA gossip (combine="gossip"): after each
  update a learner averages its parameters with its in-peers' (galax/parallel/topology.py)."""

  topology: str = "ring"  # ring (k-peer, directed) | exponential | full
  peers: int = 1  # ring: in-peers per learner (1 = GALA's default, weights 1/2)
  delay: int = 0  # tau: mix with the in-peers' parameters from tau updates ago
  metrics: bool = False  # per update: consensus distances + Prop. 1 bound (all-reduces)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CombineSettings(GossipSection):
  """How learners combine: `config.combine` (`kind`) and the `gossip` section."""

  kind: str  # independent | allreduce | gossip (checked by `galax.config.validate`)


def make_combiner(settings: CombineSettings, num_learners: int) -> Combiner:
  """The combiner `settings.kind` names, for `num_learners` learners."""
  s = settings
  if s.kind == "allreduce":
    return AllReduce()
  if s.kind == "gossip":
    topology = make_topology(s.topology, num_learners, s.peers)
    return Gossip(topology, delay=s.delay, metrics=s.metrics)
  return Independent()


class Independent:
  """No communication."""

  name = "independent"

  def init(self, params_block: ParamsBlock) -> PyTree:
    del params_block
    return ()

  def grads(self, grads_block: ParamsBlock, weights: jax.Array | None = None) -> ParamsBlock:
    if weights is not None:
      raise ValueError(
        f"gradient weights (stragglers) need combine='allreduce', not {self.name!r}."
      )
    return grads_block

  def params(
    self, old_params: ParamsBlock, new_params: ParamsBlock, state: PyTree
  ) -> tuple[ParamsBlock, PyTree, Metrics]:
    chex.assert_trees_all_equal_shapes(old_params, new_params)
    return new_params, state, {}


class AllReduce(Independent):
  """Synchronous data-parallel A2C (Stooke & Abbeel 2018; synchronous BA3C).

  Gradients are averaged over all learners (the block's own L, then `pmean` over the
  devices), so every learner applies the same update and parameters stay identical.
  """

  name = "allreduce"

  def grads(self, grads_block: ParamsBlock, weights: jax.Array | None = None) -> ParamsBlock:
    """The mean over all learners; with `weights` w [L], the mean of w_i g_i (the block's
    part is `learner_sum`, a contraction)."""
    if weights is not None:
      chex.assert_shape(weights, (jax.tree.leaves(grads_block)[0].shape[0],))

    def mean(g):
      local = learner_sum(g, weights) / g.shape[0]
      return jnp.broadcast_to(jax.lax.pmean(local, AXIS), g.shape)

    return jax.tree.map(mean, grads_block)


def shift_learners(block: PyTree, shift: int) -> PyTree:
  """Learner i of the result holds learner (i - shift) mod n's leaves (global indices).

  Inside `shard_map`: a device's block [L, ...] holds global learners d L .. d L + L - 1.
  With shift = q L + r (0 <= r < L), the block's first r learners come from device d - q - 1
  and the others from device d - q: at most two `ppermute`s along the device ring, each
  sending only the slice the receiver needs (one if r = 0, none if the source is local).
  """
  leaves = jax.tree.leaves(block)
  if not leaves:
    return block
  learners = leaves[0].shape[0]
  devices = jax.lax.axis_size(AXIS)
  q, r = divmod(shift % (learners * devices), learners)

  def from_device_back(tree, offset):  # the value `tree` has on device d - offset
    offset %= devices
    if offset == 0:
      return tree
    perm = [(src, (src + offset) % devices) for src in range(devices)]
    return jax.lax.ppermute(tree, AXIS, perm)

  if r == 0:
    return from_device_back(block, q)
  head = from_device_back(jax.tree.map(lambda x: x[learners - r :], block), q + 1)
  tail = from_device_back(jax.tree.map(lambda x: x[: learners - r], block), q)
  return jax.tree.map(lambda a, b: jnp.concatenate([a, b], axis=0), head, tail)


class GossipState(NamedTuple):
  """Gossip's state, `LearnerState.combiner` (fields are () when unused)."""

  outbox: ParamsBlock = ()  # delay >= 1: own parameters after the last step, y^{k-1} [L, ...]
  inbox: ParamsBlock = ()  # delay >= 2: sums of in-peers' messages y^{k-2}..y^{k-tau}, a ring
  #                          buffer [L, tau - 1, ...]
  step: jax.Array | tuple[()] = ()  # delay >= 1: [L] int32 updates so far (the inbox slot
  #                                   is step % (tau - 1))
  update_norms: jax.Array | tuple[()] = ()  # metrics: [L, W] centered update norms
  #                                           g_{k-1}..g_{k-W}
  bounds: jax.Array | tuple[()] = ()  # metrics: [L, W] Prop. 1 bounds B_k..B_{k-W+1}


class Gossip(Independent):
  """GALA (Assran et al. 2019): after its optimizer step, every learner mixes parameters.

    x_i <- (y_i^k + sum_{j in N_in(i)} y_j^{k - tau}) / (1 + |N_in|),   y^k = x^k after the step

  Only parameters are mixed (not the optimizer state). The in-peers' parameters travel
  along the device ring with `lax.ppermute` (one shift per in-peer offset of the
  topology, never an all-gather); the fully connected topology uses `psum`.

  delay tau >= 0 mixes with the parameters the in-peers had tau updates ago (messages in
  transit: loosely coupled, asynchronous gossip). With tau >= 1 update k sends y^{k-1},
  kept from the previous update, so the transfer depends on nothing update k computes and
  XLA can overlap it with the rollout and the gradient; the arrived sums wait tau - 1
  updates in an inbox. Messages from before the first update are the learners' initial
  parameters (identical for all learners, so the receiver's own stand in for tau >= 2).

  metrics=True adds, per update (one all-reduce of parameters and one of updates more):
  each learner's distance from the learners' average, ||X - Xbar||_F, the centered update
  norm and the Prop. 1 bound on ||X - Xbar||_F (see `galax.parallel.topology`).
  """

  name = "gossip"

  def __init__(self, topology: Topology, delay: int = 0, metrics: bool = False):
    self.topology = topology
    self.delay = int(delay)
    self.metrics = bool(metrics)
    self.window, self.gains = (
      prop1_window(topology.mixing_matrix(), self.delay) if self.metrics else (0, np.zeros((0,)))
    )

  def init(self, params_block: ParamsBlock) -> GossipState:
    learners = jax.tree.leaves(params_block)[0].shape[0]
    state = GossipState()
    if self.delay:
      outbox = jax.tree.map(lambda x: np.array(x, copy=True), params_block)
      state = state._replace(outbox=outbox, step=np.zeros((learners,), np.int32))
    if self.delay >= 2:
      peers = len(self.topology.shifts)
      inbox = jax.tree.map(
        lambda x: np.repeat(peers * np.asarray(x)[:, None], self.delay - 1, axis=1), params_block
      )
      state = state._replace(inbox=inbox)
    if self.metrics:
      zeros = np.zeros((learners, self.window), np.float32)
      state = state._replace(update_norms=zeros, bounds=zeros.copy())
    return state

  def receive(self, messages: ParamsBlock) -> ParamsBlock:
    """sum_{j in N_in(i)} messages_j for the block's learners i (the communication)."""
    if self.topology.name == "full":

      def others(m):
        return jnp.broadcast_to(jax.lax.psum(jnp.sum(m, axis=0), AXIS), m.shape) - m

      return jax.tree.map(others, messages)
    shifted = [shift_learners(messages, s) for s in self.topology.shifts]
    return jax.tree.map(lambda *xs: sum(xs[1:], xs[0]), *shifted)

  def mix(self, own: ParamsBlock, received: ParamsBlock) -> ParamsBlock:
    """(own_i + received_i) / (1 + |N_in|)."""
    weight = self.topology.weight
    return jax.tree.map(lambda x, r: (x + r) * weight, own, received)

  def mix_step(
    self, params_block: ParamsBlock, state: GossipState
  ) -> tuple[ParamsBlock, GossipState]:
    """The block's parameters mixed with the in-peers' (see the class docstring)."""
    if not self.delay:
      return self.mix(params_block, self.receive(params_block)), state
    received = self.receive(state.outbox)  # y^{k-1}: independent of this update's work
    state = state._replace(outbox=params_block, step=state.step + 1)
    if self.delay == 1:
      return self.mix(params_block, received), state
    slot = (state.step[0] - 1) % (self.delay - 1)
    take = lambda h: jax.lax.dynamic_index_in_dim(h, slot, axis=1, keepdims=False)
    put = lambda h, r: jax.lax.dynamic_update_index_in_dim(h, r, slot, axis=1)
    arrived = jax.tree.map(take, state.inbox)  # sent at update k - tau
    inbox = jax.tree.map(put, state.inbox, received)
    return self.mix(params_block, arrived), state._replace(inbox=inbox)

  def params(
    self, old_params: ParamsBlock, new_params: ParamsBlock, state: GossipState
  ) -> tuple[ParamsBlock, GossipState, Metrics]:
    chex.assert_trees_all_equal_shapes(old_params, new_params)
    params, state = self.mix_step(new_params, state)
    if not self.metrics:
      return params, state, {}
    updates = jax.tree.map(jnp.subtract, new_params, old_params)
    nodes = self.topology.num_learners * (self.delay + 1)
    g = diagnostics.centered_update_norm(updates, nodes)
    update_norms, bounds = diagnostics.prop1_bound_step(
      self.gains, state.update_norms, state.bounds, g
    )
    distance, total = diagnostics.consensus_distances(params)
    learners = distance.shape[0]
    per_learner = lambda v: jnp.broadcast_to(v, (learners,))
    metrics = dict(
      consensus_distance=distance,
      consensus_distance_total=per_learner(total),
      prop1_bound=bounds[:, 0],
      centered_update_norm=per_learner(g),
    )
    state = state._replace(update_norms=update_norms, bounds=bounds)
    return params, state, {self.name: metrics}
