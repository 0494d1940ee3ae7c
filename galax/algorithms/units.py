"""Learner work as a fixed sequence of "units" (PPO's minibatch steps, HTS-A2C's time steps).

`begin` prepares a carry, `unit(carry, u)` runs unit u (0 <= u < num_units, a Python int or
a traced int32), `finish(carry)` returns (params, opt_state, metrics). PPO runs the units
after its rollout; HTS-RL spreads them over the next segment's env steps.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Protocol

import jax
import jax.numpy as jnp

from galax.core.types import Metrics, OptState, ParamsBlock


class UnitLearner(Protocol):
  """A learner whose work is `num_units` units over a carry (see the module docstring)."""

  num_units: int

  def unit(self, carry: NamedTuple, u: int | jax.Array) -> NamedTuple:
    """Unit u applied to the carry (a NamedTuple of the learner's)."""

  def finish(self, carry: NamedTuple) -> tuple[ParamsBlock, OptState, Metrics]:
    """(params, opt_state, metrics) from the carry after the last unit."""


def run_units(unit: Callable[[NamedTuple, int | jax.Array], NamedTuple], carry: NamedTuple,
              first: int | jax.Array, count: int, unroll: bool) -> NamedTuple:
  """Units first .. first + count - 1 in order (`unit(carry, u)`; `first` an int or a traced
  int32): a Python loop (unroll) or a `lax.scan` over their ids."""
  if unroll or count <= 1:
    for i in range(count):
      carry = unit(carry, first + i)
    return carry
  ids = first + jnp.arange(count, dtype=jnp.int32)
  return jax.lax.scan(lambda c, u: (unit(c, u), None), carry, ids)[0]

