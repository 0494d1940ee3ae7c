"""The A2C learner: bitwise determinism of an update for a fixed seed."""

import os

import jax
import numpy as np
import pytest
from algorithm_runs import run_algorithm
from run_helpers import plan_of
from trajectories import random_trajectory

from galax import config as config_lib
from galax.config import load as load_config
from galax.config import make_algorithm, run_settings
from galax.parallel.layout import to_host


def _params_after(config, calls=1):
  state, metrics = run_algorithm(config, calls)
  return state.params, metrics


def _initial_and_after(config):
  """Host copies of the initial parameters and of those after one call, from one build (a
  third build only for the initial ones cost an env pool and an init compile)."""
  algorithm = make_algorithm(config)
  try:
    state = algorithm.init()
    initial = to_host(state.params)
    state, metrics = algorithm.step(state)
    return initial, to_host(state.params), to_host(metrics)
  finally:
    algorithm.env.close()


# CartPole on gymnax (the second build's program comes from the compile cache, while an
# envpool program carries its pool's handle); Pong on envpool, whose envs are part of what
# must repeat.
@pytest.mark.slow
@pytest.mark.parametrize(
  "name,overrides",
  [
    ("cartpole_a2c", dict(updates_per_call=3, env=dict(id="gymnax/CartPole-v1"))),
    ("pong_paac", dict(updates_per_call=1, envs_per_learner=2)),
  ],
)
def test_update_is_bitwise_deterministic(name, overrides):
  config = load_config(name)
  config.update(overrides)
  initial, first, metrics = _initial_and_after(config)
  second, _ = _params_after(config)
  for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(second)):
    np.testing.assert_array_equal(a, b)
  # The update did change the parameters, and produced finite losses.
  assert any(np.any(a != b) for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(initial)))
  assert np.all(np.isfinite(metrics["loss"]["total"]))


@pytest.mark.slow
def test_different_seeds_differ():
  # test_update_is_bitwise_deterministic's CartPole program: the compile cache serves it.
  config = load_config("cartpole_a2c", env__id="gymnax/CartPole-v1")
  config.updates_per_call = 3
  first, _ = _params_after(config)
  config.seed = 1
  second, _ = _params_after(config)
  assert any(np.any(a != b) for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(second)))


@pytest.mark.slow
@pytest.mark.parametrize("chunks", [2, 4, 8])
def test_gradient_in_env_chunks_equals_the_whole_batch_gradient(chunks):
  from galax.algorithms.a2c import a2c_grads

  config = load_config("cartpole_a2c", loss__sum_over_time=True)
  run = run_settings(config)
  settings = run.returns, run.loss

  def apply_fn(params, obs):  # a linear actor-critic
    return obs @ params["pi"], (obs @ params["v"])[..., 0]

  params = {
    "pi": np.array([[0.5, -1.0], [2.0, 0.1], [-0.3, 0.7]], np.float32),
    "v": np.array([[0.2], [-0.4], [1.5]], np.float32),
  }
  traj = random_trajectory(jax.random.PRNGKey(3))
  # Both in one compile (op by op, every op of both compiles apart).
  (whole, whole_terms), (chunked, chunked_terms) = jax.jit(
    lambda params, traj: (
      a2c_grads(apply_fn, *settings, params, traj),
      a2c_grads(apply_fn, *settings, params, traj, chunks),
    )
  )(params, traj)
  for a, b in zip(jax.tree.leaves((whole, whole_terms)), jax.tree.leaves((chunked, chunked_terms))):
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  assert np.abs(whole["pi"]).sum() > 0


def test_grad_chunks_rule():
  from galax.algorithms.registry import spec_for
  from galax.framework.plan import PlanContext

  def chunks(config, layout, platform="cpu"):
    target = PlanContext(platform, layout, False, 1)
    return plan_of(config, spec=spec_for(config.algorithm), target=target).grad_chunks

  auto = load_config("cartpole_a2c", network__name="archnips", envs_per_learner=64)
  assert chunks(auto, "flat") == 1
  # An MLP flattens images: no convolutions, nothing to chunk for.
  assert chunks(load_config("cartpole_a2c", envs_per_learner=64), "CHW") == 1
  assert chunks(auto, "CHW") == 4  # the most chunks of >= 80 samples (16 envs x t_max 5)
  assert chunks(auto, "CHW", platform="gpu") == 1
  for envs, expected in ((48, 3), (16, 1), (2, 1)):
    assert (
      chunks(load_config("cartpole_a2c", network__name="archnips", envs_per_learner=envs), "CHW")
      == expected
    )
  # The rule counts samples (>= 80 per chunk): IMPALA's unroll 20 gives chunks of 4 envs.
  for envs, expected in ((32, 8), (64, 16)):
    impala = load_config(
      "cartpole_a2c", network__name="archnips", algorithm="impala", t_max=20, envs_per_learner=envs
    )
    assert chunks(impala, "CHW") == expected
  assert chunks(load_config("cartpole_a2c", grad_chunks=2, envs_per_learner=64), "CHW") == 2
  with pytest.raises(ValueError, match="must divide the 6 envs"):
    chunks(load_config("cartpole_a2c", grad_chunks=4, envs_per_learner=6), "CHW")


@pytest.mark.parametrize(
  "name",
  sorted(f[:-3] for f in os.listdir(config_lib.CONFIGS_DIR) if f.endswith(".py") and f[0] != "_"),
)
def test_every_config_in_configs_loads_and_validates(name):
  config_lib.validate(load_config(name))
