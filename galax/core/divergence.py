"""Divergence detection: finiteness flags computed inside the jitted step, read on the host.

Every update adds `metrics["finite"]`: for each floating metric (losses, norms, ...) and
each parameter tensor, whether all of its values are finite,

    finite_q = all_i isfinite(q_i),

a reduction the update computes anyway as part of its program (no host sync per update).
The training loop fetches the flags with the other metrics once per call and stops at
the first update with a non-finite quantity, before anything saves that state.
"""

from __future__ import annotations

from typing import Callable, Mapping, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from galax.core.types import Metrics, ParamsBlock, PyTree

State = TypeVar("State")  # the training state (`galax.framework.update.LearnerState`)

FLAGS_KEY = "finite"
# Metrics that are not computed from the parameters (env statistics).
_UNCHECKED = ("episodes",)


class Diverged(RuntimeError):
  """Training produced a non-finite loss, metric or parameter (nothing of it was saved)."""


def _named_leaves(tree: PyTree, prefix: str) -> list[tuple[str, jax.Array]]:
  leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
  return [
    (prefix + "/".join(str(getattr(k, "key", getattr(k, "name", k))) for k in path), x)
    for path, x in leaves
  ]


def finite_flags(metrics: Metrics, params: ParamsBlock, learners: int) -> dict[str, jax.Array]:
  """{"<order>:<name>": bool [learners]} per floating metric and parameter tensor.

  Keys carry their order (metrics in their order, then parameters) because pytrees sort
  dict keys; `first_nonfinite` reads it back.
  """
  quantities = [
    leaf
    for key, value in metrics.items()
    if key not in _UNCHECKED
    for leaf in _named_leaves({key: value}, "")
  ]  # in the metrics' own order
  quantities += _named_leaves(params, "params/")
  flags = {}
  for name, x in quantities:
    if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact):
      flags[f"{len(flags):04d}:{name}"] = jnp.broadcast_to(jnp.all(jnp.isfinite(x)), (learners,))
  return flags


def with_finite_flags(
  update_block: Callable[[State], tuple[State, Metrics]],
) -> Callable[[State], tuple[State, Metrics]]:
  """`update_block` whose metrics also hold `FLAGS_KEY`: flags over its metrics and params.

  The flags have the learner axis first (like every metric), from the state's params.
  """

  def update(state: State) -> tuple[State, Metrics]:
    state, metrics = update_block(state)
    learners = jax.tree.leaves(state.params)[0].shape[0]
    return state, {**metrics, FLAGS_KEY: finite_flags(metrics, state.params, learners)}

  return update


def first_nonfinite(flags: Mapping[str, np.ndarray]) -> tuple[int, str, int] | None:
  """(update index in the call, first non-finite quantity, how many) or None if all finite.

  `flags`: host arrays [updates, learners] keyed as `finite_flags` makes them.
  """
  names = sorted(flags)
  if not names:
    return None
  ok = np.stack(
    [np.asarray(flags[k]).reshape(np.shape(flags[k])[0], -1).all(-1) for k in names]
  )  # [quantities, updates]
  if ok.all():
    return None
  update = int(np.argmax(~ok.all(0)))
  bad = np.flatnonzero(~ok[:, update])
  return update, names[bad[0]].split(":", 1)[1], len(bad)


def report(
  flags: dict[str, np.ndarray],
  first_update: int,
  steps_per_update: int,
  last_good: Callable[[], str],
) -> str | None:
  """The one-line report of the first non-finite update in a call's flags, or None."""
  found = first_nonfinite(flags)
  if found is None:
    return None
  index, name, count = found
  update = first_update + index + 1
  more = f" (and {count - 1} more quantities)" if count > 1 else ""
  return (
    f"training diverged: update {update} (env step {update * steps_per_update}) produced "
    f"a non-finite {name}{more}; nothing from it was saved. Last good checkpoint: "
    f"{last_good()}."
  )
