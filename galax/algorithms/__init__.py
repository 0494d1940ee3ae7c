"""The algorithms: each builds an `Algorithm` (init + jitted step) from a config."""

from __future__ import annotations

from typing import Sequence

import jax
from ml_collections import ConfigDict

from galax.algorithms.common import Algorithm


def make_algorithm(config: ConfigDict, devices: Sequence[jax.Device] | None = None
                   ) -> Algorithm:
  """Builds the algorithm named by `config.algorithm` for `devices` (default
  `jax.devices()`; `galax.aot` passes a TPU or GPU target's compile-only devices)."""
  name = config.algorithm
  if name == "a2c":
    from galax.algorithms.a2c import make_a2c  # pylint: disable=g-import-not-at-top

    return make_a2c(config, devices)
  if name == "a3c":
    from galax.algorithms.a3c import make_a3c  # pylint: disable=g-import-not-at-top

    return make_a3c(config, devices)
  if name == "impala":
    from galax.algorithms.impala import make_impala  # pylint: disable=g-import-not-at-top

    return make_impala(config, devices)
  if name == "ppo":
    from galax.algorithms.ppo import make_ppo  # pylint: disable=g-import-not-at-top

    return make_ppo(config, devices)
  if name in ("hts_a2c", "hts_ppo"):
    from galax.algorithms.hts import make_hts  # pylint: disable=g-import-not-at-top

    return make_hts(config, devices)
  raise ValueError(f"Unknown algorithm {name!r}.")
