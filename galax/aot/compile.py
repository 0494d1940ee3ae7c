"""Compile a training program for a TPU slice or a GPU node that is not there.

  python -m galax.aot --config=minatar_gala --topology=v5p:4x4x4
  python -m galax.aot --config=minatar_ppo --topology=h100:8 --json
  python -m galax.aot --config=minatar_a2c --topology=v5e:2x2 --config.envs_per_learner=4096
  python -m galax.aot --config=minatar_ppo --topology=v5e:2x2 --find_max_envs

One call of the training step (`updates_per_call` updates, the gymnax envs inside the
program) is lowered from abstract state (shapes and shardings: nothing is allocated) and
compiled by XLA for the target (`galax.aot.targets`; `pip install -e '.[tpu]'` or
`'.[gpu-aot]'`). It prints, per chip: memory (arguments, outputs, temporaries, code)
against the chip's HBM; FLOPs and bytes per update with loop trip counts multiplied in
(`galax.aot.hlo_cost`); the collectives in the program; the compile time; and a roofline
estimate of agent steps/s, per chip and for the slice: the slowest of compute, HBM
traffic, collectives and kernel launches (`galax.aot.targets`). These are the compiler's
estimates, not measurements.

Learners: `--learners_per_chip` (default 1) learners on every chip; a one-learner config
(combine "independent") becomes all-reduce across them, as a pod job would run it.
A program that does not fit exits 2 with one line naming the bytes needed and available.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time

import jax
from absl import app, flags
from ml_collections import ConfigDict, config_flags

import galax.config as config_lib
from galax.config import Config, cli

# Compile-only targets need no backend: the CPU's, unless JAX_PLATFORMS says otherwise
# (`import galax` has imported jax, which read the variable; no backend is up yet). The
# CUDA plugin was initialised at `import galax`, before this: targets.register_cuda_compiler
# initialises it again under this setting.
if "JAX_PLATFORMS" not in os.environ:
  os.environ["JAX_PLATFORMS"] = "cpu"  # and for the processes this one starts
  jax.config.update("jax_platforms", "cpu")
# libtpu takes a machine-wide lock for the TPU it drives; compiling drives none, so
# several compiling processes (tests in parallel, a sweep) may load it.
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

from galax.aot import hlo_cost, targets
from galax.envs.registry import backend_for

MAX_ENVS_PER_LEARNER = 1 << 24  # --find_max_envs searches up to here


class DoesNotFit(ValueError):
  """The program needs more memory per chip than the chip has."""


@dataclasses.dataclass
class Report:
  config_name: str
  topology: str
  chip: str
  chips: int
  learners: int
  learners_per_chip: int
  envs_per_chip: int
  combine: str
  plan: str  # the execution plan (as the run header prints it)
  env_steps_per_update: int
  updates_per_call: int
  argument_bytes: int
  output_bytes: int
  alias_bytes: int
  temp_bytes: int
  code_bytes: int
  needed_bytes: int
  chip_memory_bytes: int
  flops_per_update: float  # per chip, loops multiplied in
  bytes_per_update: float  # per chip
  collectives: dict  # op -> [executions per update, bytes per update] per chip
  ops_per_update: float  # executed kernels per chip (launch latency bounds small programs)
  unknown_loops: int
  compile_s: float
  bound: str  # compute | memory | interconnect | kernels (launch overhead)
  seconds_per_update: dict  # each bound's time per update
  steps_per_s_per_chip: float
  steps_per_s_slice: float


def for_target(config: Config, target: targets.Target, learners_per_chip: int) -> Config:
  """The config as compiled for `target`: learners on every chip, the platform named."""
  backend = backend_for(config.env.id)
  if not backend.in_program:
    raise ValueError(
      f"env {config.env.id!r} steps on the host ({backend.name}'s threads) "
      "and cannot be compiled into an accelerator program; use a gymnax/ id."
    )
  if learners_per_chip < 1:
    raise ValueError(f"--learners_per_chip must be >= 1, got {learners_per_chip}.")
  if config.update_loop == "host":
    raise ValueError(
      "config.update_loop='host' is a Python loop of calls; "
      "compile 'scan' (or 'auto') for an accelerator."
    )
  num_learners = learners_per_chip * target.num_chips
  # one agent over the slice, as a pod job runs it
  combine = "allreduce" if config.combine == "independent" and num_learners > 1 else config.combine
  return config_lib.with_fields(
    config,
    {
      "num_learners": num_learners,
      "num_devices": target.num_chips,
      "combine": combine,
      "checkpoint_every_steps": 0,
    },
  )


def compile_for(config: Config, target: targets.Target):
  """(algorithm, compiled step, compile seconds) for `target`'s devices."""
  config_lib.validate(config)
  algorithm = config_lib.make_algorithm(config, devices=target.devices)
  abstract = algorithm.abstract_init()
  start = time.perf_counter()
  try:
    compiled = algorithm.step.lower(abstract).compile()
  except jax.errors.JaxRuntimeError as e:
    raise _as_does_not_fit(e, target) from e
  return algorithm, compiled, time.perf_counter() - start


