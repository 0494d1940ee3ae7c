"""What every algorithm shares: building envs and networks on the learner axis, the
per-block policy, and compiling a block update into one jitted multi-update call.

An algorithm is an `Algorithm`: `init()` makes the training state (global arrays sharded
over the learner axis) and `step(state)` runs `updates_per_call` updates in one jitted
`shard_map`-ed `lax.scan`, returning the new state and per-update metrics.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh, PartitionSpec as P
from ml_collections import ConfigDict

from galax import algorithm_spec as spec
from galax.algorithm_spec import spec_for
from galax import divergence, networks
from galax.envs import Env, EnvState, make_env
from galax.parallel import learners as lx
from galax.parallel.combine import Combiner
from galax.learner_state import BlockUpdate, Envs, LearnerState, Setup  # noqa: F401
from galax.parallel.learner_optimizer import LearnerOptimizer
from galax.rollout import init_action_keys
from galax.types import Metrics, OptState, ParamsBlock, PyTree


# The learners' optimizer; A3C's shared-parameter optimizer is a plain optax one.
Optimizer = LearnerOptimizer | optax.GradientTransformation


@dataclasses.dataclass
class Algorithm:
  """A compiled training program. `step` is jitted; `init` builds fresh state."""

  config: ConfigDict
  layout: lx.Layout
  mesh: Mesh
  env: Env
  network: networks.ActorCritic
  init: Callable[[], LearnerState]
  abstract_init: Callable[[], LearnerState]  # shapes and shardings only (`galax.aot`)
  step: Callable[[LearnerState], tuple[LearnerState, Metrics]]
  env_steps_per_update: int
  learning_rate: optax.Schedule
  total_updates: int

  @property
  def updates_per_call(self) -> int:
    return int(self.config.updates_per_call)


def make_setup(config: ConfigDict, steps_per_env_per_update: int,
               env: Envs | None = None, devices: Sequence[jax.Device] | None = None
               ) -> Setup:
  """`env`: envs built by the caller (e.g. HTS actor groups); default `make_env`.
  `devices`: the devices to build for (default `jax.devices()`; `galax.aot` passes a
  TPU or GPU topology's compile-only devices)."""
  layout = lx.make_layout(config.num_learners, config.envs_per_learner, config.num_devices,
                          devices)
  mesh = lx.make_mesh(layout, devices)
  config = with_platform(config, mesh.devices.flat[0].platform)
  if env is None:
    env = make_env(config, num_envs=layout.learners_per_device * layout.envs_per_learner,
                   num_shards=layout.local_devices, seed_offset=layout.first_env)
  config = resolve_auto(config, env, layout.learners_per_device)
  network = networks.from_config(config.network, env.spec)
  env_steps_per_update = layout.num_learners * layout.envs_per_learner * steps_per_env_per_update
  # Whole calls of `updates_per_call` updates, so lr annealing ends exactly with the run.
  per_call = int(config.updates_per_call)
  calls = max(1, -(-int(config.total_env_steps) // (env_steps_per_update * per_call)))
  total_updates = calls * per_call
  return Setup(config, layout, mesh, env, network, total_updates)


def with_platform(config: ConfigDict, platform: str) -> ConfigDict:
  """A copy of `config` with `platform` resolved to the devices' platform ('cpu', 'gpu'
  or 'tpu'); a config that names another platform than the devices' is rejected."""
  if config.platform not in ("auto", platform):
    raise ValueError(f"config.platform={config.platform!r} but the run is built for "
                     f"{platform} devices.")
  config = copy.deepcopy(config)
  config.platform = platform
  return config


def target_platform(config: ConfigDict) -> str:
  """The platform the 'auto' rules serve: `config.platform`, resolved by `make_setup`
  from the target's devices; 'auto' (a config not yet built) reads `jax.devices()`."""
  return jax.devices()[0].platform if config.platform == "auto" else config.platform


def resolve_auto(config: ConfigDict, env: Envs, learners_per_device: int
                 ) -> ConfigDict:
  """A copy of `config` with its 'auto' choices resolved for its platform and env:
  `learner_map` ('vmap' | 'unroll' | 'loop'), `network.conv_impl` ('xla' | 'patches'),
  `update_loop` ('scan' | 'host') and `grad_chunks` (>= 1), in that order (each rule reads
  the ones before it). Resolved once, here; `Algorithm.config` holds the copy, which
  `train` prints in its header and saves as config.json."""
  config = copy.deepcopy(config)
  config.learner_map = learner_map_kind(config, env, learners_per_device)
  if config.network.conv_impl == "auto":
    # XLA:CPU compiles and runs conv gradients slowly inside a loop (`update_loop_kind`).
    looped = config.learner_map == "loop" and _cpu_convs(config, env)
    config.network.conv_impl = "patches" if looped else "xla"
  config.update_loop = update_loop_kind(config, env)
  if config.grad_chunks == 0:
    batch, steps = chunked_batch(config)
    config.grad_chunks = grad_chunks(config, env, batch, steps) if batch > 1 else 1
  return config


def chunked_batch(config: ConfigDict) -> tuple[int, int]:
  """(size of the chunked axis, samples per entry) of a learner's gradient, as the
  algorithm's spec says (`AlgorithmSpec.chunked_batch`)."""
  batch, steps, _ = spec_for(config.algorithm).chunked_batch(config)
  return batch, steps


def describe_choices(config: ConfigDict) -> str:
  """The resolved choices for a run header: combine mode, learner_map, update_loop, chunks
  (and HTS micro-batches)."""
  combine = config.combine + ("+sharded_state" if config.optimizer.sharded_state else "")
  hts = (f", hts.microbatches={config.hts.microbatches}"
         if spec_for(config.algorithm).supports(spec.MICROBATCHES) else "")
  return (f"platform={config.platform}, combine={combine}, learner_map={config.learner_map}, "
          f"conv_impl={config.network.conv_impl}, "
          f"update_loop={config.update_loop}, grad_chunks={config.grad_chunks}{hts}")


def block_policy(apply_fn: Callable, learners: int, how: str = "vmap") -> Callable:
  """A policy over a block's flat env batch [L * b, ...] with per-learner params [L, ...].

  how: how the learners' networks run (`lx.map_learners`; see `learner_map_kind`).
  """

  def policy(params, obs):
    obs = lx.learner_block(obs, learners)
    logits, values = lx.map_learners(apply_fn, params, obs, how=how)
    return lx.flatten_block((logits, values))

  return policy


# Learners per device above which 'auto' runs image networks on CPU in a loop.
MAX_UNROLLED_LEARNERS = 8


def learner_map_kind(config: ConfigDict, env: Env, learners_per_device: int) -> str:
  """How a device's learners run their networks: 'vmap', 'unroll' or 'loop'.

  Only A2C-family learners (algorithm 'a2c') read it; the others vmap. 'auto' is 'vmap'
  except for their image networks on CPU with several learners per device:
  - more than `MAX_UNROLLED_LEARNERS`: 'loop' (`lax.map`, one learner's program; with
    `network.conv_impl="auto"` its convolutions become patches): unrolled or vmapped,
    compile time and memory grow with the learners.
  - XLA convolutions: 'unroll'. Vmapped per-learner convolution weights become one
    grouped convolution, which XLA:CPU runs slower than the learners' convolutions one by
    one.
  - patch convolutions: 'vmap' (batched matmuls run well).
  """
  kind = config.learner_map  # checked by `galax.config.validate`
  if kind != "auto":
    return kind

  if (not spec_for(config.algorithm).supports(spec.LEARNER_MAP)
      or not _cpu_convs(config, env) or learners_per_device <= 1):
    return "vmap"
  if learners_per_device > MAX_UNROLLED_LEARNERS:
    return "loop"
  return "unroll" if config.network.conv_impl != "patches" else "vmap"


def _cpu_convs(config: ConfigDict, env: Env) -> bool:
  """A convolutional network on a CPU (an 'mlp' flattens images: no convolutions)."""
  return (target_platform(config) == "cpu" and env.spec.obs_layout != "flat"
          and config.network.name != "mlp")


def xla_convs_on_cpu(config: ConfigDict, env: Env) -> bool:
  """Whether the network has XLA convolutions (`network.conv_impl="xla"`) on a CPU: the
  case the CPU 'auto' choices work around."""
  return _cpu_convs(config, env) and config.network.conv_impl == "xla"


# Samples (time steps x envs) per gradient chunk below which auto chunking stops.
MIN_CHUNK_SAMPLES = 80


def grad_chunks(config: ConfigDict, env: Env, batch: int, steps: int,
                what: str = "envs per learner") -> int:
  """How many chunks a learner's gradient is computed in (`config.grad_chunks`).

  `batch` is the size of the chunked axis and `steps` the samples each of its entries
  holds: a learner's envs and t_max for A2C / IMPALA, a PPO minibatch's samples and 1.

  0 (auto) picks, on CPU for image observations, the most chunks of >= 80 samples
  (16 envs at t_max 5, 4 envs at IMPALA's unroll 20) that divide `batch`: XLA:CPU's
  convolution gradients cost more per sample on large batches, so a sum of small gradients
  is faster there (figures: docs/benchmarks.md, "The figures behind galax's automatic CPU choices"). Elsewhere 1: one batched gradient.
  """
  chunks = int(config.grad_chunks)
  if chunks == 0:
    if not _cpu_convs(config, env):
      return 1
    min_entries = max(1, -(-MIN_CHUNK_SAMPLES // steps))
    return max(k for k in range(1, max(1, batch // min_entries) + 1) if batch % k == 0)
  if batch % chunks:  # `galax.config.validate` rejects this for configs it checked
    raise ValueError(f"config.grad_chunks={chunks} must divide the {batch} {what}.")
  return chunks


def env_chunks(tree: PyTree, chunks: int, axis: int = 1) -> list[PyTree]:
  """`tree` cut into `chunks` equal, consecutive slices along its env `axis` (a list)."""
  width = jax.tree.leaves(tree)[0].shape[axis] // chunks
  return [jax.tree.map(lambda x: jax.lax.slice_in_dim(x, c * width, (c + 1) * width,
                                                      axis=axis), tree)
          for c in range(chunks)]


def mean_over_chunks(fn: Callable[[PyTree], PyTree], tree: PyTree, chunks: int, axis: int = 1
                     ) -> PyTree:
  """The mean of `fn` over `env_chunks(tree, chunks, axis)`; `fn(tree)` when chunks = 1.

  For a loss that is a mean with a fixed normaliser, the mean of the chunks' gradients is
  the whole batch's gradient (up to float rounding), computed as `chunks` smaller,
  unrolled programs (XLA:CPU is slow on conv gradients inside loops).
  """
  if chunks == 1:
    return fn(tree)
  parts = [fn(chunk) for chunk in env_chunks(tree, chunks, axis)]
  return jax.tree.map(lambda *xs: sum(xs) / chunks, *parts)


def initial_params(setup: Setup) -> ParamsBlock:
  """This process's learners' initial parameters, [local_learners, ...].

  `config.initial_params="shared"` (default): one set from `config.seed`, copied to every
  learner; all learners start identical (GALA's and all-reduce's requirement).
  "per_learner": global learner i starts from `config.seed + i`, so n independent learners
  are n seeds (learner i's params equal those of a single-learner run with seed + i).
  """
  seed, count = setup.config.seed, setup.layout.local_learners
  if setup.config.initial_params == "per_learner":
    first = setup.layout.first_learner
    each = [networks.init_params(setup.network, setup.env.spec, jax.random.PRNGKey(seed + i))
            for i in range(first, first + count)]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *each)
  params = networks.init_params(setup.network, setup.env.spec, jax.random.PRNGKey(seed))
  return lx.replicate_for_learners(params, count)


ExtraInit = Callable[[ParamsBlock], PyTree]  # this process's initial params -> a state part


def initial_state(setup: Setup, optimizer: Optimizer, init_combiner: ExtraInit | None = None,
                  init_extra: ExtraInit | None = None) -> LearnerState:
  """Fresh global state: identical params, own optimizer state, reset envs, per-env keys."""
  return lx.global_from_local(
      setup.mesh, local_initial_state(setup, optimizer, init_combiner, init_extra))


def abstract_initial_state(setup: Setup, optimizer: Optimizer,
                           init_combiner: ExtraInit | None = None,
                           init_extra: ExtraInit | None = None) -> LearnerState:
  """`initial_state`'s shapes, dtypes and shardings (`jax.ShapeDtypeStruct`s), traced,
  not computed: nothing is allocated, on the host or the target (`galax.aot`). One
  process: its state is the global state."""
  local = jax.eval_shape(
      lambda: local_initial_state(setup, optimizer, init_combiner, init_extra))
  sharding = lx.learner_sharding(setup.mesh)
  return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding),
                      local)


def local_initial_state(setup: Setup, optimizer: Optimizer,
                        init_combiner: ExtraInit | None = None,
                        init_extra: ExtraInit | None = None) -> LearnerState:
  """This process's part of the fresh state (traceable: `abstract_initial_state`).
  `init_combiner` (`Combiner.init`) and `init_extra` (the algorithm's own state) map the
  initial parameters to `LearnerState.combiner` and `.extra`."""
  layout = setup.layout
  params = initial_params(setup)
  return LearnerState(
      params=params,
      opt_state=jax.vmap(optimizer.init)(params),
      env_state=setup.env.reset(),
      action_keys=init_action_keys(setup.config.seed + 1, layout.first_env, layout.local_envs),
      update_count=jnp.zeros((layout.local_learners,), jnp.int32),
      combiner=init_combiner(params) if init_combiner else (),
      extra=init_extra(params) if init_extra else (),
  )


def assemble(setup: Setup, update: BlockUpdate, optimizer: Optimizer,
             learning_rate: optax.Schedule, steps_per_env: int,
             combiner: Combiner | None = None, init_extra: ExtraInit | None = None
             ) -> Algorithm:
  """The `Algorithm` of a block update: fresh state from `initial_state`, the update
  compiled by `compile_step`. `steps_per_env` env steps per env and update (t_max, alpha);
  `optimizer` is a `LearnerOptimizer` (or anything with a per-learner `init`); the state
  holds `combiner`'s state (none without one) and `init_extra`'s."""
  init_combiner = combiner.init if combiner is not None else None
  return Algorithm(
      config=setup.config, layout=setup.layout, mesh=setup.mesh, env=setup.env,
      network=setup.network,
      init=lambda: initial_state(setup, optimizer, init_combiner, init_extra),
      abstract_init=lambda: abstract_initial_state(setup, optimizer, init_combiner,
                                                   init_extra),
      step=compile_step(setup, update),
      env_steps_per_update=setup.envs_per_update * steps_per_env,
      learning_rate=learning_rate, total_updates=setup.total_updates)


_KEEP = object()  # `finish_update`: the algorithm's own state unchanged


def finish_update(state: LearnerState, combiner: Combiner | None, *, params: ParamsBlock,
                  opt_state: OptState, env_state: EnvState, action_keys: jax.Array,
                  metrics: Metrics, extra: PyTree = _KEEP
                  ) -> tuple[LearnerState, Metrics]:
  """The tail of every algorithm's update, in one place: the combiner's step after the
  optimizer (`Combiner.after_step`: GALA's gossip, from `state.params`, the parameters
  before the step, to `params`, those after it), its metrics merged under the combiner's
  name, the new state with the update counted. `extra`: the algorithm's new own state
  (unchanged if left out). Without a combiner (A3C) `params` are kept as they are."""
  combiner_state = state.combiner
  if combiner is not None:
    params, combiner_state, combine_metrics = combiner.after_step(state.params, params,
                                                                  state.combiner)
    if combine_metrics:
      metrics = dict(metrics, **{combiner.name: combine_metrics})
  new_state = state.replace(
      params=params, opt_state=opt_state, env_state=env_state, action_keys=action_keys,
      update_count=state.update_count + 1, combiner=combiner_state,
      extra=state.extra if extra is _KEEP else extra)
  return new_state, metrics


def update_loop_kind(config: ConfigDict, env: Env) -> str:
  """'scan' fuses the updates of a call into one XLA while loop; 'host' loops in Python.

  'auto' picks 'host' for XLA convolutions on CPU (`xla_convs_on_cpu`): XLA:CPU computes
  convolution weight-gradients several times slower inside a while loop than outside one,
  which costs more than one dispatch per update. Patch convolutions
  (`network.conv_impl="patches"`) are matmuls, as fast in a loop: 'scan'. Figures:
  docs/benchmarks.md, "The figures behind galax's automatic CPU choices".
  """
  kind = config.update_loop
  if kind == "auto":
    kind = "host" if xla_convs_on_cpu(config, env) else "scan"
  return kind  # checked by `galax.config.validate`


def compile_step(setup: Setup, update_block: BlockUpdate,
                 state_specs: P | PyTree | None = None) -> Callable:
  """jit(shard_map(scan(update_block))) over `config.updates_per_call` updates.

  `update_block(block_state) -> (block_state, metrics)` works on a device's block of
  learners. Metrics leaves must have the learner (or env) axis first; updates are stacked
  in front, so the global metrics are [U, n, ...] or [U, n * b, ...].
  """
  update_block = divergence.with_finite_flags(update_block)  # metrics["finite"], every algorithm
  updates = int(setup.config.updates_per_call)
  in_specs = P(lx.AXIS) if state_specs is None else state_specs

  def sharded(fn):
    return jax.jit(jax.shard_map(fn, mesh=setup.mesh, in_specs=(in_specs,),
                                 out_specs=(in_specs, P(None, lx.AXIS)), check_vma=False),
                   donate_argnums=0)

  if update_loop_kind(setup.config, setup.env) == "scan":
    return sharded(lambda s: jax.lax.scan(lambda c, _: update_block(c), s, None, length=updates))

  def one_update(s):
    s, metrics = update_block(s)
    return s, jax.tree.map(lambda m: m[None], metrics)

  one = sharded(one_update)
  stack = jax.jit(lambda ms: jax.tree.map(lambda *xs: jnp.concatenate(xs), *ms))

  def step(state):
    all_metrics = []
    for _ in range(updates):
      state, metrics = one(state)
      all_metrics.append(metrics)
    return state, stack(all_metrics)

  return step
