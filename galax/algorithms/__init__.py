"""The algorithms: each module builds an `Algorithm` (init + jitted step) from a run's
settings (`galax.config.make_algorithm` reads the config) and describes itself with
`AlgorithmSpec`s (galax/framework/spec.py) in its `SPECS`.

Adding an algorithm: its module (a `make_*` builder and `SPECS`) and its name in
`galax.algorithms.registry.MODULES`.

The registry imports the algorithm modules when first asked (`specs()`).
"""

from __future__ import annotations

# `register` and `AlgorithmSpec`: for an algorithm defined outside galax (docs/architecture.md).
from galax.algorithms.registry import register, spec_for, specs  # noqa: F401
from galax.framework.algorithm import Algorithm  # noqa: F401
from galax.framework.spec import AlgorithmSpec  # noqa: F401
