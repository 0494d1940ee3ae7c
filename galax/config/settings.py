"""A run's typed config as the settings its algorithm is built from (`run_settings`), and
the algorithm itself (`make_algorithm`).

The sections pass through as they are; `pick` fills a settings type's fields from the
config's fields of the same names, so only what is composed (how learners combine, the
targets, the plan's choices, the env with the evaluation's limits) is written out.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence, TypeVar

import galax.config.typed as typed
from galax.algorithms.registry import spec_for
from galax.core.returns import ReturnSettings
from galax.envs.backend import EnvSettings
from galax.framework.algorithm import Algorithm
from galax.framework.settings import PlanChoices, RunSettings
from galax.framework.spec import AlgorithmSpec
from galax.parallel.combine import CombineSettings

T = TypeVar("T")


def pick(cls: type[T], source: Any, **given: Any) -> T:
  """A `cls` whose fields are `given`, or else `source`'s fields of the same names."""
  names = [f.name for f in dataclasses.fields(cls) if f.init]
  return cls(**{name: given[name] if name in given else getattr(source, name) for name in names})


def run_settings(config: Any, spec: AlgorithmSpec | None = None) -> RunSettings:
  """The settings of a run's config (typed, or a ConfigDict read once by
  `typed.from_data`); with its algorithm's `spec`, its own settings too (`own`; one
  ValueError line for a value the algorithm cannot run). Without, `own` is None: for
  readers of the shared fields only."""
  c = typed.from_data(config)
  return pick(
    RunSettings,
    c,
    combine=pick(CombineSettings, c.gossip, kind=c.combine),
    env=pick(
      EnvSettings,
      c.env,
      eval_noop_max=c.eval.noop_max,
      eval_max_episode_steps=c.eval.max_episode_steps,
    ),
    returns=ReturnSettings(c.gamma, c.returns, c.gae_lambda),
    plan=pick(
      PlanChoices,
      c,
      conv_impl=c.network.conv_impl,
      microbatches=c.hts.microbatches,
      flattens=c.network.name == "mlp",
    ),
    own=None if spec is None else spec.own(c),
  )


def make_algorithm(config: Any, devices: Sequence[Any] | None = None) -> Algorithm:
  """Builds the algorithm named by `config.algorithm` (a typed config or a ConfigDict) for
  `devices` (jax devices; default `jax.devices()`; `galax.aot.compile` passes a TPU or GPU
  target's compile-only devices): the config is read here, once (`RunSettings`, its
  algorithm's own settings included), and the builder takes the settings."""
  spec = spec_for(config.algorithm)
  return spec.build(run_settings(config, spec), devices)
