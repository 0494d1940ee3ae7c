"""A3C: staleness 0 equals A2C; the history holds the last versions; staleness bounds."""

import functools

import chex
import jax
import numpy as np
import pytest
from algorithm_runs import cartpole_config
from algorithm_runs import run_algorithm as _run

from galax.config import make_algorithm, validate
from galax.parallel.layout import to_host

_config = functools.partial(cartpole_config, updates_per_call=4)


@pytest.fixture(scope="module")
def a3c_run():
  """One learner's 4 updates, staleness 0: host copies of the initial parameters, and of
  the state and metrics after the call. One build for both tests that read it (envpool
  programs hold the pool's handle, so no compile cache serves a second build)."""
  algorithm = make_algorithm(_config("a3c"))
  try:
    state = algorithm.init()
    initial = to_host(state.params)
    state, metrics = algorithm.step(state)
    return initial, to_host(state), to_host(metrics)
  finally:
    algorithm.env.close()


@pytest.mark.slow
def test_one_learner_without_staleness_is_a2c(a3c_run):
  # RMSProp with global-norm clipping: any optimizer works for n = 1.
  a2c, a2c_metrics = _run(_config("a2c"))
  initial, a3c, a3c_metrics = a3c_run
  chex.assert_trees_all_close(a3c.params, a2c.params, rtol=1e-6, atol=1e-7)
  np.testing.assert_allclose(a3c_metrics["loss"]["total"], a2c_metrics["loss"]["total"], rtol=1e-6)
  np.testing.assert_array_equal(a3c_metrics["staleness"], np.zeros((4, 1)))
  # The run moved the parameters.
  assert any(
    np.any(np.abs(a - b) > 1e-3)
    for a, b in zip(jax.tree.leaves(a3c.params), jax.tree.leaves(initial))
  )


@pytest.mark.slow
@pytest.mark.parametrize("num_devices", [4, 2])
def test_n_learners_without_staleness_under_sgd_is_allreduce_a2c_with_n_times_the_lr(num_devices):
  sgd = dict(num_learners=4, num_devices=num_devices)
  a2c_config = _config("a2c", combine="allreduce", **sgd)
  a3c_config = _config("a3c", **sgd)
  for config, lr in ((a2c_config, 4 * 0.01), (a3c_config, 0.01)):
    config.optimizer.update(dict(name="sgd", learning_rate=lr, max_grad_norm=0.0))
  a2c, _ = _run(a2c_config)
  a3c, metrics = _run(a3c_config)
  chex.assert_trees_all_close(a3c.params, a2c.params, rtol=1e-4, atol=1e-6)
  # Learner pi(i) is applied i updates after theta_{un}: staleness = the position 0..3.
  np.testing.assert_array_equal(np.sort(metrics["staleness"], axis=1), [[0, 1, 2, 3]] * 4)
  assert len({tuple(row) for row in metrics["staleness"]}) > 1  # the order is shuffled


@pytest.mark.slow
def test_history_holds_the_last_versions_and_fixed_staleness_reads_old_parameters(a3c_run):
  algorithm = make_algorithm(
    _config("a3c", updates_per_call=1, a3c=dict(max_staleness=1, staleness="fixed"))
  )
  state = algorithm.init()
  state, _ = algorithm.step(state)
  theta_1 = to_host(state.params)
  state, metrics = algorithm.step(state)
  np.testing.assert_array_equal(to_host(metrics)["staleness"], [[1]])
  # [D = 1, 2 slots, ...]: theta_2 in slot 2 mod 2 = 0, theta_1 in slot 1.
  history, theta_2 = to_host((state.extra.history, state.params))
  for h, p2, p1 in zip(
    jax.tree.leaves(history), jax.tree.leaves(theta_2), jax.tree.leaves(theta_1)
  ):
    np.testing.assert_array_equal(h[0, 0], p2[0])
    np.testing.assert_array_equal(h[0, 1], p1[0])
  for _ in range(2):  # to a3c_run's 4 updates
    state, _ = algorithm.step(state)
  state = to_host(state)
  algorithm.env.close()
  # Round 1 read theta_0 instead of theta_1, so the run differs from staleness 0.
  _, no_staleness, _ = a3c_run
  assert any(
    np.any(a != b)
    for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(no_staleness.params))
  )


@pytest.mark.slow
def test_uniform_staleness_is_bounded_and_runs_are_reproducible():
  # CartPole on gymnax: the second build's program comes from the compile cache (an
  # envpool program carries its pool's handle, so the second compiled afresh).
  config = _config(
    "a3c",
    num_learners=4,
    num_devices=2,
    a3c=dict(max_staleness=3, staleness="uniform"),
    env=dict(id="gymnax/CartPole-v1"),
  )
  first, metrics = _run(config)
  second, _ = _run(config)
  for a, b in zip(
    jax.tree.leaves((first.params, first.opt_state, first.extra)),
    jax.tree.leaves((second.params, second.opt_state, second.extra)),
  ):
    np.testing.assert_array_equal(a, b)
  staleness = metrics["staleness"]
  assert staleness.shape == (4, 4)
  assert staleness.min() >= 0 and staleness.max() <= 3 + 3
  assert len(np.unique(staleness)) > 2
  # The four learners' copies of the shared parameters stay identical.
  for leaf in jax.tree.leaves(first.params):
    np.testing.assert_array_equal(leaf, np.broadcast_to(leaf[0], leaf.shape))


@pytest.mark.parametrize(
  "overrides,message",
  [
    (dict(combine="allreduce", num_learners=2), "must stay 'independent'"),
    (dict(a3c=dict(max_staleness=-1)), "max_staleness must be >= 0"),
    (dict(a3c=dict(staleness="poisson")), "a3c.staleness='poisson'"),
  ],
)
def test_bad_a3c_config_is_rejected(overrides, message):
  with pytest.raises(ValueError, match=message):
    validate(_config("a3c", **overrides))
