"""The execution plan: every choice of how a run executes on its devices, made in one place.

The algorithms are written as PureJaxRL's are: a rollout, targets, a loss, an optimizer
step, in scans. How that program runs best depends on the platform, and on CPU it matters
a lot: XLA:CPU computes convolution gradients several times slower inside a loop than
outside one, on large batches than on small ones, and inside nested computations
(figures: docs/benchmarks.md, "The figures behind galax's automatic CPU choices"). Those
choices are an `ExecutionPlan`, built by `make_plan` from the run's settings (their
`PlanChoices`, and the algorithm's shape from its spec), the devices' platform and the
envs, and nowhere else:

  platform     'cpu' | 'gpu' | 'tpu': the devices'; `config.platform` may only confirm it.
  learner_map  how a device's learners run their networks: 'vmap' | 'unroll' | 'loop'.
  conv_impl    'xla' convolutions or 'patches' (matmuls; the same parameters): patches
               on CPU for learners in a loop and for many gradient steps per update (PPO).
  update_loop  'scan' (one XLA loop per call) | 'host' (a Python loop of jitted updates);
               'host' also unrolls a learner's units (PPO minibatches, HTS steps).
  grad_chunks  how many equal chunks a learner's gradient is computed in (>= 1).
  unit_call    'isolated' (HTS learner units compiled apart: bitwise the same in every
               schedule) | 'inline' (among their neighbours: fast conv gradients on CPU).
  microbatches pieces an HTS segment's learner work is split into (1 elsewhere).

The algorithms receive the plan in their `Setup`, and the wrappers that act on it
(`galax.framework.update`); none reads the platform. `train` prints `describe()` in its
header.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

from galax.envs.registry import backend_for
from galax.framework.settings import RunSettings
from galax.framework.spec import LEARNER_MAP, AlgorithmSpec

# Learners per device above which 'auto' runs image networks on CPU in a loop.
MAX_UNROLLED_LEARNERS = 8
# Samples (time steps x envs) per gradient chunk below which auto chunking stops.
MIN_CHUNK_SAMPLES = 80
# The most pieces 'auto' cuts an HTS segment into.
MAX_MICROBATCHES = 16
# Gradient steps per update (PPO's epochs x minibatches) from which 'auto' runs CPU
# convolutions as patches, so that the steps are scanned instead of unrolled.
MIN_SCANNED_GRADIENT_STEPS = 16


@dataclasses.dataclass(frozen=True)
class ExecutionPlan:
  """How a run executes (see the module docstring); every field resolved."""

  platform: str
  learner_map: str
  conv_impl: str
  update_loop: str
  grad_chunks: int
  unit_call: str
  microbatches: int = 1

  @property
  def unroll_units(self) -> bool:
    """Whether a learner's units run as a Python loop (with the 'host' update loop)."""
    return self.update_loop == "host"

  def describe(self) -> str:
    """Every field as `name=value`, for the run header."""
    return ", ".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self))

  def replace(self, **changes) -> ExecutionPlan:
    return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True)
class PlanContext:
  """What the plan's rules read besides the config: the devices' platform, the envs'
  observation layout ('flat' for vectors), whether the envs step inside the program
  (gymnax) and a device's learners."""

  platform: str
  obs_layout: str
  envs_in_program: bool
  learners_per_device: int


def make_plan(settings: RunSettings, spec: AlgorithmSpec, target: PlanContext) -> ExecutionPlan:
  """The plan of a run's `settings` (its algorithm's `spec`) on `target`: the explicit
  choices (`settings.plan`), the 'auto' ones resolved by the rules below, in this order
  (each rule reads the ones before it)."""
  c = settings.plan
  segment_units = spec.segment_units(settings) if spec.segment_units else None
  if c.platform not in ("auto", target.platform):
    raise ValueError(
      f"config.platform={c.platform!r} but the run is built for {target.platform} devices."
    )
  cpu_images = target.platform == "cpu" and target.obs_layout != "flat"
  convs = cpu_images and not c.flattens  # an 'mlp' flattens: no convolutions
  learner_map = _learner_map(c.learner_map, c.conv_impl, spec, target, convs)
  conv_impl = c.conv_impl
  if conv_impl == "auto":  # patches where a CPU loops over learners or many gradient steps
    looped = learner_map == "loop" or spec.gradient_steps(settings) >= MIN_SCANNED_GRADIENT_STEPS
    conv_impl = "patches" if convs and looped else "xla"
  update_loop = c.update_loop
  if update_loop == "auto":  # XLA:CPU's conv gradients are slow inside a while loop
    update_loop = "host" if convs and conv_impl == "xla" else "scan"
  return ExecutionPlan(
    platform=target.platform,
    learner_map=learner_map,
    conv_impl=conv_impl,
    update_loop=update_loop,
    grad_chunks=_grad_chunks(c.grad_chunks, spec.chunked_batch(settings), convs),
    unit_call="inline" if cpu_images else "isolated",
    microbatches=_microbatches(c.microbatches, segment_units, target.envs_in_program),
  )


