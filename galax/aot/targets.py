"""Accelerator targets to compile for without one: TPU slices and NVIDIA GPU nodes.

`target_devices("v5p:4x4x4")` returns compile-only devices of a TPU slice (libtpu,
`pip install -e '.[tpu]'`); `target_devices("h100:8")` those of an 8-GPU node (the CUDA
PJRT plugin, `pip install -e '.[gpu-aot]'`, under `jax_platforms=cpu`, which
`galax.aot.compile` sets: `register_cuda_compiler`). Nothing is
allocated and no accelerator is needed: XLA compiles for the target's chip.

CHIPS holds each chip's published peak figures, the roofline's inputs (`galax.aot.compile`):
* TPU peaks are bf16 matrix-unit FLOP/s: XLA's default precision runs float32 matmuls
  as bf16 passes on TPU.
* GPU peaks are dense TF32 tensor-core FLOP/s (no sparsity): XLA's default for float32
  dots on Ampere and later.
Memory is the chip's HBM; `interconnect` the per-chip ICI or NVLink bandwidth, one
direction. `kernel_s` is an assumed cost per executed kernel (launch and loop overhead,
1 us everywhere: a round number, not a measurement): a program of many small kernels,
such as a MinAtar update with few envs per chip, is bound by it, not by FLOPs or bytes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import re

from jax._src import config as jax_config
from jax._src import xla_bridge
from jax.experimental import topologies

from galax.runtime import jax_quiet

GiB = 1024**3


@dataclasses.dataclass(frozen=True)
class Chip:
  name: str
  platform: str  # "tpu" | "gpu"
  memory_bytes: int
  peak_flops: float  # per chip, see module docstring
  hbm_bytes_per_s: float
  interconnect_bytes_per_s: float
  kernel_s: float = 1e-6
  # GPU only: the numbers XLA's GPU compiler needs to target the chip (CUDA device
  # properties as NVIDIA publishes them).
  sm_count: int = 0
  compute_capability: tuple[int, int] = (0, 0)
  l2_bytes: int = 0
  clock_ghz: float = 0.0
  shared_memory_per_sm: int = 0


CHIPS = {
  # Google Cloud TPU system architecture pages (per chip).
  "v4": Chip("TPU v4", "tpu", 32 * GiB, 275e12, 1.2e12, 300e9),
  "v5e": Chip("TPU v5e", "tpu", 16 * GiB, 197e12, 819e9, 200e9),
  "v5p": Chip("TPU v5p", "tpu", 95 * GiB, 459e12, 2.765e12, 600e9),
  "v6e": Chip("TPU v6e", "tpu", 32 * GiB, 918e12, 1.64e12, 400e9),
  # NVIDIA data sheets (SXM parts).
  "a100": Chip(
    "NVIDIA A100-SXM4-80GB",
    "gpu",
    80 * GiB,
    156e12,
    2.039e12,
    300e9,
    sm_count=108,
    compute_capability=(8, 0),
    l2_bytes=40 * 1024**2,
    clock_ghz=1.41,
    shared_memory_per_sm=167936,
  ),
  "h100": Chip(
    "NVIDIA H100 80GB HBM3",
    "gpu",
    80 * GiB,
    494.5e12,
    3.35e12,
    450e9,
    sm_count=132,
    compute_capability=(9, 0),
    l2_bytes=50 * 1024**2,
    clock_ghz=1.98,
    shared_memory_per_sm=233472,
  ),
  "h200": Chip(
    "NVIDIA H200",
    "gpu",
    141 * 10**9,
    494.5e12,
    4.8e12,
    450e9,
    sm_count=132,
    compute_capability=(9, 0),
    l2_bytes=50 * 1024**2,
    clock_ghz=1.98,
    shared_memory_per_sm=233472,
  ),
}
GPUS_PER_NODE = 8


@dataclasses.dataclass(frozen=True)
class Target:
  topology: str  # as given: "v5p:4x4x4", "h100:8"
  chip: Chip
  devices: tuple  # compile-only jax devices

  @property
  def num_chips(self) -> int:
    return len(self.devices)


def parse_topology(topology: str) -> tuple[str, tuple[int, ...]]:
  """'v5p:4x4x4' -> ('v5p', (4, 4, 4)); 'h100:8' -> ('h100', (8,))."""
  m = re.fullmatch(r"([a-z0-9]+):(\d+(?:x\d+)*)", topology.strip().lower())
  if not m or m.group(1) not in CHIPS:
    raise ValueError(
      f"--topology={topology!r}: expected <chip>:<shape>, e.g. v5e:2x2, "
      f"v5p:4x4x4 or h100:8, with chip one of {sorted(CHIPS)}."
    )
  shape = tuple(int(d) for d in m.group(2).split("x"))
  if min(shape) < 1:
    raise ValueError(f"--topology={topology!r}: every dimension must be >= 1.")
  return m.group(1), shape


def gpu_target_config(chip: Chip) -> str:
  """The GpuTargetConfigProto text XLA's GPU compiler targets, from `chip`'s figures
  and CUDA's per-architecture limits (the same on every chip here)."""
  major, minor = chip.compute_capability
  return f"""gpu_device_info {{
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_block_optin: {chip.shared_memory_per_sm - 1024}
  shared_memory_per_core: {chip.shared_memory_per_sm}
  threads_per_core_limit: 2048
  core_count: {chip.sm_count}
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  thread_dim_limit_x: 1024
  thread_dim_limit_y: 1024
  thread_dim_limit_z: 64
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
  memory_bandwidth: {int(chip.hbm_bytes_per_s)}
  l2_cache_size: {chip.l2_bytes}
  clock_rate_ghz: {chip.clock_ghz}
  device_memory_size: {chip.memory_bytes}
  cuda_compute_capability {{ major: {major} minor: {minor} }}
  name: "{chip.name}"
  runtime_version: "12.8.0"
  dnn_version: "9.8.0"
}}
platform_name: "CUDA"
dnn_version_info {{ major: 9 minor: 8 patch: 0 }}
device_description_str: "{chip.name}"
"""


