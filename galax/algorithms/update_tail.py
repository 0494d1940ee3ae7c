"""The tail of every algorithm's update, in one place: `finish_update`."""

from __future__ import annotations

import jax

from galax.envs import EnvState
from galax.learner_state import LearnerState
from galax.parallel.combine import Combiner
from galax.types import Metrics, OptState, ParamsBlock, PyTree

_KEEP = object()  # `finish_update`: the algorithm's own state unchanged


def finish_update(state: LearnerState, combiner: Combiner | None, *, params: ParamsBlock,
                  opt_state: OptState, env_state: EnvState, action_keys: jax.Array,
                  metrics: Metrics, extra: PyTree = _KEEP
                  ) -> tuple[LearnerState, Metrics]:
  """The combiner's step after the optimizer (`Combiner.after_step`: GALA's gossip, from
  `state.params`, the parameters before the step, to `params`, those after it), its metrics
  merged under the combiner's name, the new state with the update counted. `extra`: the
  algorithm's new own state (unchanged if left out). Without a combiner (A3C) `params` are
  kept as they are."""
  combiner_state = state.combiner
  if combiner is not None:
    params, combiner_state, combine_metrics = combiner.after_step(state.params, params,
                                                                  state.combiner)
    if combine_metrics:
      metrics = dict(metrics, **{combiner.name: combine_metrics})
  new_state = state.replace(
      params=params, opt_state=opt_state, env_state=env_state, action_keys=action_keys,
      update_count=state.update_count + 1, combiner=combiner_state,
      extra=state.extra if extra is _KEEP else extra)
  return new_state, metrics
