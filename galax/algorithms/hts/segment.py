"""HTS-RL: concurrent rollout and learning with one-step-delayed gradients (Liu et al. 2020).

Segments and versions
---------------------
Training runs in *segments* of `alpha` env steps (the batch-synchronization interval,
`config.hts.alpha`, a multiple of t_max). theta_k are the parameters at the start of
segment k. During segment k, at the same time:

  * the actors act with theta_k and fill a storage D_k (alpha steps x b envs),
  * the learner learns from D_{k-1}, the storage filled in segment k-1 by theta_{k-1}:

      HTS-A2C:  theta_{k+1} = theta_k - eta * grad L(theta_{k-1}; D_{k-1})       (Eq. 6)
      HTS-PPO:  theta_{k+1} = PPO(start = theta_k, data = D_{k-1}, behaviour = theta_{k-1})

The behaviour policy thus lags the target policy by exactly one update, always. A2C's
gradient is taken at the parameters that collected the data (no stale-policy bias), and
applied to the current ones. PPO's epochs of minibatch steps necessarily move away from
theta_{k-1}; its clipped ratio pi_theta / pi_{theta_{k-1}} corrects for the lag (as in the
authors' code, whose PPO learner starts from its latest parameters). With
`config.hts.gradient_point = "stale"` HTS-PPO reads Eq. 6 literally instead: the epochs
start at theta_{k-1} (on-policy at their first minibatch) and end at theta', and
theta_{k+1} = theta_k + (theta' - theta_{k-1}) (learners.StalePPOSegmentLearner). The
metric `first_clip_fraction` (the first minibatch's) shows how far each starts off-policy.
With `"current"` HTS-A2C takes its gradient at theta_k, where the authors' code's learner
takes its, on the one-update-old D_{k-1}, uncorrected (learners.CurrentA2CStepLearner).

The state (`HTSExtra`) carries the read storage D_{k-1} (env-major so that it shards over
the learner axis), theta_{k-1} (HTS-A2C at "stale" only), and version counters that
travel with the parameters and storage: `params_version` (k), `behaviour_version` (the
version of theta_{k-1}), `storage_version` (the version that filled the storage). The write
storage D_k is the segment's output; with buffer donation XLA keeps exactly two storages
alive. Carrying one storage plus the segment's output, instead of two buffers indexed by
k % 2, removes the index bookkeeping in which the authors' code went wrong (their first
segment is alpha + 1 steps long and the storage indices stay shifted afterwards).

The first segment (k = 0) has no D_{-1}: it only collects D_0. Its learner work runs on an
all-invalid zero storage and its result is discarded with a select, so theta_1 = theta_0
bitwise, the optimizer state (and lr schedule) does not advance, and the metric `learned`
is False. From k = 1 on, every segment learns from D_{k-1} (tests/algorithms/test_hts.py checks the
versions of every update). The last segment's storage is never learned from.

`config.hts.delayed = False` switches the delay off: the segment first collects D_k with
theta_k and then learns from it at theta_k, sequentially. HTS-A2C with alpha = t_max then
is plain A2C (same updates to float rounding: the gradient is summed per time step), and
HTS-PPO is plain PPO.

Concurrency inside the jitted segment
------------------------------------
Each env step of a segment is: forward pass, sampling, `send` (envpool's C++ threads start
stepping and the call returns), a slice of the learner's work, `recv`; the env threads
step while the device computes the slice. The learner's work is a fixed sequence of
*units* (galax/algorithms/hts/learners.py): HTS-A2C's are the gradients of one time step
of D_{k-1} at theta_{k-1}, then one optimizer step; HTS-PPO's are its minibatch updates.
`config.hts.microbatches` (m) cuts the units into m equal pieces, hosted by every
(alpha / m)-th env step; `ordering.after` (a bitwise no-op data dependency) keeps each
piece between its `send` and `recv`. On gymnax the envs step inside the program: one
piece. `config.hts.num_actors` groups (`galax.envs.actor_groups.ActorGroups`) each own a
share of the envs and a forward pass, so one group's envs step while the next group's
forward pass runs. The segment unrolls its pieces in Python; only the plain env steps
between them are a `lax.scan` (XLA:CPU is slow on convolution gradients in loops).

Determinism: every random draw comes from a passed key (per-env action keys, per-learner
PPO shuffling keys folded with the update count), and envpool's sync mode steps each env
from its own seed, so env threads cannot change results. The learner's `begin` / units /
`finish` and the forward passes are compiled in isolation (`ordering.isolated`), so any
micro-batch schedule and `update_loop` give the same bits, and A actor groups too when
each has >= 8 rows. Image networks on CPU run them inline instead (fast; the last bit may
then change with the schedule). Why one program rather than actor and learner threads,
why envpool's async mode is not used, and the measured overlap: docs/architecture.md
("HTS-RL") and docs/benchmarks.md.
"""

