"""Straggler dropping: m = n is plain all-reduce; m < n applies the mean of the kept."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from algorithm_runs import cartpole_config, run_algorithm
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from galax.config import base_config, run_settings, validate
from galax.core import optimizers
from galax.core.optimizers import ReplicatedOptimizer
from galax.parallel import stragglers
from galax.parallel.combine import AllReduce
from galax.parallel.layout import AXIS
from galax.parallel.sharded_optimizer import FlatLayout, ShardedAllReduce, ShardedOptimizer


def test_kept_mask_and_weights_hand_computed():
  times = jnp.array([3.0, 1.0, 2.0, 5.0])
  kept = stragglers.kept_mask(times, 2)
  np.testing.assert_array_equal(kept, [False, True, True, False])
  np.testing.assert_allclose(stragglers.gradient_weights(kept), [0.0, 2.0, 2.0, 0.0])
  np.testing.assert_array_equal(stragglers.kept_mask(times, 4), [True] * 4)
  np.testing.assert_array_equal(
    stragglers.gradient_weights(stragglers.kept_mask(times, 4)), [1.0] * 4
  )
  # Ties go to the lower learner index.
  np.testing.assert_array_equal(
    stragglers.kept_mask(jnp.array([1.0, 1.0, 1.0]), 2), [True, True, False]
  )


@pytest.mark.parametrize("law", stragglers.STEP_TIME_LAWS)
def test_step_times_are_seeded_per_update(law):
  model = stragglers.StragglerModel(16, 12, law, 0.5, seed=3)
  t0, kept0 = model.draw(jnp.int32(0))
  t0_again, _ = model.draw(jnp.int32(0))
  t1, _ = model.draw(jnp.int32(1))
  np.testing.assert_array_equal(t0, t0_again)
  assert not np.allclose(t0, t1)
  assert int(jnp.sum(kept0)) == 12
  assert np.all(np.asarray(t0) > 0)
  if law != "lognormal":
    assert np.all(np.asarray(t0) >= 1.0)
  if law == "uniform":
    assert np.all(np.asarray(t0) <= 1.5)
  other_seed, _ = stragglers.StragglerModel(16, 12, law, 0.5, seed=4).draw(jnp.int32(0))
  assert not np.allclose(t0, other_seed)


def _combined(model, grads, mesh, update):
  """The all-reduce mean with the model's weights, under shard_map; returns [n, ...] and
  metrics."""

  def block(g):
    learners = jax.tree.leaves(g)[0].shape[0]
    weights, metrics = model.weights(learners, update) if model else (None, {})
    return AllReduce().grads(g, weights), metrics

  fn = jax.jit(
    jax.shard_map(
      block, mesh=mesh, in_specs=(P(AXIS),), out_specs=(P(AXIS), P(AXIS)), check_vma=False
    )
  )
  return jax.tree.map(np.asarray, fn(jax.device_put(grads, NamedSharding(mesh, P(AXIS)))))


@pytest.mark.parametrize("devices,learners", [(8, 8), pytest.param(4, 8, marks=pytest.mark.slow)])
def test_all_kept_is_plain_allreduce_and_fewer_is_mean_of_kept(devices, learners):
  mesh = Mesh(np.array(jax.devices()[:devices]), (AXIS,))
  rng = np.random.default_rng(learners)
  grads = dict(
    w=jnp.asarray(rng.normal(size=(learners, 3, 2)), jnp.float32),
    b=jnp.asarray(rng.normal(size=(learners,)), jnp.float32),
  )
  update = jnp.int32(7)
  plain, _ = _combined(None, grads, mesh, update)

  all_kept = stragglers.StragglerModel(learners, learners, "exponential", 1.0, seed=0)
  same, metrics = _combined(all_kept, grads, mesh, update)
  for key in grads:
    np.testing.assert_array_equal(same[key], plain[key])
  np.testing.assert_array_equal(metrics["kept"], np.ones(learners))

  for m in (1, 5):
    model = stragglers.StragglerModel(learners, m, "exponential", 1.0, seed=0)
    got, metrics = _combined(model, grads, mesh, update)
    times, kept = model.draw(update)
    kept = np.asarray(kept)
    assert kept.sum() == m
    np.testing.assert_array_equal(metrics["kept"], kept.astype(np.float32))
    # The kept learners are those that finish first, and the update waits for the m-th.
    assert np.max(np.asarray(times)[kept]) <= np.min(np.asarray(times)[~kept])
    np.testing.assert_allclose(metrics["wait_time"], np.max(np.asarray(times)[kept]))
    np.testing.assert_allclose(metrics["wait_all"], np.max(np.asarray(times)))
    for key in grads:
      mean_of_kept = np.asarray(grads[key])[kept].mean(axis=0)
      for learner in range(learners):  # every learner applies the same mean
        np.testing.assert_allclose(got[key][learner], mean_of_kept, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("sharded", [False, True])
def test_dropping_averages_each_kept_learners_clipped_gradient(sharded):
  """SyncReplicas averaged the first m workers' gradients, each clipped per tensor by its
  worker: the update is the mean over the kept of clip(g_i), not of clip((n / m) g_i)."""
  learners, kept_count, clip = 8, 5, 0.05
  mesh = Mesh(np.array(jax.devices()[:4]), (AXIS,))
  rng = np.random.default_rng(3)
  shapes = dict(w=(4, 3), b=(5,))
  one = {k: jnp.asarray(rng.normal(size=s), jnp.float32) for k, s in shapes.items()}
  params = jax.tree.map(lambda x: jnp.broadcast_to(x, (learners, *x.shape)), one)
  grads = {k: jnp.asarray(rng.normal(size=(learners, *s)), jnp.float32) for k, s in shapes.items()}
  cfg = dataclasses.replace(
    run_settings(base_config()).optimizer,
    name="sgd",
    learning_rate=1.0,
    max_grad_norm=0.0,
    clip_average_norm=clip,
  )
  if sharded:
    schedule = optimizers.make_schedule(cfg, 1, learners, 10)
    layout = FlatLayout(jax.eval_shape(lambda: one), learners)
    opt = ShardedOptimizer(optimizers.elementwise_optimizer(cfg, schedule), layout, clip)
    combiner = ShardedAllReduce(layout)
  else:
    full, _ = optimizers.make_optimizer(cfg, 1, learners, 10, per_tensor_clip=False)
    opt, combiner = ReplicatedOptimizer(full, clip), AllReduce()
  model = stragglers.StragglerModel(learners, kept_count, "exponential", 1.0, seed=0)
  update = jnp.int32(2)

  def block(g, p):
    weights, _ = model.weights(jax.tree.leaves(g)[0].shape[0], update)
    grads = combiner.grads(opt.clip_each(g), weights)
    new_params, _, _ = opt.step(grads, jax.vmap(opt.init)(p), p)
    return new_params

  step = jax.jit(
    jax.shard_map(block, mesh=mesh, in_specs=(P(AXIS),) * 2, out_specs=P(AXIS), check_vma=False)
  )
  got = jax.tree.map(np.asarray, step(grads, params))
  kept = np.asarray(model.draw(update)[1])
  per_tensor = optimizers.clip_by_average_norm(clip)
  clipped = [
    per_tensor.update(jax.tree.map(lambda g, i=i: g[i], grads), ())[0] for i in range(learners)
  ]
  for key in shapes:
    mean_kept = np.mean([np.asarray(c[key]) for c, k in zip(clipped, kept) if k], axis=0)
    for learner in range(learners):
      np.testing.assert_allclose(
        got[key][learner], np.asarray(one[key]) - mean_kept, rtol=1e-5, atol=1e-6, err_msg=key
      )
  # The clip binds, so clipping (n / m) g_i instead would give another update.
  scaled = per_tensor.update(jax.tree.map(lambda g: g[0] * learners / kept_count, grads), ())[0]
  assert not np.allclose(scaled["w"], np.asarray(clipped[0]["w"]) * learners / kept_count)


def _allreduce_config(num_kept):
  return cartpole_config(
    "a2c",
    num_learners=4,
    num_devices=4,
    combine="allreduce",
    updates_per_call=3,
    stragglers=dict(num_kept=num_kept),
  )


def _train_params(config):
  state, metrics = run_algorithm(config)
  return state.params, metrics


@pytest.fixture(scope="module")
def plain_allreduce():
  """The parameters after plain all-reduce's run (envpool programs hold the pool's handle,
  so no compile cache serves a second build): one build for both tests below."""
  return _train_params(_allreduce_config(0))[0]


@pytest.mark.slow
def test_a2c_keeping_all_gradients_is_bitwise_plain_allreduce(plain_allreduce):
  plain = plain_allreduce
  kept_all, metrics = _train_params(_allreduce_config(4))
  for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(kept_all)):
    np.testing.assert_array_equal(a, b)
  np.testing.assert_array_equal(metrics["stragglers"]["kept"], np.ones((3, 4)))


@pytest.mark.slow
def test_a2c_dropping_stragglers_keeps_m_per_update_and_changes_the_run(plain_allreduce):
  plain = plain_allreduce
  dropped, metrics = _train_params(_allreduce_config(2))
  np.testing.assert_array_equal(metrics["stragglers"]["kept"].sum(axis=1), [2, 2, 2])
  assert np.all(metrics["stragglers"]["wait_time"] <= metrics["stragglers"]["wait_all"])
  assert any(np.any(a != b) for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(dropped)))
  # Learners still share their parameters.
  for leaf in jax.tree.leaves(dropped):
    np.testing.assert_array_equal(leaf, np.broadcast_to(leaf[0], leaf.shape))


@pytest.mark.parametrize(
  "overrides,message",
  [
    (dict(num_kept=5), "num_kept=5 must be in"),
    (dict(step_time="pareto"), "stragglers.step_time='pareto'"),
  ],
)
def test_bad_straggler_config_is_rejected(overrides, message):
  config = _allreduce_config(0)
  config.stragglers.update(overrides)
  with pytest.raises(ValueError, match=message):
    validate(config)


def test_stragglers_need_allreduce():
  config = _allreduce_config(2)
  config.combine = "independent"
  with pytest.raises(ValueError, match="combine='allreduce'"):
    validate(config)
