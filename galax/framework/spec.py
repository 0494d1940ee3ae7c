"""What the rest of galax may know about an algorithm: its `AlgorithmSpec`.

Each algorithm module defines its spec(s) next to its code; galax/algorithms/registry.py
finds them by name. Config checks, the execution plan's rules and the run header ask the
spec, so no module outside an algorithm's own compares `config.algorithm` with a name.

A spec holds no jax code, and this module is the type only: it imports no algorithm and
no registry, so the algorithms that import it form no cycle with the registry.
"""

from __future__ import annotations

import dataclasses
import types
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Sequence, TypeVar

if TYPE_CHECKING:
  from galax.framework.settings import RunSettings

# Options only some algorithms act on; a spec lists those it supports in `features`.
LEARNER_MAP = "learner_map"  # config.learner_map other than vmap (A2C-family learners)
GRAD_SIMILARITY = "grad_similarity"  # config.grad_similarity (learners' gradient cosines)
STRAGGLERS = "stragglers"  # config.stragglers.num_kept (all-reduce A2C)
SHARDED_STATE = "sharded_state"  # config.optimizer.sharded_state (all-reduce learners)
COMBINE = "combine"  # config.combine other than 'independent'
MICROBATCHES = "microbatches"  # config.hts.microbatches (HTS segments in pieces)
ASYNC_ENVS = "async_envs"  # config.env.batch_size (envpool's async recv; per-env targets)


# What an algorithm's `own` function takes: the run's typed config (galax/config/schema.py,
# a folder above this one, so not imported here).
RunConfig = Any
OwnT = TypeVar("OwnT")


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec(Generic[OwnT]):
  """One algorithm as the rest of galax sees it; `OwnT`: the type of its own settings.

  name: `config.algorithm`'s value.
  build: `build(settings, devices)` -> `Algorithm`, from the run's `RunSettings[OwnT]`
    (galax/framework/settings.py), its own settings in `settings.own`.
  own: `own(config)` -> this algorithm's own settings (`settings.own`), from the run's typed
    config (its own sections, each a frozen dataclass beside its builder, as acme's config
    sits beside its builder), raising ValueError, one line, for a value it cannot run;
    None when it has none.
  sections: the config sections this algorithm owns, {name: the section's dataclass}
    (the run's config type adds every algorithm's; two specs may share a section).
  The functions below take the run's `RunSettings` (`settings.own` included):
  steps_per_env: env steps each env takes per update (t_max, HTS's alpha).
  chunked_batch: (size, samples per entry, what) of the axis a learner's gradient may be
    split along (`config.grad_chunks`): its envs and t_max for A2C, a PPO minibatch's
    samples and 1; size 1 when it is not chunked.
  features: the options of this module's constants that it acts on.
  segment_units: (learner units, env steps) per update of an algorithm whose updates are
    HTS segments, both of which `hts.microbatches` pieces divide (`galax.framework.plan`); None
    for the others.
  gradient_steps: the optimizer steps a learner takes per update (PPO's epochs x
    minibatches); many of them run with patch convolutions on CPU (`galax.framework.plan`).
  """

  name: str
  # (its RunSettings, devices) -> its `Algorithm` (galax/framework/algorithm.py imports this)
  build: Callable[[RunSettings[OwnT], Sequence[Any] | None], Any]
  own: Callable[[RunConfig], OwnT] = lambda config: None
  # The functions of a run's `RunSettings`:
  steps_per_env: Callable[[RunSettings[OwnT]], int] = lambda s: s.t_max
  chunked_batch: Callable[[RunSettings[OwnT]], tuple[int, int, str]] = lambda s: (
    s.envs_per_learner,
    s.t_max,
    "envs per learner",
  )
  features: frozenset[str] = frozenset({COMBINE})
  segment_units: Callable[[RunSettings[OwnT]], tuple[int, int]] | None = None
  gradient_steps: Callable[[RunSettings[OwnT]], int] = lambda s: 1
  sections: Mapping[str, type] = types.MappingProxyType({})

  def supports(self, feature: str) -> bool:
    return feature in self.features


def ppo_minibatch(steps: int, envs_per_learner: int, minibatches: int) -> tuple[int, int, str]:
  """A PPO minibatch (`config.ppo.minibatches` of them per update) as the chunked axis;
  rejects minibatch counts that do not divide the `steps` x envs_per_learner samples (PPO
  and HTS-PPO)."""
  samples = steps * envs_per_learner
  if samples % minibatches:
    raise ValueError(
      f"config.ppo.minibatches={minibatches} must divide the {samples} "
      f"samples per update ({steps} steps x envs_per_learner)."
    )
  return samples // minibatches, 1, "samples per PPO minibatch"


# One-line checks of config values, for `galax.config.validate` and the algorithms' own
# settings (`AlgorithmSpec.own`), so that every bad value is rejected in the same words.


def check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
  """One line if `config.<name>` is not among `allowed`."""
  if value not in allowed:
    raise ValueError(f"config.{name}={value!r} is not one of {list(allowed)}.")


def check_positive(name: str, value: Any, or_zero: bool = False) -> None:
  """One line if `config.<name>`'s `value` is not > 0 (`or_zero`: is < 0)."""
  if value < 0 or (value == 0 and not or_zero):
    raise ValueError(f"config.{name} must be {'>=' if or_zero else '>'} 0, got {value!r}.")
