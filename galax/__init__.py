"""galax: distributed actor-critic RL (PAAC/A2C, all-reduce A2C, GALA, HTS-RL, BA3C, A3C,
IMPALA) in JAX on envpool and gymnax.

The public API:

  config = galax.load_config("pong_fast", envs_per_learner=64)  # configs/<name>.py + overrides
  algorithm = galax.make_algorithm(config)     # init() and the jitted step (updates per call)
  result = galax.train(config, workdir="runs/x")   # the loop the `galax` command runs
  policy_fn, config = galax.load_policy("runs/x")  # a run's policy: policy_fn(obs) -> actions
  params = jax.tree.map(lambda x: x[0], result.state.params)  # learner 0's parameters
  returns = galax.evaluate_params(config, params, episodes=10)  # returns on fresh eval envs

Evaluating from Python, with an example: docs/evaluation.md. The folders, by concern:
docs/architecture.md.

Importing galax imports jax (through `jax_quiet`, first, so that plugins for chips this
machine lacks print nothing): every galax command and every use of the API needs it, so a
JAX-free `import galax` bought nothing but a bare import (docs/architecture.md).
"""

from galax.runtime import requirements as _requirements

_requirements.check()  # Python >= 3.12 and jax 0.11.x: else one line naming what to install

from galax.runtime import jax_quiet as _jax_quiet  # noqa: E402

_jax_quiet.import_jax()

from galax.config import load as load_config  # noqa: E402
from galax.config import make_algorithm  # noqa: E402
from galax.config.cli import python_facing as _python_facing  # noqa: E402
from galax.evaluate.cli import load_policy  # noqa: E402
from galax.evaluate.evaluator import evaluate_params  # noqa: E402
from galax.training import loop as _loop  # noqa: E402

# From Python a refusal names train's arguments: "continue it with resume=True", not --resume.
train = _python_facing(_loop.train)

__version__ = "0.1.0"
__all__ = ["evaluate_params", "load_config", "load_policy", "make_algorithm", "train"]
