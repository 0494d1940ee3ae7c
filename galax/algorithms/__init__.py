"""The algorithms: each builds an `Algorithm` (init + jitted step) from a config."""

from __future__ import annotations

from ml_collections import ConfigDict

from galax.algorithms.common import Algorithm


def make_algorithm(config: ConfigDict) -> Algorithm:
  """Builds the algorithm named by `config.algorithm`."""
  name = config.algorithm
  if name == "a2c":
    from galax.algorithms.a2c import make_a2c  # pylint: disable=g-import-not-at-top

    return make_a2c(config)
  if name == "a3c":
    from galax.algorithms.a3c import make_a3c  # pylint: disable=g-import-not-at-top

    return make_a3c(config)
  if name == "impala":
    from galax.algorithms.impala import make_impala  # pylint: disable=g-import-not-at-top

    return make_impala(config)
  if name == "ppo":
    from galax.algorithms.ppo import make_ppo  # pylint: disable=g-import-not-at-top

    return make_ppo(config)
  if name in ("hts_a2c", "hts_ppo"):
    from galax.algorithms.hts import make_hts  # pylint: disable=g-import-not-at-top

    return make_hts(config)
  raise ValueError(f"Unknown algorithm {name!r}.")
