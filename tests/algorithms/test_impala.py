"""IMPALA: lag 0 is A2C; with lag K the actors use theta_{u-K} from the queue."""

import functools

import chex
import jax
import numpy as np
import pytest
from algorithm_runs import cartpole_config
from algorithm_runs import run_algorithm as _run

from galax.config import load as load_config
from galax.config import make_algorithm, run_settings, validate
from galax.parallel.layout import to_host

_config = functools.partial(cartpole_config, updates_per_call=3)


def _single_update_calls(config, calls=3):
  """Host copies of (params, metrics) after each of `calls` one-update calls."""
  algorithm = make_algorithm(config)
  try:
    state, out = algorithm.init(), []
    for _ in range(calls):
      state, metrics = algorithm.step(state)
      out.append((to_host(state.params), to_host(metrics)))
    return out
  finally:
    algorithm.env.close()


@pytest.fixture(scope="module")
def a2c_calls():
  """A2C's 3 updates as 3 one-update calls: one build for both lag tests (envpool programs
  hold the pool's handle, so no compile cache serves a second build)."""
  return _single_update_calls(_config("a2c", updates_per_call=1))


@pytest.mark.slow
def test_lag_zero_is_a2c(a2c_calls):
  impala = _single_update_calls(
    _config("impala", updates_per_call=1, impala=dict(policy_lag=0, reduction="mean"))
  )
  chex.assert_trees_all_close(impala[-1][0], a2c_calls[-1][0], rtol=1e-5, atol=1e-6)
  losses = lambda run: np.concatenate([m["loss"]["total"] for _, m in run])  # [3, 1]
  np.testing.assert_allclose(losses(impala), losses(a2c_calls), rtol=1e-5, atol=1e-6)
  assert all(np.all(m["abs_log_rho"] < 1e-5) for _, m in impala)


@pytest.mark.slow
def test_lag_two_acts_with_parameters_two_updates_old(a2c_calls):
  algorithm = make_algorithm(
    _config("impala", updates_per_call=1, impala=dict(policy_lag=2, reduction="mean"))
  )
  state, params, abs_log_rho = algorithm.init(), [], []
  for _ in range(3):
    state, metrics = algorithm.step(state)
    params.append(to_host(state.params))
    abs_log_rho.append(float(to_host(metrics)["abs_log_rho"][0, 0]))
  queue = to_host(state.extra.queue)
  algorithm.env.close()
  # Update 0 acts with theta_0, on-policy; updates 1 and 2 act with theta_0 too
  # (theta_{-1} stands for theta_0), off-policy.
  assert abs_log_rho[0] < 1e-5
  assert min(abs_log_rho[1:]) > 1e-4
  # After 3 updates the queue holds theta_2 in slot 2 mod 2 = 0 and theta_1 in slot 1.
  for q, p2, p1 in zip(
    jax.tree.leaves(queue), jax.tree.leaves(params[1]), jax.tree.leaves(params[0])
  ):
    np.testing.assert_array_equal(q[:, 0], p2)
    np.testing.assert_array_equal(q[:, 1], p1)
  # The first update is on-policy: the same as A2C's first update.
  chex.assert_trees_all_close(params[0], a2c_calls[0][0], rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_allreduce_learners_with_sharded_state_match_replicated():
  base = dict(
    num_learners=4, num_devices=2, combine="allreduce", impala=dict(policy_lag=1, reduction="sum")
  )
  replicated, _ = _run(_config("impala", **base))
  config = _config("impala", **base)
  config.optimizer.sharded_state = True
  sharded, metrics = _run(config)
  chex.assert_trees_all_close(sharded.params, replicated.params, rtol=1e-4, atol=1e-6)
  assert np.all(np.isfinite(metrics["loss"]["total"]))


@pytest.mark.parametrize(
  "overrides,message",
  [
    (dict(impala=dict(policy_lag=-1)), "policy_lag must be >= 0"),
    (dict(impala=dict(reduction="max")), "impala.reduction='max'"),
    (dict(impala=dict(rho_bar=0.0)), "impala.rho_bar must be > 0"),
  ],
)
def test_bad_impala_config_is_rejected(overrides, message):
  with pytest.raises(ValueError, match=message):
    validate(_config("impala", **overrides))


REDUCTIONS, CHUNKS = ("mean", "sum"), (2, 4)


@pytest.fixture(scope="module")
def chunked_gradients():
  """{(reduction, chunks): impala_grads} on a random trajectory, chunks 1 the whole batch:
  one compile (op by op, each op compiled apart: about 9 s of CPU instead of 5)."""
  from trajectories import random_trajectory

  from galax.algorithms.impala import VTraceSettings, impala_grads

  def apply_fn(params, obs):  # a linear actor-critic
    return obs @ params["pi"], (obs @ params["v"])[..., 0]

  settings = {}
  for reduction in REDUCTIONS:
    config = load_config("cartpole_a2c", impala__reduction=reduction)
    vtrace = VTraceSettings(float(config.gamma), 1.0, 1.0, reduction)
    settings[reduction] = vtrace, run_settings(config).loss

  def grads(params, traj, last_obs):
    return {
      (reduction, chunks): impala_grads(
        apply_fn, *settings[reduction], params, traj, last_obs, chunks
      )
      for reduction in REDUCTIONS
      for chunks in (1, *CHUNKS)
    }

  params = {
    "pi": np.array([[0.5, -1.0], [2.0, 0.1], [-0.3, 0.7]], np.float32),
    "v": np.array([[0.2], [-0.4], [1.5]], np.float32),
  }
  traj = random_trajectory(jax.random.PRNGKey(5), steps=6, envs=8, random_behaviour=True)
  last_obs = jax.random.normal(jax.random.PRNGKey(6), (8, 3))
  return jax.jit(grads)(params, traj, last_obs)


@pytest.mark.slow
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("chunks", CHUNKS)
def test_gradient_in_env_chunks_equals_the_whole_batch_gradient(
  chunked_gradients, reduction, chunks
):
  whole, chunked = chunked_gradients[reduction, 1], chunked_gradients[reduction, chunks]
  assert chunked[1][1].shape == (6, 8)  # log rhos of every env, in env order
  for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(chunked)):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
  assert np.abs(whole[0]["pi"]).sum() > 0
