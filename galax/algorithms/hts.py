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
authors' code, whose PPO learner starts from its latest parameters).

The state (`HTSExtra`) carries the read storage D_{k-1} (env-major so that it shards over
the learner axis), theta_{k-1} (A2C only), and version counters that travel with the
parameters and storage: `params_version` (k), `behaviour_version` (the version of
theta_{k-1}), `storage_version` (the version that filled the storage). The write storage
D_k is the segment's output; with buffer donation XLA keeps exactly two storages alive.
Carrying one storage plus the segment's output, instead of two buffers indexed by k % 2,
removes the index bookkeeping in which the authors' code went wrong (their first segment
is alpha + 1 steps long and the storage indices stay shifted afterwards).

The first segment (k = 0) has no D_{-1}: it only collects D_0. Its learner work runs on an
all-invalid zero storage and its result is discarded with a select, so theta_1 = theta_0
bitwise, the optimizer state (and lr schedule) does not advance, and the metric `learned`
is False. From k = 1 on, every segment learns from D_{k-1} (tests/test_hts.py checks the
versions of every update). The last segment's storage is never learned from.

`config.hts.delayed = False` switches the delay off: the segment first collects D_k with
theta_k and then learns from it at theta_k, sequentially. HTS-A2C with alpha = t_max then
is plain A2C (same updates to float rounding: the gradient is summed per time step), and
HTS-PPO is plain PPO.

Real concurrency: envpool send / recv inside the jitted segment
---------------------------------------------------------------
Each env step of a segment is: forward pass, sampling, `send` (the C++ env threads start
stepping and the call returns at once), a slice of the learner's work, `recv`. The env
threads step while the device computes the learner slice. The learner's work is a fixed
sequence of *units*: HTS-A2C's units are the gradients of the loss of one time step of
D_{k-1} (b envs) at theta_{k-1}, accumulated in time order, then one optimizer step;
HTS-PPO's units are its epochs x minibatches minibatch updates. `config.hts.microbatches`
(m) cuts the units into m equal pieces, hosted by every (alpha / m)-th env step.

XLA orders the envpool custom calls by their handle token but may move pure computation
across them, and `lax.optimization_barrier` does not survive into the XLA:CPU schedule
(measured: the learner ran before `send` or after `recv`). `after(x, dep)` therefore adds
a true data dependency that is a bitwise no-op (a select on a predicate that is always
false but that XLA cannot evaluate before `dep` exists): the hosted units' indices depend
on the handles returned by `send`, and the handles passed to `recv` depend on the units'
results, so the order is send -> learner units -> recv.

Why in-jit rather than an actor thread and a learner thread: on a GPU both jitted programs
would share one compute stream and a blocking `recv` in the actor program would stall the
learner's kernels; in one program the learner's kernels are enqueued before `recv` blocks
the host thread, so they run while the envs step, without any host synchronization, and
the lag stays exactly one by construction (it is a data dependency, not a protocol between
threads). On CPU the learner units compete with the env threads for the same cores, so
overlap only pays when cores are left idle (few env threads, or slow envs blocked on
something else). benchmarks/hts.py measures it against the same program with the delay
off (learning after the rollout). On a shared 2-core CPU, 16 envs, 1 env thread, 1 actor
group: HTS-A2C on Pong 721 vs 567 steps/s (1.27x; sync A2C 651), HTS-PPO on GFootball
3 vs 1 153 vs 123 steps/s (1.25x; sync PPO 131). With envpool's default threads (both
cores busy stepping envs) there is nothing to gain on 2 cores: 595 vs 619 (Pong).

XLA:CPU computes convolution weight-gradients about 12-14x slower inside any nested
computation (while-loop bodies, conditional branches; measured for the archnature net on
72x96x4 GFootball frames, batch 16: 13 ms straight-line, 190 ms in a scan, 250 ms in a
cond): it then skips the rewrite that hands them to its fast convolution library. The
segment therefore unrolls its m pieces in Python; only the plain env steps between them
(forward passes, no gradients) are a `lax.scan`, and units inside a piece are unrolled too
where `update_loop` resolves to "host" (image networks on CPU).

