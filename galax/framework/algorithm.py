"""The `Algorithm` an algorithm's builder returns: a `Setup`, its fresh training state and its
compiled step.

`assemble` makes it from a block update (galax/framework/update.py): `init()` builds the
training state of this process's learners (`initial_state`: params from the run's seed, or
one seed per learner; the optimizer's and combiner's state; reset envs; per-env keys) as
global arrays sharded over the learner axis, `abstract_init()` its shapes only (for
`galax.aot.compile`), and `step(state)` is the update compiled by `compile_step`.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp
import optax

from galax.core import networks
from galax.core.optimizers import LearnerOptimizer
from galax.core.rollout import init_action_keys
from galax.core.types import Metrics, ParamsBlock, PyTree
from galax.framework.plan import ExecutionPlan
from galax.framework.update import BlockUpdate, LearnerState, Setup, compile_step
from galax.parallel import layout as lx
from galax.parallel.combine import Combiner

# The learners' optimizer; A3C's shared-parameter optimizer is a plain optax one.
Optimizer = LearnerOptimizer | optax.GradientTransformation
ExtraInit = Callable[[ParamsBlock], PyTree]  # this process's initial params -> a state part


@dataclasses.dataclass
class Algorithm:
  """A compiled training program over a `Setup` (whose `settings` are its config, read
  once). `step` is jitted; `init` builds fresh state; `learning_rate` is the schedule the
  update applies, as a function of the update count (for the logger)."""

  setup: Setup
  init: Callable[[], LearnerState]
  abstract_init: Callable[[], LearnerState]  # shapes and shardings only (`galax.aot.compile`)
  step: Callable[[LearnerState], tuple[LearnerState, Metrics]]
  env_steps_per_update: int
  learning_rate: optax.Schedule

  layout = property(lambda self: self.setup.layout)
  mesh = property(lambda self: self.setup.mesh)
  env = property(lambda self: self.setup.env)
  network = property(lambda self: self.setup.network)
  total_updates = property(lambda self: self.setup.total_updates)

  @property
  def plan(self) -> ExecutionPlan:
    return self.setup.plan

  @property
  def updates_per_call(self) -> int:
    return self.setup.settings.updates_per_call


def assemble(
  setup: Setup,
  update: BlockUpdate,
  optimizer: Optimizer,
  learning_rate: optax.Schedule,
  steps_per_env: int,
  combiner: Combiner | None = None,
  init_extra: ExtraInit | None = None,
) -> Algorithm:
  """The `Algorithm` of a block update over `setup`: fresh state from
  `initial_state`, the update compiled by `compile_step`. `steps_per_env` env steps per env
  and update (t_max, alpha); `optimizer` is a `LearnerOptimizer` (or anything with a
  per-learner `init`); the state holds `combiner`'s state (none without one) and
  `init_extra`'s."""
  init_combiner = combiner.init if combiner is not None else None
  return Algorithm(
    setup=setup,
    init=lambda: initial_state(setup, optimizer, init_combiner, init_extra),
    abstract_init=lambda: abstract_initial_state(setup, optimizer, init_combiner, init_extra),
    step=compile_step(setup, update),
    env_steps_per_update=setup.envs_per_update * steps_per_env,
    learning_rate=learning_rate,
  )


def initial_params(setup: Setup) -> ParamsBlock:
  """This process's learners' initial parameters, [local_learners, ...].

  `initial_params="shared"` (default): one set from the run's seed, copied to every
  learner; all learners start identical (GALA's and all-reduce's requirement).
  "per_learner": global learner i starts from seed + i, so n independent learners
  are n seeds (learner i's params equal those of a single-learner run with seed + i).
  """
  seed, count = setup.settings.seed, setup.layout.local_learners
  if setup.settings.initial_params == "per_learner":
    first = setup.layout.first_learner
    each = [
      networks.init_params(setup.network, setup.env.spec, jax.random.PRNGKey(seed + i))
      for i in range(first, first + count)
    ]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *each)
  params = networks.init_params(setup.network, setup.env.spec, jax.random.PRNGKey(seed))
  return lx.replicate_for_learners(params, count)


def initial_state(
  setup: Setup,
  optimizer: Optimizer,
  init_combiner: ExtraInit | None = None,
  init_extra: ExtraInit | None = None,
) -> LearnerState:
  """Fresh global state: identical params, own optimizer state, reset envs, per-env keys."""
  return lx.global_from_local(
    setup.mesh, local_initial_state(setup, optimizer, init_combiner, init_extra)
  )


def abstract_initial_state(
  setup: Setup,
  optimizer: Optimizer,
  init_combiner: ExtraInit | None = None,
  init_extra: ExtraInit | None = None,
) -> LearnerState:
  """`initial_state`'s shapes, dtypes and shardings (`jax.ShapeDtypeStruct`s), traced,
  not computed: nothing is allocated, on the host or the target (`galax.aot.compile`). One
  process: its state is the global state."""
  local = jax.eval_shape(lambda: local_initial_state(setup, optimizer, init_combiner, init_extra))
  sharding = lx.learner_sharding(setup.mesh)
  return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), local)


def local_initial_state(
  setup: Setup,
  optimizer: Optimizer,
  init_combiner: ExtraInit | None = None,
  init_extra: ExtraInit | None = None,
) -> LearnerState:
  """This process's part of the fresh state (traceable: `abstract_initial_state`).
  `init_combiner` (`Combiner.init`) and `init_extra` (the algorithm's own state) map the
  initial parameters to `LearnerState.combiner` and `.extra`."""
  layout = setup.layout
  params = initial_params(setup)
  return LearnerState(
    params=params,
    opt_state=jax.vmap(optimizer.init)(params),
    env_state=setup.env.reset(),
    action_keys=init_action_keys(setup.settings.seed + 1, layout.first_env, layout.local_envs),
    update_count=jnp.zeros((layout.local_learners,), jnp.int32),
    combiner=init_combiner(params) if init_combiner else (),
    extra=init_extra(params) if init_extra else (),
  )