def target_devices(topology: str) -> Target:
  """Compile-only devices for `topology`; one clear ValueError if its extra is missing."""
  name, shape = parse_topology(topology)
  chip = CHIPS[name]
  missing = compiler_missing(chip.platform)
  if missing:
    raise ValueError(f"cannot compile for {topology!r}: {missing}")
  if chip.platform == "tpu":
    try:
      desc = topologies.get_topology_desc(
        topology_name=f"{name}:{'x'.join(map(str, shape))}", platform="tpu"
      )
    except Exception as e:
      raise ValueError(f"cannot describe TPU topology {topology!r}: {_first_line(e)}") from e
    return Target(topology, chip, tuple(desc.devices))
  if len(shape) != 1:
    raise ValueError(f"--topology={topology!r}: GPU targets are <chip>:<number of GPUs>.")
  count = shape[0]
  per_node = min(count, GPUS_PER_NODE)
  if count % per_node:
    raise ValueError(
      f"--topology={topology!r}: more than {GPUS_PER_NODE} GPUs must be "
      f"whole nodes of {GPUS_PER_NODE}."
    )
  register_cuda_compiler()
  try:
    desc = topologies.get_topology_desc(
      platform="cuda",
      target_config=gpu_target_config(chip),
      topology=f"1x{count // per_node}x{per_node}",
    )
  except Exception as e:
    raise ValueError(f"cannot describe GPU topology {topology!r}: {_first_line(e)}") from e
  return Target(topology, chip, tuple(desc.devices))


def register_cuda_compiler() -> None:
  """Registers the CUDA plugin (the XLA:GPU compiler) with JAX if it is not, as JAX would
  have under JAX_PLATFORMS=cpu; one clear ValueError if it cannot be.

  JAX initialises its plugins once, at `import galax` (galax.runtime.jax_quiet) or at the
  first backend use. The CUDA plugin's `initialize()` (jax 0.10.2 and 0.11.2 alike) checks
  the CUDA runtime libraries unless `jax_platforms` leaves CUDA out; on a machine without
  them (no GPU, the gpu-aot extra) the check fails, the plugin stays unregistered and
  `get_topology_desc(platform="cuda")` says "topology not implemented for cuda". Those
  libraries are needed to run on a GPU, not to compile for one. `python -m galax.aot` can
  set `jax_platforms` to cpu only after `import galax` (its module is inside the package),
  so the plugin is initialised again here, under that setting, and skips the check itself.
  """
  discover = getattr(xla_bridge, "_discover_and_register_pjrt_plugins", None)
  if discover is not None:
    discover()  # once per process: where a driver is, galax has not done it yet
  factories = getattr(xla_bridge, "_topology_factories", None)
  if not isinstance(factories, dict) or "cuda" in factories:
    return  # registered (or a JAX whose internals differ: its own error will say)
  platforms = [
    alias
    for name in (jax_config.jax_platforms.value or "").split(",")
    if name.strip()
    for alias in xla_bridge.expand_platform_alias(name.strip())
  ]
  if not platforms or "cuda" in platforms:
    raise ValueError(
      "the CUDA compiler (jax-cuda12-plugin) did not load: without a GPU it needs "
      "JAX_PLATFORMS=cpu, set before JAX starts (python -m galax.aot sets it)."
    )
  try:
    with _without_no_driver_lines():
      importlib.import_module("jax_plugins.xla_cuda12").initialize()
  except Exception as e:
    raise ValueError(f"the CUDA compiler (jax-cuda12-plugin) did not load: {_first_line(e)}") from e
  registration = getattr(xla_bridge, "_backend_factories", {}).get("cuda")
  c_api = getattr(registration, "c_api", None)
  if c_api is not None:  # what JAX's plugin discovery does after initialize()
    for callback in list(getattr(xla_bridge, "_plugin_callbacks", ())):
      callback(c_api=c_api)


def _without_no_driver_lines():
  """Loading the CUDA plugin's library on a machine without an NVIDIA driver prints
  "Could not find cuda drivers" lines (C++, on file descriptor 2): they are held back, as
  at `import galax`; with a driver, a plugin's lines are news."""
  if jax_quiet.has_nvidia_driver():
    return contextlib.nullcontext()
  return jax_quiet.stderr_without(jax_quiet.NO_DRIVER_LINES)


def _installed(module: str) -> bool:
  try:
    return importlib.util.find_spec(module) is not None
  except ModuleNotFoundError:  # its parent package (jax_plugins) is not installed either
    return False


def compiler_missing(platform: str) -> str:
  """Why this machine cannot compile for `platform` ('' if it can): its extra's package."""
  if platform == "tpu" and not _installed("libtpu"):
    return "no TPU compiler (libtpu); pip install -e '.[tpu]'."
  if platform == "gpu" and not _installed("jax_plugins.xla_cuda12"):
    return "no CUDA compiler (jax-cuda12-plugin); pip install -e '.[gpu-aot]'."
  return ""


def _first_line(e: BaseException) -> str:
  return (str(e).strip().splitlines() or [type(e).__name__])[0][:200]


def describe(target: Target) -> str:
  chip = target.chip
  return (
    f"{target.topology}: {target.num_chips} x {chip.name}, "
    f"{chip.memory_bytes / GiB:.0f} GiB and {chip.peak_flops / 1e12:.0f} TFLOP/s "
    f"({'bf16' if chip.platform == 'tpu' else 'TF32'}) per chip"
  )
