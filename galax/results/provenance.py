"""Where a run ran, for its results file (`galax.results.seed_runs.run_record`): the galax commit
and the devices."""

from __future__ import annotations

import os
import platform
import subprocess

from galax.core.types import JsonDict
from galax.runtime import jax_quiet

jax = jax_quiet.import_jax()  # without the CUDA plugin's lines on a machine with no GPU


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


def device_info() -> JsonDict:
  devices = jax.devices()
  return dict(
    platform=devices[0].platform,
    kind=devices[0].device_kind,
    count=len(devices),
    processes=jax.process_count(),
    host=platform.node(),
  )
