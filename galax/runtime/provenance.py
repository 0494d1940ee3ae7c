"""The galax commit a run ran at, and the machine, for its files (result.json,
sittings.json) and results."""

from __future__ import annotations

import os
import platform
import subprocess

import jax
import jaxlib

from galax.core.types import JsonDict


def git_info() -> JsonDict:
  """Commit and dirtiness of the galax source tree (None where it is not a git checkout)."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  try:
    commit = subprocess.run(
      ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()
    dirty = bool(
      subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
      ).stdout.strip()
    )
    return dict(commit=commit, dirty=dirty)
  except (OSError, subprocess.SubprocessError):
    return dict(commit=None, dirty=None)


# The CPU features XLA:CPU compiles for that change a run's floats (tests/algorithms'
# goldens differ in the last bits between AVX-512 and AVX2).
ISA_FLAGS = ("avx512f", "avx2", "fma")


def cpu_info() -> JsonDict:
  """The host CPU's model name, core count and which of ISA_FLAGS it has (Linux's
  /proc/cpuinfo; the model from `platform` and no flags elsewhere)."""
  names, flags = [], set()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        key, _, value = line.partition(":")
        if key.strip() == "model name":
          names.append(value.strip())
        elif key.strip() == "flags" and not flags:
          flags = set(value.split())
  except OSError:
    pass
  model = names[0] if names else platform.processor() or platform.machine()
  return dict(
    cpu=model, cores=len(names) or os.cpu_count(), isa=[f for f in ISA_FLAGS if f in flags]
  )


def machine() -> JsonDict:
  """What a sitting ran on, so that two runs of one seed can be read as the same machine
  and libraries (bit for bit) or not: the CPU, the jax backend and the jax version."""
  device = jax.devices()[0]
  backend = f"{device.platform} ({device.device_kind}) x {jax.device_count()}"
  return dict(cpu_info(), backend=backend, jax=jax.__version__, jaxlib=jaxlib.__version__)
