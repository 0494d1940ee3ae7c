"""All-reduce A2C: n learners x b envs make the update of one learner with n * b envs
(the GALA paper's footnote 2), whatever the layout of learners on devices."""

import jax
import numpy as np
import pytest
from algorithm_runs import jaxpr_primitives as _primitives

from galax.config import load as load_config
from galax.config import make_algorithm
from galax.parallel.layout import to_host

pytestmark = pytest.mark.slow  # every test compiles and runs multi-learner programs

UPDATES = 3


def _run(**overrides):
  config = load_config("cartpole_a2c", updates_per_call=UPDATES, **overrides)
  algorithm = make_algorithm(config)
  state = algorithm.init()
  initial = to_host(state.params)
  jaxpr = jax.make_jaxpr(algorithm.step)(state)
  state, metrics = algorithm.step(state)
  out = dict(
    initial=initial,
    params=to_host(state.params),
    metrics=to_host(metrics),
    jaxpr=jaxpr,
    layout=algorithm.layout,
  )
  algorithm.env.close()
  return out


@pytest.fixture(scope="module")
def single():
  return _run(num_learners=1, envs_per_learner=32)


# 1, 2 and 4 learners per device; "unroll" and "loop" run a device's learners one after
# another (traced apart / in an XLA loop).
@pytest.mark.parametrize(
  "devices,learner_map", [(4, "auto"), (2, "auto"), (1, "auto"), (1, "unroll"), (1, "loop")]
)
def test_allreduce_equals_one_learner_with_all_envs(single, devices, learner_map):
  multi = _run(
    num_learners=4,
    envs_per_learner=8,
    combine="allreduce",
    num_devices=devices,
    learner_map=learner_map,
  )
  assert multi["layout"].learners_per_device == 4 // devices
  for init, a, b in zip(
    jax.tree.leaves(multi["initial"]),
    jax.tree.leaves(multi["params"]),
    jax.tree.leaves(single["params"]),
  ):
    assert np.all(init == init[0])  # identical start
    assert np.all(a == a[0])  # one shared set of parameters, bit for bit
    np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-6)
  moved = max(
    np.max(np.abs(a - i))
    for a, i in zip(jax.tree.leaves(multi["params"]), jax.tree.leaves(multi["initial"]))
  )
  assert moved > 1e-3  # the updates did something
  # The loss is normalized by the number of collected transitions, so the big batch's
  # loss is the mean of the learners' losses.
  np.testing.assert_allclose(
    multi["metrics"]["loss"]["total"].mean(axis=1),
    single["metrics"]["loss"]["total"][:, 0],
    rtol=1e-4,
    atol=1e-6,
  )
  # Every env's episodes are the same in both runs.
  np.testing.assert_array_equal(
    multi["metrics"]["episodes"]["over"], single["metrics"]["episodes"]["over"]
  )
  prims = _primitives(multi["jaxpr"].jaxpr)
  assert "psum" in prims and "all_gather" not in prims and "ppermute" not in prims


def test_independent_learners_diverge(single):
  independent = _run(num_learners=4, envs_per_learner=8, num_devices=2)
  params = jax.tree.leaves(independent["params"])
  assert any(np.any(a[0] != a[1]) for a in params)
  assert "psum" not in _primitives(independent["jaxpr"].jaxpr)