from __future__ import annotations

from typing import NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from galax.algorithms.hts.learners import SegmentLearner
from galax.algorithms.hts.ordering import CALLS, after
from galax.core.rollout import Trajectory, act, episode_log, record_step, with_bootstrap
from galax.core.types import ParamsBlock
from galax.envs import EnvSpec
from galax.envs.actor_groups import ActorGroups
from galax.framework.update import LearnerState, Setup, block_policy, finish_update, scan_loop
from galax.parallel import layout as lx

# --- state ----------------------------------------------------------------------------


@flax.struct.dataclass
class HTSExtra:
  """HTS state beyond `LearnerState`. Leaves lead with [L] or, for env data, [L * b].

  storage: D_{k-1}, env-major (obs [L * b, alpha, ...], values [L * b, alpha + 1]).
  behaviour_params: theta_{k-1} (HTS-A2C at "stale"; () where the gradients are taken at
    theta_k, as for HTS-PPO, whose storage holds the behaviour logits and values): the
    learner's `keep_behaviour`.
  params_version / behaviour_version / storage_version: [L] int32 version counters of
    theta_k, theta_{k-1} and of the parameters that filled the storage (-1: none yet).
  key: [L, 2] per-learner base keys (PPO minibatch shuffling).
  """

  storage: Trajectory
  behaviour_params: ParamsBlock
  params_version: jax.Array
  behaviour_version: jax.Array
  storage_version: jax.Array
  key: jax.Array


def _env_major(traj: Trajectory) -> Trajectory:
  return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), traj)


_time_major = _env_major  # swapping the first two axes is its own inverse


def empty_storage(spec: EnvSpec, num_envs: int, alpha: int) -> Trajectory:
  """An all-invalid zero storage, env-major (the k = 0 placeholder for D_{-1})."""
  z = lambda shape, dtype: jnp.zeros((num_envs, *shape), dtype)
  return Trajectory(
    obs=z((alpha, *spec.obs_shape), spec.obs_dtype),
    actions=z((alpha,), np.int32),
    rewards=z((alpha,), np.float32),
    terminated=z((alpha,), bool),
    truncated=z((alpha,), bool),
    valid=z((alpha,), bool),
    behaviour_logits=z((alpha, spec.num_actions), np.float32),
    values=z((alpha + 1,), np.float32),
    episode_over=z((alpha,), bool),
    episode_return=z((alpha,), np.float32),
    episode_length=z((alpha,), np.int32),
  )


# --- the segment ----------------------------------------------------------------------