Asynchronous actors: `config.hts.num_actors` groups
---------------------------------------------------
Each of the A actor groups owns an envpool pool over its share of the envs (b / A envs of
every learner, seeded with their global env ids) and its own forward pass; a group's
actions go to its envs as soon as its forward pass is done (group a + 1's forward pass is
tied to group a's send), so its envs step while the next group's forward pass runs.

Determinism
-----------
Every random draw comes from a key passed in: action sampling from per-env keys (the
paper's "randomness deferred to the executors"), PPO shuffling from per-learner keys
folded with the update count. envpool in sync mode steps each env from its own seed, so
the number of env worker threads (`config.env.num_threads`) cannot change results (the
compiled program is the same).

The micro-batch schedule and the actor groups do change the compiled program, and XLA
fuses a computation differently depending on its neighbours (a unit next to another unit
or next to an env step; measured: PPO parameters then differ in the last bit, 1e-7). The
learner's `begin` / units / `finish` and every forward pass are therefore each wrapped in
`isolated`, a `lax.cond` on an always-true predicate only known at run time: XLA compiles
each branch on its own, identically wherever it sits, so results are bitwise identical
for any number of micro-batches and any `update_loop`. With A actor groups the forward
pass sees b / A rows instead of b: results stay bitwise identical when the backend computes
each row of a dense layer independently of the batch size, which XLA:CPU does for our
networks at >= 8 rows per group (its matrix-vector path for the 1-wide value head differs
below that). tests/test_hts.py checks threads, micro-batches and actors (16 envs, A = 2).

Exception: isolation puts the units in nested computations, which XLA:CPU runs ~12x
slower for convolution gradients (above). Image networks on CPU therefore run the units
and forward passes inline, fast, and there the micro-batch count, the actor groups and
`update_loop` may change results in the last bit; everywhere else (GPU/TPU, and vector
observations on CPU) they cannot.

envpool's asynchronous mode (recv returns whichever envs are ready) would let envs run
alpha steps without waiting for each other, the paper's batch synchronization. It is not
used: recv waits for a fixed batch size, so at the end of a segment the last envs either
deadlock or must start the next segment with old parameters, which breaks the fixed lag
(that is the authors' alpha + 1 bug). Here envs synchronize every step (inside an actor
group), and the learner's work hides behind env stepping instead.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax

from galax import losses
from galax.algorithms import common
from galax.algorithms.a2c import compute_targets, make_combiner, split_learners
from galax.algorithms.ppo import (PPOLearner, learner_keys, make_optimizer_for_units,
                                  unroll_units)
from galax.envs import EnvState, make_env
from galax.parallel import learners as lx
from galax.rollout import Trajectory, episode_log, init_action_keys, sample_actions

# --- ordering -------------------------------------------------------------------------


def _opaque_false(dep: Any) -> jax.Array:
  """A bool scalar that is always False, but only known to be once `dep` is computed.

  -0.0 * |s| is -0.0 for finite s and NaN otherwise; neither is > 0. XLA does not fold
  float multiplications by zero (NaN semantics), so it must wait for `dep`.
  """
  leaves = [x for x in jax.tree.leaves(dep) if x.size]
  s = sum(jnp.ravel(x)[0].astype(jnp.float32) for x in leaves)
  return jnp.float32(-0.0) * jnp.abs(s) > 0


def after(x: Any, dep: Any) -> Any:
  """`x`, bitwise unchanged, with a data dependency on `dep` (orders work around custom calls).

  The dead branch must differ from `x` structurally, or XLA folds select(p, v, v) to v.
  """
  false = _opaque_false(dep)

  def tie(v):
    v = jnp.asarray(v)
    other = ~v if v.dtype == jnp.bool_ else v + jnp.ones((), v.dtype)
    return jnp.where(false, other, v)

  return jax.tree.map(tie, x)


def isolated(fn: Callable, dep: Any, *operands: Any) -> Any:
  """fn(*operands), ordered after `dep`, compiled as its own XLA computation.

  A `lax.cond` on a predicate that is always true (but only known at run time) keeps
  `fn` out of the surrounding fusions: XLA compiles its branch the same way wherever
  the call sits (straight-line code, a loop body, next to other units), so its results
  are bitwise the same for every schedule of the segment. Without it, XLA fuses the
  units with their neighbours differently per schedule and rounding differs in the
  last bit.
  """
  traced = {}

  def live(*ops):
    out = fn(*ops)
    traced["out"] = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), out)
    return out

  def dead(*ops):  # never runs; reuses the shapes of `live` when it was traced first
    shapes = traced["out"] if "out" in traced else jax.eval_shape(fn, *ops)
    return jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), shapes)

  return jax.lax.cond(_opaque_false(dep), dead, live, *operands)


