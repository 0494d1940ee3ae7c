"""What every algorithm's update is made of: its setup, its state, the update's shared
pieces and the jitted step it is compiled into.

`make_setup` takes the run's config read once (`RunSettings`, galax/framework/settings.py),
lays the learners out over the devices, builds their envs and network and makes the run's
`ExecutionPlan` (galax/framework/plan.py) for them: a `Setup`. `make_learners` adds the
learners' combiner and optimizer (`UpdateParts`).

`LearnerState` is the state of n learners. An algorithm writes its update (a `BlockUpdate`)
for one device's block of learners as plain JAX, the combiner's two points on its own lines
(`galax.parallel.combine`), ending in `finish_update` (the new state, the update counted).
The wrappers here carry out the plan on it: `block_policy` runs the learners' networks
(`plan.learner_map`), `chunked` computes a gradient in `plan.grad_chunks` pieces,
`scan_loop` runs a learner's steps (PPO's epochs and minibatches, HTS's units) as a scan or
unrolled (`plan.unroll_units`).

`compile_step` compiles the update into the step that runs `updates_per_call` updates, one
jitted `shard_map` (`plan.update_loop`), returning the new state and per-update metrics;
`galax.framework.algorithm.assemble` makes the `Algorithm` of it (with `init()`, the fresh
training state).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple, Sequence

import flax.struct
import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from galax.core import divergence, networks, optimizers
from galax.core.optimizers import LearnerOptimizer
from galax.core.types import Metrics, OptState, ParamsBlock, PyTree
from galax.envs import Env, EnvSettings, EnvState, make_env
from galax.envs.actor_groups import ActorGroups
from galax.framework.plan import ExecutionPlan, plan_for
from galax.framework.settings import RunSettings
from galax.framework.spec import AlgorithmSpec
from galax.parallel import layout as lx
from galax.parallel.combine import Combiner, make_combiner
from galax.parallel.sharded_optimizer import make_sharded_optimizer

Envs = Env | ActorGroups  # a device's training envs (HTS: its actor groups)


@flax.struct.dataclass
class LearnerState:
  """Training state of n learners (leading axis [n] or, for env leaves, [n * b])."""

  params: ParamsBlock
  opt_state: OptState
  env_state: EnvState
  action_keys: jax.Array  # [n * b, 2] per-env sampling keys
  update_count: jax.Array  # [n] int32
  combiner: PyTree = ()  # the combiner's state (`Combiner.init`: GALA's gossip buffers)
  extra: PyTree = ()  # the algorithm's own state (PPO's shuffle keys, HTS's storage, ...)


# update_block(state) -> (state, metrics): one update of a device's block of learners.
BlockUpdate = Callable[[LearnerState], tuple[LearnerState, Metrics]]


@dataclasses.dataclass
class Setup:
  """The run's settings (its config read once), layout, mesh, envs, network and execution
  plan (before the algorithm-specific parts; `make_setup`)."""

  settings: RunSettings
  layout: lx.Layout
  mesh: Mesh
  env: Envs
  network: networks.ActorCritic
  plan: ExecutionPlan
  total_updates: int
  anneal_updates: int  # updates over which optimizer.anneal="linear" reaches 0

  @property
  def env_settings(self) -> EnvSettings:
    return self.settings.env

  @property
  def envs_per_update(self) -> int:
    return self.layout.num_learners * self.layout.envs_per_learner


MakeEnvs = Callable[[lx.Layout, RunSettings], Envs]  # -> this process's training envs


def default_envs(layout: lx.Layout, settings: RunSettings) -> Env:
  """`make_env` for a layout: this process's learners' envs, seeded the run's seed plus
  their global env index."""
  return make_env(
    settings.env,
    num_envs=layout.learners_per_device * layout.envs_per_learner,
    seed=settings.seed + layout.first_env,
    num_shards=layout.local_devices,
  )


def make_setup(
  settings: RunSettings,
  spec: AlgorithmSpec,
  make_envs: MakeEnvs | None = None,
  devices: Sequence[jax.Device] | None = None,
) -> Setup:
  """The setup of a run's `settings` for its algorithm's `spec` (its env steps per update,
  and what the plan's rules ask of it). `make_envs`: builds the envs for the layout (e.g.
  HTS actor groups); default `default_envs`. `devices`: the devices to build for (default
  `jax.devices()`; `galax.aot.compile` passes a TPU or GPU topology's compile-only devices)."""
  s = settings
  layout = lx.make_layout(s.num_learners, s.envs_per_learner, s.num_devices, devices)
  mesh = lx.make_mesh(layout, devices)
  env = (make_envs or default_envs)(layout, settings)
  obs_layout, learners = env.spec.obs_layout, layout.learners_per_device
  plan = plan_for(settings, spec, mesh.devices.flat, obs_layout, learners)
  network = settings.network.build(env.spec, plan.conv_impl)
  _, total_updates, anneal_updates = run_updates(s, spec)
  return Setup(
    settings,
    layout,
    mesh,
    env,
    network,
    plan,
    total_updates=total_updates,
    anneal_updates=anneal_updates,
  )


def run_updates(settings: RunSettings, spec: AlgorithmSpec) -> tuple[int, int, int]:
  """(env steps per update, the run's updates, the updates over which
  optimizer.anneal="linear" reaches 0), from the settings alone (nothing is built).

  The run's updates are whole calls of `updates_per_call` covering `total_env_steps`, so
  that an lr anneal over the run's length ends exactly with the run."""
  per_update = settings.num_learners * settings.envs_per_learner * spec.steps_per_env(settings)
  per_call = settings.updates_per_call
  calls = max(1, -(-settings.total_env_steps // (per_update * per_call)))
  total = calls * per_call
  return per_update, total, settings.optimizer.anneal_updates(total, per_update)


class UpdateParts(NamedTuple):
  """A `Setup`, its learners' combiner, their optimizer and its learning-rate schedule."""

  setup: Setup
  combiner: Combiner
  optimizer: LearnerOptimizer
  schedule: optax.Schedule


def params_shapes(setup: Setup) -> PyTree:
  """Shapes and dtypes of one learner's parameters (no computation)."""
  return jax.eval_shape(
    lambda: networks.init_params(setup.network, setup.env.spec, jax.random.PRNGKey(0))
  )


def make_learners(
  settings: RunSettings,
  spec: AlgorithmSpec,
  devices: Sequence[jax.Device] | None = None,
  steps_per_update: int = 1,
  make_envs: MakeEnvs | None = None,
) -> UpdateParts:
  """`make_setup`, then the combiner (`settings.combine`) and the learners' optimizer, whose
  schedule counts `steps_per_update` optimizer steps per update (PPO's minibatches). With
  `optimizer.sharded_state` both come from `galax.parallel.sharded_optimizer`."""
  setup = make_setup(settings, spec, make_envs, devices)
  opt, layout = setup.settings.optimizer, setup.layout
  envs, learners = layout.envs_per_learner, layout.num_learners
  schedule, per_update = optimizers.learner_schedule(
    opt, envs, learners, setup.anneal_updates, steps_per_update
  )
  if opt.sharded_state:  # ZeRO-1: the all-reduce as a reduce-scatter and an all-gather
    combiner, optimizer = make_sharded_optimizer(opt, params_shapes(setup), learners, schedule)
  else:
    combiner = make_combiner(setup.settings.combine, learners)
    optimizer = optimizers.make_replicated_optimizer(opt, schedule)
  return UpdateParts(setup, combiner, optimizer, per_update)


def block_policy(apply_fn: Callable, learners: int, how: str = "vmap") -> Callable:
  """A policy over a block's flat env batch [L * b, ...] with per-learner params [L, ...].

  how: how the learners' networks run (`lx.map_learners`; `ExecutionPlan.learner_map`).
  """

  def policy(params, obs):
    obs = lx.learner_block(obs, learners)
    logits, values = lx.map_learners(apply_fn, params, obs, how=how)
    return lx.flatten_block((logits, values))

  return policy


def env_chunks(tree: PyTree, chunks: int, axis: int = 1) -> list[PyTree]:
  """`tree` cut into `chunks` equal, consecutive slices along its env `axis` (a list)."""
  width = jax.tree.leaves(tree)[0].shape[axis] // chunks
  return [
    jax.tree.map(lambda x: jax.lax.slice_in_dim(x, c * width, (c + 1) * width, axis=axis), tree)
    for c in range(chunks)
  ]


def mean_of(parts: list[PyTree]) -> PyTree:
  """The leafwise mean of equal-structured pytrees."""
  return jax.tree.map(lambda *xs: sum(xs) / len(parts), *parts)


def chunked(
  fn: Callable[[PyTree], PyTree],
  chunks: int,
  axis: int = 1,
  combine: Callable[[list[PyTree]], PyTree] = mean_of,
) -> Callable[[PyTree], PyTree]:
  """`fn` computed on `chunks` equal slices of its input along `axis`, then `combine`d
  (the mean by default); `fn` itself when chunks = 1.

  For a loss that is a mean with a fixed normaliser, the mean of the chunks' gradients is
  the whole batch's gradient (up to float rounding), computed as `chunks` smaller,
  unrolled programs (`ExecutionPlan.grad_chunks`: XLA:CPU's conv gradients cost more per
  sample on large batches).
  """
  if chunks == 1:
    return fn
  return lambda tree: combine([fn(part) for part in env_chunks(tree, chunks, axis)])


def scan_loop(
  body: Callable[[PyTree, int | jax.Array], PyTree],
  carry: PyTree,
  count: int,
  unroll: bool,
  first: int | jax.Array = 0,
) -> PyTree:
  """`body(carry, i)` for i = first .. first + count - 1 in order (`first` an int or a traced
  int32): a Python loop (`unroll`, `ExecutionPlan.unroll_units`) or a `lax.scan` over i."""
  if unroll or count <= 1:
    for i in range(count):
      carry = body(carry, first + i)
    return carry
  ids = first + jnp.arange(count, dtype=jnp.int32)
  return jax.lax.scan(lambda c, i: (body(c, i), None), carry, ids)[0]


_KEEP = object()  # `finish_update`: the algorithm's own state unchanged


def finish_update(
  state: LearnerState,
  *,
  params: ParamsBlock,
  opt_state: OptState,
  combiner_state: PyTree,
  env_state: EnvState,
  action_keys: jax.Array,
  metrics: Metrics,
  extra: PyTree = _KEEP,
) -> tuple[LearnerState, Metrics]:
  """The new state, with the update counted, and the update's metrics. `extra`: the
  algorithm's new own state (unchanged if left out)."""
  new_state = state.replace(
    params=params,
    opt_state=opt_state,
    env_state=env_state,
    action_keys=action_keys,
    update_count=state.update_count + 1,
    combiner=combiner_state,
    extra=state.extra if extra is _KEEP else extra,
  )
  return new_state, metrics


def _settles(mesh: Mesh) -> bool:
  """Whether each call waits for its input first: on several CPU devices. XLA:CPU runs every
  device's programs and their launches on one small thread pool, and a collective program
  launched while a device still has an earlier program queued can take the threads that
  program needs: the other devices wait at the rendezvous until XLA aborts (a busy machine
  makes it likely; measured in issue 74)."""
  devices = list(mesh.devices.flat)
  return len(devices) > 1 and devices[0].platform == "cpu"


class _Settled:
  """A jitted step that waits for its input state before it launches (`_settles`); its
  other attributes (`lower`, ...) are the jitted function's."""

  def __init__(self, call: Callable):
    self.call = call

  def __call__(self, state: PyTree):
    return self.call(jax.block_until_ready(state))

  def __getattr__(self, name: str):
    return getattr(self.call, name)


def compile_step(
  setup: Setup, update_block: BlockUpdate, state_specs: P | PyTree | None = None
) -> Callable:
  """jit(shard_map(scan(update_block))) over the run's `updates_per_call` updates, or with
  `plan.update_loop = "host"` a Python loop of jitted single updates.

  `update_block(block_state) -> (block_state, metrics)` works on a device's block of
  learners. Metrics leaves must have the learner (or env) axis first; updates are stacked
  in front, so the global metrics are [U, n, ...] or [U, n * b, ...].
  """
  update_block = divergence.with_finite_flags(update_block)  # metrics["finite"], every algorithm
  updates = setup.settings.updates_per_call
  in_specs = P(lx.AXIS) if state_specs is None else state_specs

  def sharded(fn):
    return jax.jit(
      jax.shard_map(
        fn,
        mesh=setup.mesh,
        in_specs=(in_specs,),
        out_specs=(in_specs, P(None, lx.AXIS)),
        check_vma=False,
      ),
      donate_argnums=0,
    )

  settle = _settles(setup.mesh)
  if setup.plan.update_loop == "scan":
    call = sharded(lambda s: jax.lax.scan(lambda c, _: update_block(c), s, None, length=updates))
    return _Settled(call) if settle else call

  def one_update(s):
    s, metrics = update_block(s)
    return s, jax.tree.map(lambda m: m[None], metrics)

  one = sharded(one_update)
  stack = jax.jit(lambda ms: jax.tree.map(lambda *xs: jnp.concatenate(xs), *ms))

  def step(state):
    all_metrics = []
    for _ in range(updates):
      state, metrics = one(jax.block_until_ready(state) if settle else state)
      all_metrics.append(metrics)
    return state, stack(all_metrics)

  return step