def _learner_map(
  chosen: str, conv_impl: str, spec: AlgorithmSpec, target: PlanContext, convs: bool
) -> str:
  """`config.learner_map` (`chosen`; `conv_impl`: `config.network.conv_impl`). Its 'auto'
  is 'vmap' except for A2C-family image networks on CPU with several learners per device:
  - more than `MAX_UNROLLED_LEARNERS`: 'loop' (`lax.map`, one learner's program; with
    `network.conv_impl="auto"` its convolutions become patches): unrolled or vmapped,
    compile time and memory grow with the learners.
  - XLA convolutions: 'unroll'. Vmapped per-learner convolution weights become one grouped
    convolution, which XLA:CPU runs slower than the learners' convolutions one by one.
  - patch convolutions: 'vmap' (batched matmuls run well).
  """
  if chosen != "auto":  # checked by `galax.config.validate`
    return chosen
  learners = target.learners_per_device
  if not spec.supports(LEARNER_MAP) or not convs or learners <= 1:
    return "vmap"
  if learners > MAX_UNROLLED_LEARNERS:
    return "loop"
  return "unroll" if conv_impl != "patches" else "vmap"


def _grad_chunks(chunks: int, chunked_batch: tuple[int, int, str], convs: bool) -> int:
  """`config.grad_chunks` (`chunks`), or (0, auto) on CPU for conv networks the most chunks
  of >= 80 samples (16 envs at t_max 5, 4 envs at IMPALA's unroll 20) that divide the
  chunked axis (`AlgorithmSpec.chunked_batch`): a sum of small conv gradients is faster
  there than one large one. Elsewhere 1: one batched gradient."""
  batch, steps, what = chunked_batch
  if chunks == 0:
    if not convs or batch <= 1:
      return 1
    min_entries = max(1, -(-MIN_CHUNK_SAMPLES // steps))
    return max(k for k in range(1, max(1, batch // min_entries) + 1) if batch % k == 0)
  if batch % chunks:  # `galax.config.validate` rejects this for configs it checked
    raise ValueError(f"config.grad_chunks={chunks} must divide the {batch} {what}.")
  return chunks


def _microbatches(
  chosen: int, units_and_steps: tuple[int, int] | None, envs_in_program: bool
) -> int:
  """`config.hts.microbatches` (`chosen`), or (0, auto) the largest divisor <= 16 of both
  the learner's units and the env steps per segment (`AlgorithmSpec.segment_units`); 1 for
  envs that step inside the program (gymnax), where pieces have no host stepping to
  overlap and only add work, and for algorithms whose updates are not segments (None)."""
  if units_and_steps is None:
    return 1
  if chosen:
    return chosen
  if envs_in_program:
    return 1
  divisor = math.gcd(*units_and_steps)
  return max(d for d in range(1, min(divisor, MAX_MICROBATCHES) + 1) if divisor % d == 0)


def plan_for(
  settings: RunSettings,
  spec: AlgorithmSpec,
  devices: Sequence[Any],
  obs_layout: str,
  learners_per_device: int,
) -> ExecutionPlan:
  """`make_plan` for a run on `devices` (jax devices: their platform), with envs of
  `obs_layout` and `learners_per_device` learners on each."""
  return make_plan(
    settings,
    spec,
    PlanContext(
      platform=devices[0].platform,
      obs_layout=obs_layout,
      envs_in_program=backend_for(settings.env.id).in_program,
      learners_per_device=learners_per_device,
    ),
  )