# --- actor groups ---------------------------------------------------------------------


class ActorGroups:
  """A device's L * b envs split into A actor groups, each with its own envpool pool.

  Group a holds envs [a * b / A, (a + 1) * b / A) of every learner, in (learner, env)
  order; env seeds are their global ids, so any A gives the same environments. With
  A = 1 this is the usual single pool.
  """

  def __init__(self, config: Any, layout: lx.Layout):
    self.num_groups = a_count = int(config.hts.num_actors)
    learners, b = layout.learners_per_device, layout.envs_per_learner
    local_envs = layout.local_learners * b
    process_offset = jax.process_index() * local_envs
    if a_count == 1:
      self.envs = [make_env(config, num_envs=learners * b, num_shards=layout.local_devices,
                            seed_offset=process_offset)]
    else:
      per = b // a_count
      self.envs = []
      for a in range(a_count):
        seeds = [[config.seed + process_offset + s * learners * b + l * b + a * per + j
                  for l in range(learners) for j in range(per)]
                 for s in range(layout.local_devices)]
        self.envs.append(make_env(config, num_envs=learners * per,
                                  num_shards=layout.local_devices, env_seeds=seeds))
    self.learners, self.per_group = learners, b // a_count
    self.spec = self.envs[0].spec
    self.num_envs = learners * b
    self.num_shards = layout.local_devices

  @property
  def total_envs(self) -> int:
    return self.num_envs * self.num_shards

  def reset(self) -> tuple[EnvState, ...]:
    return tuple(env.reset() for env in self.envs)

  def close(self) -> None:
    for env in self.envs:
      env.close()

  def split(self, x: jax.Array, axis: int = 0) -> list[jax.Array]:
    """[..., L * b, ...] (env axis `axis`) -> A arrays [..., L * b / A, ...]."""
    if self.num_groups == 1:
      return [x]
    shape = x.shape
    x = x.reshape(shape[:axis] + (self.learners, self.num_groups, self.per_group)
                  + shape[axis + 1:])
    return [jax.lax.index_in_dim(x, a, axis + 1, keepdims=False).reshape(
        shape[:axis] + (-1,) + shape[axis + 1:]) for a in range(self.num_groups)]

  def merge(self, xs: list[jax.Array], axis: int = 0) -> jax.Array:
    """Inverse of `split`."""
    if self.num_groups == 1:
      return xs[0]
    shape = xs[0].shape
    parts = [x.reshape(shape[:axis] + (self.learners, self.per_group) + shape[axis + 1:])
             for x in xs]
    x = jnp.stack(parts, axis=axis + 1)
    return x.reshape(shape[:axis] + (-1,) + shape[axis + 1:])


# --- learners -------------------------------------------------------------------------


def windowed_targets(traj: Trajectory, config: Any, t_max: int) -> jax.Array:
  """A2C targets [T, b] of a T-step trajectory cut into T / t_max rollouts of t_max steps.

  Each window bootstraps from the behaviour value at its end, as t_max-step A2C would.
  """
  steps = traj.rewards.shape[0]
  windows = steps // t_max
  cut = lambda x: x.reshape(windows, t_max, *x.shape[1:])
  values = jnp.concatenate([cut(traj.values[:-1]), traj.values[t_max::t_max][:, None]], axis=1)
  window_trajs = Trajectory(None, None, cut(traj.rewards), cut(traj.terminated),
                            cut(traj.truncated), None, None, values, None, None, None)
  targets = jax.vmap(lambda t: compute_targets(t, config.gamma, config.returns,
                                               config.gae_lambda))(window_trajs)
  return targets.reshape(steps, *targets.shape[2:])


