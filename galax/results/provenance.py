"""Where a run ran, for its results file (`galax.results.seed_runs.run_record`): the devices.
Its galax commit is the one its training read as it began (`TrainResult.git`)."""

from __future__ import annotations

import platform

import jax

from galax.core.types import JsonDict


def device_info() -> JsonDict:
  devices = jax.devices()
  return dict(
    platform=devices[0].platform,
    kind=devices[0].device_kind,
    count=len(devices),
    processes=jax.process_count(),
    host=platform.node(),
  )
