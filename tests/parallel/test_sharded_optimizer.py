"""ZeRO-1 sharded optimizer state: the same update as the replicated one, n times less state
per device, and the same A2C training run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from galax.config import load as load_config
from galax.config import make_algorithm
from galax.core import optimizers
from galax.core.optimizers import ReplicatedOptimizer
from galax.parallel.combine import AllReduce
from galax.parallel.layout import AXIS, to_host
from galax.parallel.sharded_optimizer import FlatLayout, ShardedAllReduce, ShardedOptimizer

# Odd sizes so that the flat vector (P = 3*5 + 7 + 2*2*3 + 1 = 35) needs padding.
SHAPES = dict(conv=(3, 5), bias=(7,), dense=(2, 2, 3), scalar=())


def _optimizer_config(**overrides):
  cfg = dict(
    name="adam",
    learning_rate=1e-3,
    lr_scaling="none",
    anneal="none",
    eps=1e-8,
    rmsprop_decay=0.99,
    rmsprop_convention="torch",
    rmsprop_initial_scale=0.0,
    adam_b1=0.8,
    adam_b2=0.75,
    max_grad_norm=0.0,
    clip_average_norm=0.0,
    sharded_state=False,
  )
  cfg.update(overrides)
  return optimizers.OptimizerSettings(**cfg)


def _tree(rng, lead=()):
  return {k: jnp.asarray(rng.normal(size=lead + s), jnp.float32) for k, s in SHAPES.items()}


def _combined_step(opt, combiner):
  """An update's three lines: clip each learner's gradient, combine, step."""

  def step(grads, opt_state, params):
    return opt.step(combiner.grads(opt.clip_each(grads)), opt_state, params)

  return step


def _run_steps(opt, combiner, mesh, params, grads_per_step):
  """Runs the block's clip, combine and step under shard_map for each [n, ...] gradient
  tree."""
  n = jax.tree.leaves(params)[0].shape[0]
  opt_state = jax.vmap(opt.init)(params)
  sharding = NamedSharding(mesh, P(AXIS))
  put = lambda t: jax.tree.map(lambda x: jax.device_put(x, sharding), t)
  step = jax.jit(
    jax.shard_map(
      _combined_step(opt, combiner),
      mesh=mesh,
      in_specs=(P(AXIS),) * 3,
      out_specs=(P(AXIS),) * 3,
      check_vma=False,
    )
  )
  params, opt_state = put(params), put(opt_state)
  norms = []
  for grads in grads_per_step:
    params, opt_state, norm = step(put(grads), opt_state, params)
    norms.append(np.asarray(norm))
  assert np.asarray(norms).shape == (len(grads_per_step), n)
  return to_host(params), to_host(opt_state), norms


# 1 learner per device in the fast tier; 2 and 3 per device in the slow one.
@pytest.mark.parametrize(
  "devices,learners",
  [(8, 8), pytest.param(4, 8, marks=pytest.mark.slow), pytest.param(2, 6, marks=pytest.mark.slow)],
)
# The fast tier keeps the case with both clips.
@pytest.mark.parametrize(
  "clip",
  [
    pytest.param(dict(), marks=pytest.mark.slow),
    pytest.param(dict(clip_average_norm=0.1), marks=pytest.mark.slow),
    dict(clip_average_norm=0.05, max_grad_norm=0.5),
  ],
)
def test_sharded_adam_equals_replicated(devices, learners, clip):
  rng = np.random.default_rng(devices * 100 + learners)
  mesh = Mesh(np.array(jax.devices()[:devices]), (AXIS,))
  one = _tree(rng)
  params = jax.tree.map(lambda x: jnp.broadcast_to(x, (learners, *x.shape)), one)
  # An offset keeps the mean gradient away from 0: Adam divides by its magnitude, so a mean
  # that cancels to ~0 (e.g. clipped +-0.1 scalars) would amplify round-off differences.
  grads_per_step = [jax.tree.map(lambda g: g + 0.5, _tree(rng, (learners,))) for _ in range(3)]

  cfg = _optimizer_config(**clip)
  full, _ = optimizers.make_optimizer(cfg, 1, learners, 10, per_tensor_clip=False)
  schedule = optimizers.make_schedule(cfg, 1, learners, 10)
  replicated = ReplicatedOptimizer(full, cfg.clip_average_norm)
  layout = FlatLayout(jax.eval_shape(lambda: one), learners)
  sharded = ShardedOptimizer(
    optimizers.elementwise_optimizer(cfg, schedule),
    layout,
    cfg.clip_average_norm,
    cfg.max_grad_norm,
  )
  expected, _, expected_norms = _run_steps(replicated, AllReduce(), mesh, params, grads_per_step)
  got, sharded_state, got_norms = _run_steps(
    sharded, ShardedAllReduce(layout), mesh, params, grads_per_step
  )

  for key in SHAPES:
    np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=key)
    # Every learner holds the same parameters.
    np.testing.assert_array_equal(got[key], np.broadcast_to(got[key][0], got[key].shape))
  np.testing.assert_allclose(got_norms, expected_norms, rtol=1e-5)
  # The parameters moved, by more than the tolerance.
  assert max(np.max(np.abs(got[k] - np.asarray(one[k]))) for k in SHAPES) > 1e-3
  # Each learner holds one slice of S = ceil(35 / n) numbers per Adam moment.
  mu = sharded_state[0].mu
  assert mu.shape == (learners, -(-35 // learners))


def test_clipping_is_active_in_the_clipped_cases():
  # Guard for the test above: the chosen clip values do change the update.
  rng = np.random.default_rng(0)
  g = _tree(rng)
  clipped, _ = optimizers.clip_by_average_norm(0.1).update(g, ())
  assert any(not np.allclose(clipped[k], g[k]) for k in SHAPES)


def test_flat_layout_round_trip():
  rng = np.random.default_rng(1)
  tree = _tree(rng)
  layout = FlatLayout(jax.eval_shape(lambda: tree), 4)
  assert (layout.size, layout.shard_size) == (35, 9)
  flat = layout.flatten(tree)
  assert flat.shape == (36,) and float(flat[-1]) == 0.0
  # Leaves in key order: bias (7), conv (15), dense (12), scalar (1).
  np.testing.assert_array_equal(flat[:7], tree["bias"])
  np.testing.assert_array_equal(flat[34], tree["scalar"])
  back = layout.unflatten(flat)
  for key in SHAPES:
    np.testing.assert_array_equal(back[key], tree[key])


@pytest.mark.parametrize("sharded", [False, True])
def test_per_tensor_clipping_applies_to_each_learner_before_averaging(sharded):
  # Learner 0: a = [3, 4], average norm 2.5 -> clipped to [0.12, 0.16]; learner 1:
  # a = [0.01, 0], average norm 0.005 -> kept. SGD with lr 1 moves by minus their mean,
  # [0.065, 0.08] (clipping the mean [1.505, 2] instead would give [0.1203, 0.1598]).
  mesh = Mesh(np.array(jax.devices()[:2]), (AXIS,))
  cfg = _optimizer_config(name="sgd", learning_rate=1.0, clip_average_norm=0.1)
  params = dict(a=jnp.zeros((2, 2)))
  grads = dict(a=jnp.array([[3.0, 4.0], [0.01, 0.0]]))
  if sharded:
    schedule = optimizers.make_schedule(cfg, 1, 2, 1)
    layout = FlatLayout(jax.eval_shape(lambda: dict(a=jnp.zeros(2))), 2)
    opt = ShardedOptimizer(optimizers.elementwise_optimizer(cfg, schedule), layout, 0.1)
    combiner = ShardedAllReduce(layout)
  else:
    full, _ = optimizers.make_optimizer(cfg, 1, 2, 1, per_tensor_clip=False)
    opt, combiner = ReplicatedOptimizer(full, 0.1), AllReduce()
  new_params, _, _ = _run_steps(opt, combiner, mesh, params, [grads])
  np.testing.assert_allclose(new_params["a"], [[-0.065, -0.08]] * 2, rtol=1e-6)


def _bytes_per_device(tree):
  per_device = {}
  for leaf in jax.tree.leaves(tree):
    for shard in leaf.addressable_shards:
      per_device[shard.device] = per_device.get(shard.device, 0) + shard.data.nbytes
  return per_device


@pytest.mark.slow
def test_a2c_with_sharded_state_trains_like_replicated_and_holds_n_times_less():
  config = load_config("cartpole_a2c")
  config.update(dict(num_learners=8, envs_per_learner=2, combine="allreduce", updates_per_call=3))
  config.optimizer.name = "adam"
  config.optimizer.clip_average_norm = 0.1
  runs = {}
  for sharded in (False, True):
    config.optimizer.sharded_state = sharded
    algorithm = make_algorithm(config)
    state = algorithm.init()
    memory = _bytes_per_device(state.opt_state)
    state, metrics = algorithm.step(state)
    runs[sharded] = (to_host(state.params), to_host(metrics), memory)
    algorithm.env.close()
  (p0, m0, mem0), (p1, m1, mem1) = runs[False], runs[True]
  for a, b in zip(jax.tree.leaves(p0), jax.tree.leaves(p1)):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(m0["loss"]["total"], m1["loss"]["total"], rtol=1e-4, atol=1e-6)
  assert len(mem0) == len(mem1) == 8
  # Adam's mu and nu dominate; the per-learner step counts add 8 bytes to both.
  ratio = max(mem0.values()) / max(mem1.values())
  assert 7.0 < ratio <= 8.0, (mem0, mem1)