class A2CStepLearner:
  """HTS-A2C's learner: grad L(theta_{k-1}; D_{k-1}) in per-time-step units, then one step.

  L is the A2C loss (`losses.a2c_loss`) of the alpha x b storage, normalized by alpha * b;
  it is the sum over t of the losses of the time steps, each normalized the same way, so
  unit t adds the gradient of time step t at the behaviour parameters to an accumulator.
  """

  def __init__(self, apply_fn: Callable, config: Any, optimizer: optax.GradientTransformation,
               combiner: Any, learners: int, alpha: int):
    self.apply_fn, self.config, self.optimizer = apply_fn, config, optimizer
    self.combiner, self.learners, self.alpha = combiner, learners, alpha
    self.num_units = alpha
    self.mutable = ("acc", "sums")  # the carry entries a unit changes
    # a2c_loss with sum_over_time multiplies by the rollout length t_max.
    self.scale = (config.t_max if config.loss.sum_over_time else 1.0) / alpha

  def begin(self, behaviour_params: Any, params: Any, opt_state: Any, traj: Trajectory,
            keys: jax.Array) -> dict:
    del keys
    per_learner = split_learners(traj, self.learners)  # [L, T, b, ...]
    targets = jax.vmap(lambda t: windowed_targets(t, self.config, self.config.t_max))(
        per_learner)
    zeros = jnp.zeros((self.learners,), jnp.float32)
    return dict(grad_params=behaviour_params, params=params, opt_state=opt_state,
                obs=per_learner.obs, actions=per_learner.actions, targets=targets,
                mask=per_learner.valid.astype(jnp.float32),
                acc=jax.tree.map(jnp.zeros_like, behaviour_params),
                sums=dict(total=zeros, policy=zeros, value=zeros, entropy=zeros))

  def _step_grads(self, params: Any, row: dict) -> tuple[Any, losses.LossTerms]:
    c = self.config

    def loss_fn(p):
      logits, values = self.apply_fn(p, row["obs"])
      terms = losses.a2c_loss(logits, values, row["actions"], row["targets"], row["mask"],
                              c.loss.entropy_coef, c.loss.value_coef)
      return self.scale * terms.total, terms

    return jax.grad(loss_fn, has_aux=True)(params)

  def unit(self, carry: dict, t: Any) -> dict:
    """Adds the gradient of time step t (a Python int or traced int32)."""
    row = {k: jax.lax.dynamic_index_in_dim(carry[k], t, axis=1, keepdims=True)
           for k in ("obs", "actions", "targets", "mask")}  # [L, 1, b, ...]
    grads, terms = jax.vmap(self._step_grads)(carry["grad_params"], row)
    acc = jax.tree.map(jnp.add, carry["acc"], grads)
    sums = {k: carry["sums"][k] + getattr(terms, k) / self.alpha for k in carry["sums"]}
    return dict(carry, acc=acc, sums=sums)

  def finish(self, carry: dict) -> tuple[Any, Any, dict]:
    grads = self.combiner.grads(carry["acc"])
    updates, opt_state = jax.vmap(self.optimizer.update)(grads, carry["opt_state"],
                                                         carry["params"])
    params = optax.apply_updates(carry["params"], updates)
    return params, opt_state, dict(loss=carry["sums"],
                                   grad_norm=jax.vmap(optax.tree.norm)(grads))


class PPOSegmentLearner:
  """HTS-PPO's learner: `PPOLearner` started at theta_k on D_{k-1} (ratios vs theta_{k-1})."""

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


# --- state ----------------------------------------------------------------------------


