"""Shared test helpers: small CartPole configs, a few jitted calls of an algorithm, and the
primitives of a traced program."""

from typing import Any

import jax
import jax.extend

from galax.config import base_config, make_algorithm
from galax.config import load as load_config
from galax.parallel.layout import to_host


def cartpole_config(algorithm: str, **overrides: Any):
  """configs/cartpole_a2c.py with `algorithm`, 4 envs per learner, then `overrides`."""
  config = load_config("cartpole_a2c")
  config.algorithm = algorithm
  config.envs_per_learner = 4
  config.update(overrides)
  return config


def small_mlp_config(
  env_id: str, hidden: tuple[int, ...], envs_per_learner: int, updates_per_call: int
):
  """The schema's defaults with a small MLP on `env_id`, t_max 4, PPO 2 epochs x 2
  minibatches, Adam 1e-2 (unvalidated; envpool ids get one env thread)."""
  c = base_config()
  c.env.id = env_id
  if not env_id.startswith("gymnax/"):
    c.env.num_threads = 1
  c.network.name = "mlp"
  c.network.mlp_hidden = hidden
  c.envs_per_learner = envs_per_learner
  c.t_max = 4
  c.ppo.epochs = 2
  c.ppo.minibatches = 2
  c.optimizer.name = "adam"
  c.optimizer.learning_rate = 1e-2
  c.updates_per_call = updates_per_call
  return c


def run_algorithm(config, calls: int = 1) -> tuple[Any, Any]:
  """Host copies of the state after `calls` jitted calls and of the last call's metrics
  (None when calls = 0: the initial state)."""
  algorithm = make_algorithm(config)
  try:
    state, metrics = algorithm.init(), None
    for _ in range(calls):
      state, metrics = algorithm.step(state)
    return to_host(state), to_host(metrics)
  finally:
    algorithm.env.close()


def jaxpr_primitives(jaxpr) -> list[str]:
  """The names of every primitive in `jaxpr`, its sub-jaxprs included."""
  names = []
  for eqn in jaxpr.eqns:
    names.append(eqn.primitive.name)
    for sub in jax.extend.core.jaxprs_in_params(eqn.params):
      names.extend(jaxpr_primitives(sub))
  return names
