"""galax: distributed actor-critic RL (PAAC/A2C, all-reduce A2C, GALA, HTS-RL, BA3C, A3C,
IMPALA) in JAX on envpool and gymnax.

The public API, imported on first use (so that `import galax` stays light, without jax):

  config = galax.load_config("pong_fast", envs_per_learner=64)  # configs/<name>.py + overrides
  algorithm = galax.make_algorithm(config)     # init() and the jitted step (updates per call)
  result = galax.train(config, workdir="runs/x")   # the loop the `galax` command runs
  policy_fn, config = galax.load_policy("runs/x")  # a run's policy: policy_fn(obs) -> actions
  params = jax.tree.map(lambda x: x[0], result.state.params)  # learner 0's parameters
  returns = galax.evaluate_params(config, params, episodes=10)  # returns on fresh eval envs

Evaluating from Python, with an example: docs/evaluation.md. The folders, by concern:
docs/architecture.md.
"""

import importlib

from galax.runtime import requirements as _requirements

_requirements.check()  # Python >= 3.12 and jax 0.11.x: else one line naming what to install

__version__ = "0.1.0"

_PUBLIC = {
  "load_config": ("galax.config", "load"),
  "make_algorithm": ("galax.algorithms", "make_algorithm"),
  "train": ("galax.training.loop", "train"),
  "load_policy": ("galax.evaluate.cli", "load_policy"),
  "evaluate_params": ("galax.evaluate.evaluator", "evaluate_params"),
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
  if name in _PUBLIC:
    module, attribute = _PUBLIC[name]
    return getattr(importlib.import_module(module), attribute)
  raise AttributeError(f"module 'galax' has no attribute {name!r}")