@flax.struct.dataclass
class HTSExtra:
  """HTS state beyond `LearnerState`. Leaves lead with [L] or, for env data, [L * b].

  storage: D_{k-1}, env-major (obs [L * b, alpha, ...], values [L * b, alpha + 1]).
  behaviour_params: theta_{k-1} (HTS-A2C; () for HTS-PPO, whose storage holds the
    behaviour logits and values).
  params_version / behaviour_version / storage_version: [L] int32 version counters of
    theta_k, theta_{k-1} and of the parameters that filled the storage (-1: none yet).
  key: [L, 2] per-learner base keys (PPO minibatch shuffling).
  combiner: the combiner's state.
  """

  storage: Trajectory
  behaviour_params: Any
  params_version: jax.Array
  behaviour_version: jax.Array
  storage_version: jax.Array
  key: jax.Array
  combiner: Any = ()


def _env_major(traj: Trajectory) -> Trajectory:
  return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), traj)


_time_major = _env_major  # swapping the first two axes is its own inverse


def empty_storage(spec: Any, num_envs: int, alpha: int) -> Trajectory:
  """An all-invalid zero storage, env-major (the k = 0 placeholder for D_{-1})."""
  z = lambda shape, dtype: np.zeros((num_envs, *shape), dtype)
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


def resolve_microbatches(config: Any, num_units: int, alpha: int) -> int:
  """config.hts.microbatches, or (0) the largest divisor of both alpha and the units <= 16."""
  m = int(config.hts.microbatches)
  if m == 0:
    common_divisor = math.gcd(num_units, alpha)
    return max(d for d in range(1, min(common_divisor, 16) + 1) if common_divisor % d == 0)
  if alpha % m or num_units % m:
    raise ValueError(f"config.hts.microbatches={m} must divide both alpha={alpha} and the "
                     f"learner's {num_units} units per segment.")
  return m


