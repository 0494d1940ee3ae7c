"""Where a run ran, for its results file (`galax.results.seed_runs.run_record`): the galax commit
and the devices."""

from __future__ import annotations

import platform

import jax

from galax.core.types import JsonDict
from galax.runtime.provenance import git_info  # noqa: F401  (seed_runs' records use it here)


def device_info() -> JsonDict:
  devices = jax.devices()
  return dict(
    platform=devices[0].platform,
    kind=devices[0].device_kind,
    count=len(devices),
    processes=jax.process_count(),
    host=platform.node(),
  )
