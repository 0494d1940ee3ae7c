"""The algorithms: each module builds an `Algorithm` (init + jitted step) from a config
and describes itself with `AlgorithmSpec`s (galax/algorithm_spec.py) in its `SPECS`.

Adding an algorithm: its module (a `make_*` builder and `SPECS`) and its name in
`galax.algorithm_registry.MODULES`.
"""

from __future__ import annotations

from typing import Sequence

import jax
from ml_collections import ConfigDict

from galax.algorithm_registry import register, spec_for, specs  # noqa: F401
from galax.algorithm_spec import AlgorithmSpec  # noqa: F401
from galax.algorithms.algorithm import Algorithm


def make_algorithm(config: ConfigDict, devices: Sequence[jax.Device] | None = None
                   ) -> Algorithm:
  """Builds the algorithm named by `config.algorithm` for `devices` (default
  `jax.devices()`; `galax.aot` passes a TPU or GPU target's compile-only devices)."""
  return spec_for(config.algorithm).build(config, devices)
