"""JAX without the noise of plugins for chips this machine lacks.

With galax's `gpu-aot` extra (the CUDA plugin, for compiling for GPUs elsewhere) installed
on a machine without an NVIDIA driver, `import jax` prints three `cudart_stub.cc ... Could
not find cuda drivers` lines and the first backend use logs a traceback ("Unable to load
CUDA"). galax's commands then could not answer bad input in one line. `import_jax` imports
JAX with those lines held back and filters that log record; on a machine with an NVIDIA
driver nothing is held back (a plugin failing there is news). Other output passes through.

With the `tpu` extra (libtpu, the TPU compiler for `python -m galax.aot`) installed on a
machine without a TPU, the first backend use loads libtpu to try a TPU backend, and libtpu
prints five lines ("could not determine TPU accelerator type", `E0000 ... INVALID_ARGUMENT:
... TPU_WORKER_HOSTNAMES`, a source location trace) before JAX falls back to the CPU.
`import_jax` makes JAX's TPU backend fail at once, without loading libtpu, where the
machine has no TPU chip (JAX's own PCI check), and JAX falls back as it would anyway;
unless `JAX_PLATFORMS` names `tpu` or `JAX_FORCE_TPU_INIT` is set. Compiling for a TPU
target (galax.aot) loads libtpu directly, not through that backend, and is unchanged.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import pkgutil
import re
import sys
import tempfile
from types import ModuleType
from typing import Iterator

NO_DRIVER_LINES = re.compile(
  r"cudart_stub\.cc.*Could not find cuda drivers|"
  r"All log messages before absl::InitializeLog\(\) is called are written to STDERR"
)
_NO_CHIP_ERRORS = (
  "Unable to load CUDA",
  "Error loading CUDA libraries",
  "could not find CUDA drivers",
  "No visible GPU devices",
)


def has_nvidia_driver() -> bool:
  return os.path.exists("/proc/driver/nvidia/version")


@contextlib.contextmanager
def stderr_without(pattern: re.Pattern) -> Iterator[None]:
  """Holds file descriptor 2 (C++ logs write there directly) in a temp file; re-emits its
  lines that do not match `pattern`."""
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as held:
    os.dup2(held.fileno(), 2)
    try:
      yield
    finally:
      sys.stderr.flush()
      os.dup2(saved, 2)
      os.close(saved)
      held.seek(0)
      lines = held.read().decode(errors="replace").splitlines(keepends=True)
      sys.stderr.write("".join(line for line in lines if not pattern.search(line)))
      sys.stderr.flush()


class _AbsentChipFilter(logging.Filter):
  """Drops JAX's log of a GPU plugin that cannot start because there is no GPU."""

  def filter(self, record: logging.LogRecord) -> bool:
    if not record.getMessage().startswith("Jax plugin configuration error"):
      return True
    error = record.exc_info[1] if record.exc_info else None
    chain = []
    while error is not None:
      chain.append(str(error))
      error = error.__cause__ or error.__context__
    return not any(marker in text for text in chain for marker in _NO_CHIP_ERRORS)


def _load_plugins() -> None:
  """What prints later otherwise: jaxlib's gpu_* modules load the plugin's kernels on first
  use, and the first backend use imports and initialises the plugins. Registering them is
  not starting a backend (jax.distributed.initialize may still follow)."""
  import jaxlib
  from jax._src import xla_bridge

  for module in pkgutil.iter_modules(jaxlib.__path__):
    if module.name.startswith("gpu_"):
      try:
        importlib.import_module(f"jaxlib.{module.name}")
      except ImportError:
        pass
  register = getattr(xla_bridge, "_discover_and_register_pjrt_plugins", None)
  if register is not None:
    register()


def _tpu_wanted() -> bool:
  """True where JAX's TPU backend should stay: the machine has a TPU chip, or the user
  asked for it (`JAX_PLATFORMS` names tpu, or `JAX_FORCE_TPU_INIT`)."""
  from jax._src import hardware_utils

  platforms = os.environ.get("JAX_PLATFORMS", "") or os.environ.get("JAX_PLATFORM_NAME", "")
  if "tpu" in platforms.lower().split(",") or "JAX_FORCE_TPU_INIT" in os.environ:
    return True
  try:
    return hardware_utils.num_available_tpu_chips_and_device_id()[0] > 0
  except OSError:
    return True  # cannot tell: leave JAX as it is


def _no_tpu_here():
  raise RuntimeError("no TPU chip on this machine (galax.runtime.jax_quiet)")


def _drop_absent_tpu() -> None:
  """Makes JAX's TPU backend fail at once, without loading libtpu, on a machine with no
  TPU (see the module docstring). The backend stays registered: JAX's lowering rules for
  the tpu platform need its name."""
  from jax._src import xla_bridge

  factories = getattr(xla_bridge, "_backend_factories", None)
  registration = factories.get("tpu") if isinstance(factories, dict) else None
  if registration is None or registration.factory is _no_tpu_here:
    return
  if not _tpu_wanted():
    registration.factory = _no_tpu_here


def import_jax() -> ModuleType:
  """`import jax`, quiet about plugins for absent chips (see the module docstring)."""
  if has_nvidia_driver():
    import jax

    _drop_absent_tpu()
    return jax
  if "jax" not in sys.modules:
    with stderr_without(NO_DRIVER_LINES):
      import jax

      _install_filter()  # the plugin's failing initialize() logs a traceback
      _load_plugins()
  _install_filter()
  _drop_absent_tpu()
  return sys.modules["jax"]


def _install_filter() -> None:
  bridge_log = logging.getLogger("jax._src.xla_bridge")
  if not any(isinstance(f, _AbsentChipFilter) for f in bridge_log.filters):
    bridge_log.addFilter(_AbsentChipFilter())