def make_hts_update(setup: common.Setup, learner: Any, alpha: int, microbatches: int,
                    kind: str) -> Callable:
  """The segment (see module docstring) as a block update for `compile_step`."""
  config = setup.config
  groups: ActorGroups = setup.env
  learners = setup.layout.learners_per_device
  policy = common.block_policy(setup.network.apply, learners)
  delayed = bool(config.hts.delayed)
  unroll = unroll_units(setup)
  # Isolating learner and forward computations makes every schedule bitwise identical,
  # but XLA:CPU runs convolution gradients ~12x slower in nested computations: image
  # networks on CPU inline them instead (see "Determinism" above).
  cpu_images = (jax.devices()[0].platform == "cpu" and groups.spec.obs_layout != "flat")
  call = isolated if not cpu_images else (lambda fn, dep, *operands: fn(*operands))
  units_per_piece = learner.num_units // microbatches
  steps_per_piece = alpha // microbatches

  def isolated_unit(carry, u):
    """learner.unit as its own computation; only the carry entries it changes pass out."""
    mutable = {k: carry[k] for k in learner.mutable}
    frozen = {k: v for k, v in carry.items() if k not in learner.mutable}
    changed = call(lambda m, f, i: {k: learner.unit({**f, **m}, i)[k] for k in m},
                   u, mutable, frozen, u)
    return {**carry, **changed}

  def run_isolated_units(carry, first, count):
    if unroll or count == 1:
      for i in range(count):
        carry = isolated_unit(carry, first + i)
      return carry
    return jax.lax.scan(lambda c, u: (isolated_unit(c, u), None), carry,
                        first + jnp.arange(count, dtype=jnp.int32))[0]

  def env_step(acting_params, carry, shard, hosted=None):
    """One env step of every actor group; `hosted` = (learner carry, unit ids) overlaps it."""
    env_states, keys = carry
    key_groups = groups.split(keys)
    sent = []
    for a, env in enumerate(groups.envs):
      obs = env_states[a].obs
      if a:  # group a's forward pass runs while group a - 1's envs step
        obs = after(obs, sent[-1][0])
      logits, value = call(policy, obs, acting_params, obs)
      new_keys, actions = sample_actions(key_groups[a], logits)
      handle = env.send(env_states[a], actions, shard)
      sent.append((handle, obs, actions, logits, value, new_keys))
    lcarry = None
    handles = [s[0] for s in sent]
    if hosted is not None:
      lcarry, unit_ids = hosted
      first = after(jnp.int32(unit_ids.start), handles)  # starts after every send
      lcarry = run_isolated_units(lcarry, first, len(unit_ids))
      handles = after(handles, lcarry)  # recv waits for the units
    new_states, records = [], []
    for a, env in enumerate(groups.envs):
      _, obs, actions, logits, value, _ = sent[a]
      state, ts = env.recv(env_states[a].replace(handle=handles[a]), shard)
      new_states.append(state)
      records.append((obs, actions, ts.reward, ts.terminated, ts.truncated, ts.valid, logits,
                      value, ts.episode_over, ts.episode_return, ts.episode_length))
    merged = tuple(groups.merge(list(xs)) for xs in zip(*records))
    keys = groups.merge([s[5] for s in sent])
    return (tuple(new_states), keys), merged, lcarry

  def collect(acting_params, env_states, keys, shard, lcarry):
    """alpha steps with acting_params; the learner's units ride along if lcarry is given."""
    carry = (env_states, keys)
    outputs = []
    pieces = microbatches if lcarry is not None else 1
    steps_after = alpha // pieces - 1
    for i in range(pieces):
      hosted = None
      if lcarry is not None:
        hosted = (lcarry, range(i * units_per_piece, (i + 1) * units_per_piece))
      carry, out, lcarry_out = env_step(acting_params, carry, shard, hosted)
      if lcarry is not None:
        lcarry = lcarry_out
      outputs.append(jax.tree.map(lambda x: x[None], out))
      if steps_after:
        carry, more = jax.lax.scan(lambda c, _: env_step(acting_params, c, shard)[:2], carry,
                                   None, length=steps_after)
        outputs.append(more)
    out = jax.tree.map(lambda *xs: jnp.concatenate(xs), *outputs)
    env_states, keys = carry
    last_values = groups.merge([call(policy, s.obs, acting_params, s.obs)[1]
                                for s in env_states])
    (obs, actions, rewards, terminated, truncated, valid, logits, values, over, ep_ret,
     ep_len) = out
    values = jnp.concatenate([values, last_values[None]], axis=0)
    traj = Trajectory(obs, actions, rewards, terminated, truncated, valid, logits, values,
                      over, ep_ret, ep_len)
    return env_states, keys, traj, lcarry

  def update(state: common.LearnerState):
    x: HTSExtra = state.extra
    shard = lx.env_shard_index()
    keys = jax.vmap(jax.random.fold_in)(x.key, state.update_count)
    acting_params, version = state.params, x.params_version
    if delayed:
      behaviour = x.behaviour_params if kind == "a2c" else state.params
      lcarry = call(learner.begin, keys, behaviour, state.params, state.opt_state,
                    _time_major(x.storage), keys)
      env_states, action_keys, traj, lcarry = collect(acting_params, state.env_state,
                                                      state.action_keys, shard, lcarry)
      data_version = x.storage_version
      grad_version = x.behaviour_version if kind == "a2c" else version
    else:
      env_states, action_keys, traj, _ = collect(acting_params, state.env_state,
                                                 state.action_keys, shard, None)
      lcarry = call(learner.begin, traj.values, acting_params, state.params,
                    state.opt_state, traj, keys)
      for i in range(microbatches):
        first = after(jnp.int32(i * units_per_piece), traj.values)
        lcarry = run_isolated_units(lcarry, first, units_per_piece)
      data_version = grad_version = version
    params, opt_state, metrics = call(learner.finish, lcarry, lcarry)
    learned = jnp.ones_like(state.update_count, bool)
    if delayed:  # k = 0 has no D_{-1}: keep theta_0 and the optimizer state (bitwise).
      learned = state.update_count > 0
      keep = lambda new, old: jax.tree.map(
          lambda n, o: jnp.where(learned.reshape((-1,) + (1,) * (n.ndim - 1)), n, o), new, old)
      params, opt_state = keep(params, state.params), keep(opt_state, state.opt_state)
    params, combiner_state = learner.combiner.params(params, x.combiner)
    new_extra = x.replace(
        storage=_env_major(traj),
        behaviour_params=acting_params if kind == "a2c" else (),
        params_version=version + 1, behaviour_version=version, storage_version=version,
        combiner=combiner_state)
    new_state = state.replace(params=params, opt_state=opt_state, env_state=env_states,
                              action_keys=action_keys, update_count=state.update_count + 1,
                              extra=new_extra)
    metrics = dict(metrics, episodes=episode_log(traj)._asdict(),
                   hts=dict(data_version=data_version, grad_version=grad_version,
                            applied_to_version=version, new_version=version + 1,
                            learned=learned))
    return new_state, metrics

  return update