class Segment:
  """The segment (see module docstring) as a block update for `compile_step`: `alpha` env
  steps per env; `delayed` (`hts.delayed`) learns from the previous segment's storage."""

  def __init__(self, setup: Setup, learner: SegmentLearner, alpha: int, delayed: bool):
    self.learner = learner
    self.groups: ActorGroups = setup.env
    self.policy = block_policy(setup.network.apply, setup.layout.learners_per_device)
    self.alpha, self.microbatches = alpha, setup.plan.microbatches
    self.delayed = delayed
    self.unroll = setup.plan.unroll_units
    self.call = CALLS[setup.plan.unit_call]
    self.units_per_piece = learner.num_units // self.microbatches

  def forward(self, params: ParamsBlock, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    return self.call(self.policy, obs, params, obs)

  def unit(self, carry: NamedTuple, u: int | jax.Array) -> NamedTuple:
    """learner.unit as its own computation; only the carry fields it changes pass out."""
    learner = self.learner
    mutable = {k: getattr(carry, k) for k in learner.mutable}
    frozen = {k: getattr(carry, k) for k in carry._fields if k not in learner.mutable}

    def changed_fields(m, f, i):  # one trace of the unit (not one per changed field)
      out = learner.unit(type(carry)(**f, **m), i)
      return {k: getattr(out, k) for k in m}

    return carry._replace(**self.call(changed_fields, u, mutable, frozen, u))

  def env_step(self, acting_params, carry, shard, hosted=None):
    """One env step of every actor group; `hosted` = (learner carry, unit ids) overlaps it."""
    groups = self.groups
    env_states, keys = carry
    key_groups = groups.split(keys)
    sent = []
    for a, env in enumerate(groups.envs):
      obs = env_states[a].obs
      if a:  # group a's forward pass runs while group a - 1's envs step
        obs = after(obs, sent[-1][0])
      new_keys, actions, logits, value = act(self.forward, acting_params, obs, key_groups[a])
      handle = env.send(env_states[a], actions, shard)
      sent.append((handle, obs, actions, logits, value, new_keys))
    lcarry = None
    handles = [s[0] for s in sent]
    if hosted is not None:
      lcarry, unit_ids = hosted
      first = after(jnp.int32(unit_ids.start), handles)  # starts after every send
      lcarry = scan_loop(self.unit, lcarry, len(unit_ids), self.unroll, first)
      handles = after(handles, lcarry)  # recv waits for the units
    new_states, rows = [], []
    for a, env in enumerate(groups.envs):
      _, obs, actions, logits, value, _ = sent[a]
      state, ts = env.recv(env_states[a].replace(handle=handles[a]), shard)
      new_states.append(state)
      rows.append(record_step(obs, actions, logits, value, ts))
    keys = groups.merge([s[5] for s in sent])
    return (tuple(new_states), keys), groups.merge_trees(rows), lcarry

  def collect(self, acting_params, env_states, keys, shard, lcarry):
    """alpha steps with acting_params; the learner's units ride along if lcarry is given."""
    carry = (env_states, keys)
    outputs = []
    pieces = self.microbatches if lcarry is not None else 1
    steps_after = self.alpha // pieces - 1
    per_piece = self.units_per_piece
    for i in range(pieces):
      hosted = None
      if lcarry is not None:
        hosted = (lcarry, range(i * per_piece, (i + 1) * per_piece))
      carry, out, lcarry_out = self.env_step(acting_params, carry, shard, hosted)
      if lcarry is not None:
        lcarry = lcarry_out
      outputs.append(jax.tree.map(lambda x: x[None], out))
      if steps_after:
        carry, more = jax.lax.scan(
          lambda c, _: self.env_step(acting_params, c, shard)[:2], carry, None, length=steps_after
        )
        outputs.append(more)
    steps = jax.tree.map(lambda *xs: jnp.concatenate(xs), *outputs)
    env_states, keys = carry
    last_values = self.groups.merge([self.forward(acting_params, s.obs)[1] for s in env_states])
    return env_states, keys, with_bootstrap(steps, last_values), lcarry

  def learn_while_collecting(self, state: LearnerState, keys: jax.Array, shard):
    """delayed: learn from D_{k-1} while collecting D_k with theta_k."""
    x: HTSExtra = state.extra
    learner = self.learner
    grad_params, grad_version = learner.gradient_point(
      x.behaviour_params, state.params, (x.behaviour_version, x.params_version)
    )
    lcarry = self.call(
      learner.begin, keys, grad_params, state.params, state.opt_state, _time_major(x.storage), keys
    )
    env_states, action_keys, traj, lcarry = self.collect(
      state.params, state.env_state, state.action_keys, shard, lcarry
    )
    versions = dict(data_version=x.storage_version, grad_version=grad_version)
    return env_states, action_keys, traj, lcarry, versions

  def learn_after_collecting(self, state: LearnerState, keys: jax.Array, shard):
    """Not delayed: collect D_k with theta_k, then learn from it at theta_k."""
    env_states, action_keys, traj, _ = self.collect(
      state.params, state.env_state, state.action_keys, shard, None
    )
    lcarry = self.call(
      self.learner.begin, traj.values, state.params, state.params, state.opt_state, traj, keys
    )
    for i in range(self.microbatches):
      first = after(jnp.int32(i * self.units_per_piece), traj.values)
      lcarry = scan_loop(self.unit, lcarry, self.units_per_piece, self.unroll, first)
    version = state.extra.params_version
    return env_states, action_keys, traj, lcarry, dict(data_version=version, grad_version=version)

  def __call__(self, state: LearnerState):
    x: HTSExtra = state.extra
    keys = jax.vmap(jax.random.fold_in)(x.key, state.update_count)
    learn = self.learn_while_collecting if self.delayed else self.learn_after_collecting
    env_states, action_keys, traj, lcarry, versions = learn(state, keys, lx.env_shard_index())
    params, opt_state, metrics = self.call(self.learner.finish, lcarry, lcarry)
    learned = jnp.ones_like(state.update_count, bool)
    if self.delayed:  # k = 0 has no D_{-1}: keep theta_0 and the optimizer state (bitwise).
      learned = state.update_count > 0
      keep = lambda new, old: jax.tree.map(
        lambda n, o: jnp.where(learned.reshape((-1,) + (1,) * (n.ndim - 1)), n, o), new, old
      )
      params, opt_state = keep(params, state.params), keep(opt_state, state.opt_state)
    version = x.params_version
    new_extra = x.replace(
      storage=_env_major(traj),
      behaviour_params=self.learner.keep_behaviour(state.params),
      params_version=version + 1,
      behaviour_version=version,
      storage_version=version,
    )
    params, combiner_state, combine_metrics = self.learner.combiner.params(  # gossip: mix
      state.params, params, state.combiner
    )
    metrics = dict(
      metrics,
      episodes=episode_log(traj)._asdict(),
      hts=dict(versions, applied_to_version=version, new_version=version + 1, learned=learned),
      **combine_metrics,
    )
    return finish_update(
      state,
      params=params,
      opt_state=opt_state,
      combiner_state=combiner_state,
      env_state=env_states,
      action_keys=action_keys,
      metrics=metrics,
      extra=new_extra,
    )