def _as_does_not_fit(error: Exception, target: targets.Target) -> Exception:
  """XLA:TPU's RESOURCE_EXHAUSTED as one `DoesNotFit` line; other errors unchanged."""
  text = str(error)
  if "RESOURCE_EXHAUSTED" not in text:
    return error
  # "... required for HLO temporaries (313.69G) exceeds available HBM (15.75G)" or
  # "Used 20.5G of 15.75G hbm"
  sizes = re.findall(r"([\d.]+[KMGT])\b", text)
  if len(sizes) >= 2:
    needed, available = sizes[0], sizes[1]
    what = "for its temporaries " if "temporaries" in text else ""
    return DoesNotFit(
      f"does not fit on {target.chip.name}: the program needs {needed}B "
      f"{what}per chip and {available}B of HBM is available "
      f"({target.topology}; XLA: {text.splitlines()[0][:160]})."
    )
  return DoesNotFit(
    f"does not fit on {target.chip.name} ({target.topology}): {text.splitlines()[0][:200]}"
  )


def needed_bytes(memory, target: targets.Target) -> int:
  """The bytes per chip a compiled program's `memory_analysis()` adds up to (arguments,
  outputs less what they alias, temporaries, code); `DoesNotFit` when the chip has fewer."""
  needed = (
    memory.argument_size_in_bytes
    + memory.output_size_in_bytes
    - memory.alias_size_in_bytes
    + memory.temp_size_in_bytes
    + memory.generated_code_size_in_bytes
  )
  chip = target.chip
  if needed > chip.memory_bytes:  # XLA:GPU compiles programs that do not fit
    raise DoesNotFit(
      f"does not fit on {chip.name}: the program needs {needed:,} bytes per "
      f"chip and the chip has {chip.memory_bytes:,} ({target.topology})."
    )
  return needed


def report(
  name: str, target: targets.Target, algorithm, compiled, compile_s: float, learners_per_chip: int
) -> Report:
  """The table's figures; `DoesNotFit` when the memory needed exceeds the chip's."""
  memory = compiled.memory_analysis()
  needed = needed_bytes(memory, target)
  chip = target.chip
  updates = algorithm.updates_per_call
  cost = hlo_cost.program_cost(compiled.as_text())
  flops, nbytes = cost.flops / updates, cost.bytes / updates
  collectives = {
    op: [count / updates, b / updates] for op, (count, b) in sorted(cost.collectives.items())
  }
  comm = sum(b for _, b in collectives.values())
  times = dict(
    compute=flops / chip.peak_flops,
    memory=nbytes / chip.hbm_bytes_per_s,
    interconnect=comm / chip.interconnect_bytes_per_s,
    kernels=cost.ops / updates * chip.kernel_s,
  )
  bound = max(times, key=times.get)
  layout = algorithm.layout
  per_chip = algorithm.env_steps_per_update / target.num_chips / max(times[bound], 1e-30)
  return Report(
    config_name=name,
    topology=target.topology,
    chip=chip.name,
    chips=target.num_chips,
    learners=layout.num_learners,
    learners_per_chip=learners_per_chip,
    envs_per_chip=layout.learners_per_device * layout.envs_per_learner,
    combine=algorithm.setup.settings.combine.kind,
    plan=algorithm.plan.describe(),
    env_steps_per_update=algorithm.env_steps_per_update,
    updates_per_call=updates,
    argument_bytes=memory.argument_size_in_bytes,
    output_bytes=memory.output_size_in_bytes,
    alias_bytes=memory.alias_size_in_bytes,
    temp_bytes=memory.temp_size_in_bytes,
    code_bytes=memory.generated_code_size_in_bytes,
    needed_bytes=needed,
    chip_memory_bytes=chip.memory_bytes,
    flops_per_update=flops,
    bytes_per_update=nbytes,
    collectives=collectives,
    ops_per_update=cost.ops / updates,
    unknown_loops=cost.unknown_loops,
    compile_s=compile_s,
    bound=bound,
    seconds_per_update=times,
    steps_per_s_per_chip=per_chip,
    steps_per_s_slice=per_chip * target.num_chips,
  )


def build(
  name: str, config: Config | ConfigDict, topology: str, learners_per_chip: int = 1
) -> Report:
  """Compiles `config` for `topology` (`learners_per_chip` learners on each chip)."""
  target = targets.target_devices(topology)
  config = for_target(config_lib.from_data(config), target, learners_per_chip)
  algorithm, compiled, seconds = compile_for(config, target)
  return report(name, target, algorithm, compiled, seconds, learners_per_chip)


