"""Names for the values galax passes around, so that signatures say what a value is.

JAX state is mostly pytrees: nested dicts, tuples, NamedTuples and flax dataclasses with
array leaves. To a type checker the pytree aliases below are one type (`chex.ArrayTree`);
the name says which pytree a signature means. Gradients and updates have the structure of
their parameters and take the parameters' aliases. Shapes follow the learner axis
(`galax.parallel.layout`): [L, ...] a device's block of L learners, [n, ...] all n.

Other named types live with their code: `galax.core.networks.ApplyFn`,
`galax.core.rollout.PolicyFn`, `galax.envs.EnvState`, `galax.framework.update.LearnerState`,
`Envs` and `Optimizer`.
"""

from typing import Any

import chex
import optax

# A pytree with array leaves (or shape structs, e.g. from `jax.eval_shape`).
PyTree = chex.ArrayTree
# One network's parameters: its flax variables, {"params": {...}}.
Params = PyTree
# Parameters stacked on leading axes: a block of learners' [L, ...] (all: [n, ...]), or
# several policies' or versions' (evaluation's [P, ...], A3C's history [D, S + 1, ...]).
ParamsBlock = PyTree
# An optimizer's state: one learner's, or a block's stacked on the learner axis [L, ...].
OptState = optax.OptState
# Named metrics of an update: arrays (learner or env axis first) or nested dicts of them.
Metrics = dict[str, PyTree]
# A JSON object (run records, summaries, checkpoint metadata): values are any JSON value.
JsonDict = dict[str, Any]
