"""The algorithms: each module builds an `Algorithm` (init + jitted step) from a config
and describes itself with `AlgorithmSpec`s (galax/framework/spec.py) in its `SPECS`.

Adding an algorithm: its module (a `make_*` builder and `SPECS`) and its name in
`galax.algorithms.registry.MODULES`.

The registry imports the algorithm modules when first asked (`specs()`).
"""

from __future__ import annotations

from typing import Any, Sequence

from ml_collections import ConfigDict

# `register` and `AlgorithmSpec`: for an algorithm defined outside galax (docs/architecture.md).
from galax.algorithms.registry import register, spec_for, specs  # noqa: F401
from galax.framework.algorithm import Algorithm
from galax.framework.settings import RunSettings
from galax.framework.spec import AlgorithmSpec  # noqa: F401


def make_algorithm(config: ConfigDict, devices: Sequence[Any] | None = None) -> Algorithm:
  """Builds the algorithm named by `config.algorithm` for `devices` (jax devices; default
  `jax.devices()`; `galax.aot.compile` passes a TPU or GPU target's compile-only devices):
  the config is read here, once (`RunSettings`, its algorithm's own section included),
  and the builder takes the settings."""
  spec = spec_for(config.algorithm)
  return spec.build(RunSettings.from_config(config, spec), devices)