def find_max_envs(
  name: str, config: Config | ConfigDict, topology: str, learners_per_chip: int = 1
) -> tuple[int, Report]:
  """The largest envs_per_learner (a power-of-two multiple of the config's) that fits the
  chip: steps of x16 until one does not fit, then halving the gap (a few compiles)."""
  config = config_lib.from_data(config)
  base = config.envs_per_learner

  def attempt(factor: int) -> Report | None:
    trial = config_lib.with_fields(config, {"envs_per_learner": base * factor})
    try:
      return build(name, trial, topology, learners_per_chip)
    except DoesNotFit:
      return None

  best = attempt(1)
  if best is None:
    raise DoesNotFit(f"does not fit on {topology} even at envs_per_learner={base}.")
  lo, hi = 0, None  # log2 factors: lo fits, hi does not
  while hi is None and base << (lo + 4) <= MAX_ENVS_PER_LEARNER:
    report = attempt(1 << (lo + 4))
    if report is None:
      hi = lo + 4
    else:
      lo, best = lo + 4, report
  hi = hi if hi is not None else lo + 1
  while hi - lo > 1:
    mid = (lo + hi) // 2
    report = attempt(1 << mid)
    if report is None:
      hi = mid
    else:
      lo, best = mid, report
  return base << lo, best


def _gib(n: float) -> str:
  return f"{n / 2**30:.3f} GiB"


def format_table(r: Report) -> str:
  rows = [
    ("target", f"{r.topology}: {r.chips} x {r.chip}"),
    ("learners", f"{r.learners} ({r.learners_per_chip} per chip), combine={r.combine}"),
    ("envs per chip", f"{r.envs_per_chip:,}"),
    ("plan", r.plan),
    ("agent steps per update", f"{r.env_steps_per_update:,} (slice)"),
    (
      "arguments / outputs / aliased",
      f"{_gib(r.argument_bytes)} / {_gib(r.output_bytes)} / {_gib(r.alias_bytes)}",
    ),
    ("temporaries / code", f"{_gib(r.temp_bytes)} / {_gib(r.code_bytes)}"),
    (
      "memory needed per chip",
      f"{_gib(r.needed_bytes)} of {_gib(r.chip_memory_bytes)} "
      f"({100 * r.needed_bytes / r.chip_memory_bytes:.1f}%)",
    ),
    ("FLOPs per update per chip", f"{r.flops_per_update:.4g}"),
    ("bytes per update per chip", f"{r.bytes_per_update:.4g}"),
    ("kernels per update per chip", f"{r.ops_per_update:,.0f}"),
    (
      "collectives per update per chip",
      ", ".join(f"{op} x{c:g} ({b:.3g} B)" for op, (c, b) in r.collectives.items()) or "none",
    ),
    ("compile time", f"{r.compile_s:.1f} s (updates_per_call={r.updates_per_call})"),
    (
      "time per update (bound)",
      ", ".join(f"{k} {v * 1e6:,.1f} us" for k, v in r.seconds_per_update.items())
      + f" -> {r.bound}"
      + (
        f" ({r.unknown_loops} loops of unknown trip count counted once)" if r.unknown_loops else ""
      ),
    ),
    (
      "roofline agent steps/s",
      f"{r.steps_per_s_per_chip:,.0f} per chip, {r.steps_per_s_slice:,.0f} for the slice",
    ),
  ]
  width = max(len(k) for k, _ in rows)
  lines = [f"galax.aot.compile {r.config_name} (compiler estimates, not measurements)"]
  lines += [f"  {k:<{width}}  {v}" for k, v in rows]
  return "\n".join(lines)


def main(argv) -> None:
  if len(argv) > 1:
    cli.fail(f"unexpected arguments: {argv[1:]}")
  f = flags.FLAGS
  if f.config is None:
    cli.fail("--config is required (a file, or a name in configs/).")
  name = os.path.splitext(os.path.basename(f["config"].config_filename))[0]
  try:
    if f.find_max_envs:
      envs, r = find_max_envs(name, f.config, f.topology, f.learners_per_chip)
      print(
        f"largest envs_per_learner that fits (powers of two times "
        f"{f.config.envs_per_learner}): {envs}"
      )
    else:
      r = build(name, f.config, f.topology, f.learners_per_chip)
  except (ValueError, FileNotFoundError) as e:
    cli.fail(str(e))
  print(json.dumps(dataclasses.asdict(r), indent=1) if f.json else format_table(r))


def _define_flags() -> None:
  config_flags.DEFINE_config_file(
    "config", None, "A config file, or a name in configs/.", lock_config=False
  )
  flags.DEFINE_string(
    "topology", None, "TPU slice (v5e:2x2, v5p:4x4x4, v6e:16x16) or GPUs (h100:8, a100:8, h200:16)."
  )
  flags.DEFINE_integer("learners_per_chip", 1, "Learners on every chip.")
  flags.DEFINE_bool("json", False, "Print the figures as JSON.")
  flags.DEFINE_bool(
    "find_max_envs",
    False,
    "Search the largest envs_per_learner (the "
    "config's times a power of two) that fits, and report it.",
  )
  flags.mark_flags_as_required(["config", "topology"])


def run() -> None:
  """The command (`python -m galax.aot`)."""
  sys.argv = cli.prepare_argv(sys.argv, "")
  _define_flags()
  cli.answer_help(sys.argv, sys.modules[__name__])
  app.run(main, flags_parser=cli.parse_flags)


if __name__ == "__main__":
  run()