def make_hts(config: Any) -> common.Algorithm:
  """HTS-A2C (`algorithm = "hts_a2c"`) or HTS-PPO (`"hts_ppo"`) from a config."""
  kind = {"hts_a2c": "a2c", "hts_ppo": "ppo"}[config.algorithm]
  alpha = int(config.hts.alpha or config.t_max)
  if alpha % config.t_max:
    raise ValueError(f"config.hts.alpha={alpha} must be a multiple of config.t_max="
                     f"{config.t_max}.")
  layout = lx.make_layout(config.num_learners, config.envs_per_learner, config.num_devices)
  if config.envs_per_learner % config.hts.num_actors:
    raise ValueError(f"config.hts.num_actors={config.hts.num_actors} must divide "
                     f"config.envs_per_learner={config.envs_per_learner}.")
  num_units = alpha if kind == "a2c" else int(config.ppo.epochs) * int(config.ppo.minibatches)
  microbatches = resolve_microbatches(config, num_units, alpha)  # before building envs
  groups = ActorGroups(config, layout)
  setup = common.make_setup(config, alpha, env=groups)
  combiner = make_combiner(config, layout)
  learners = layout.learners_per_device
  if kind == "a2c":
    from galax.optimizers import make_optimizer  # pylint: disable=g-import-not-at-top

    optimizer, schedule = make_optimizer(config.optimizer, layout.envs_per_learner,
                                         layout.num_learners, setup.total_updates)
    learner = A2CStepLearner(setup.network.apply, config, optimizer, combiner, learners, alpha)
  else:
    optimizer, schedule = make_optimizer_for_units(config, layout, setup.total_updates,
                                                   num_units)
    learner = PPOSegmentLearner(PPOLearner(setup.network.apply, config, optimizer, combiner,
                                           learners, alpha, layout.envs_per_learner,
                                           setup.env))
  update = make_hts_update(setup, learner, alpha, microbatches, kind)
  local_learners = layout.local_learners
  local_envs = local_learners * layout.envs_per_learner
  first_learner = jax.process_index() * local_learners

  def init() -> common.LearnerState:
    params = common.initial_params(setup)
    versions = lambda v: np.full((local_learners,), v, np.int32)
    extra = HTSExtra(
        storage=empty_storage(groups.spec, local_envs, alpha),
        behaviour_params=params if kind == "a2c" else (),
        params_version=versions(0), behaviour_version=versions(-1),
        storage_version=versions(-1),
        key=learner_keys(config.seed, first_learner, local_learners),
        combiner=combiner.init(params))
    state = common.LearnerState(
        params=params,
        opt_state=jax.vmap(optimizer.init)(params),
        env_state=groups.reset(),
        action_keys=init_action_keys(config.seed + 1, jax.process_index() * local_envs,
                                     local_envs),
        update_count=np.zeros((local_learners,), np.int32),
        extra=extra)
    return lx.global_from_local(setup.mesh, state)

  return common.Algorithm(
      config=config, layout=layout, mesh=setup.mesh, env=groups, network=setup.network,
      init=init, step=common.compile_step(setup, update),
      env_steps_per_update=setup.envs_per_update * alpha,
      learning_rate=schedule, total_updates=setup.total_updates)
