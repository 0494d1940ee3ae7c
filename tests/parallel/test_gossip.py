"""GALA gossip: topologies, the ppermute mixing step, message delay, consensus metrics and
the Prop. 1 bound, checked against numpy references on 8 virtual CPU devices."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from algorithm_runs import jaxpr_primitives as _primitives
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from galax.config import load as load_config
from galax.config import validate
from galax.parallel import diagnostics
from galax.parallel import topology as topo
from galax.parallel.combine import Gossip, shift_learners
from galax.parallel.layout import AXIS

TOPOLOGIES = [("ring", 1), ("ring", 2), ("ring", 3), ("exponential", 1), ("full", 1)]
# (devices, learners per device): one learner per device, two (a shift needs pieces from
# two devices), all learners on one device (shifts are local), and an odd block size.
LAYOUTS = [(8, 1), (8, 2), (1, 4), (2, 3)]


def _sharded(fn, devices):
  mesh = Mesh(np.array(jax.devices()[:devices]), (AXIS,))
  return jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=P(AXIS), out_specs=P(AXIS), check_vma=False))


def _params(n, seed=0):
  rng = np.random.default_rng(seed)
  return {
    "w": rng.normal(size=(n, 3, 2)).astype(np.float32),
    "b": rng.normal(size=(n, 5)).astype(np.float32),
  }


def _stacked(tree):
  """[n, d] float64: each learner's leaves, flattened in jax.tree order."""
  return np.concatenate(
    [np.asarray(x, np.float64).reshape(x.shape[0], -1) for x in jax.tree.leaves(tree)], axis=1
  )


# --- topologies -------------------------------------------------------------------------


def test_ring_mixing_matrix_by_hand():
  p = topo.make_topology("ring", 4, 1).mixing_matrix()
  expected = np.array([[0.5, 0, 0, 0.5], [0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0], [0, 0, 0.5, 0.5]])
  np.testing.assert_array_equal(p, expected)
  p2 = topo.make_topology("ring", 4, 2).mixing_matrix()
  np.testing.assert_allclose(p2[0], [1 / 3, 0, 1 / 3, 1 / 3])


def test_exponential_and_full_topologies():
  exp8 = topo.make_topology("exponential", 8)
  assert exp8.shifts == (1, 2, 4) and exp8.weight == 0.25
  np.testing.assert_allclose(exp8.mixing_matrix()[5], [0, 0.25, 0, 0.25, 0.25, 0.25, 0, 0])
  assert topo.make_topology("exponential", 5).shifts == (1, 2, 4)
  assert topo.make_topology("exponential", 2).shifts == (1,)
  np.testing.assert_allclose(topo.make_topology("full", 3).mixing_matrix(), np.full((3, 3), 1 / 3))


@pytest.mark.parametrize("name,peers", TOPOLOGIES)
def test_mixing_matrices_are_doubly_stochastic(name, peers):
  p = topo.make_topology(name, 8, peers).mixing_matrix()
  np.testing.assert_allclose(p.sum(axis=0), 1.0)
  np.testing.assert_allclose(p.sum(axis=1), 1.0)
  assert np.all(p >= 0)


def test_beta_by_hand():
  # The 1-peer ring's eigenvalues are (1 + e^{-2 pi i k / n}) / 2, of modulus |cos(pi k / n)|.
  assert topo.beta(topo.make_topology("ring", 4).mixing_matrix()) == pytest.approx(2**-0.5)
  assert topo.beta(topo.make_topology("ring", 8).mixing_matrix()) == pytest.approx(
    np.cos(np.pi / 8)
  )
  assert topo.beta(topo.make_topology("exponential", 4).mixing_matrix()) == pytest.approx(1 / 3)
  assert topo.beta(topo.make_topology("full", 6).mixing_matrix()) == pytest.approx(0.0, abs=1e-12)
  # Without delay the recursion needs one step: B_{k+1} = beta (B_k + g_k).
  window, gains = topo.prop1_window(topo.make_topology("ring", 4).mixing_matrix(), 0)
  assert window == 1 and gains[0] == pytest.approx(2**-0.5)


def test_augmented_mixing_matrix_by_hand():
  p = topo.make_topology("ring", 2).mixing_matrix()  # [[.5, .5], [.5, .5]]
  np.testing.assert_array_equal(topo.augmented_mixing_matrix(p, 0), p)
  # Nodes: x_0, x_1, then the messages y_0^{k-1}, y_1^{k-1}.
  expected = np.array([[0.5, 0, 0, 0.5], [0, 0.5, 0.5, 0], [1, 0, 0, 0], [0, 1, 0, 0]])
  np.testing.assert_array_equal(topo.augmented_mixing_matrix(p, 1), expected)
  big = topo.augmented_mixing_matrix(topo.make_topology("ring", 4, 2).mixing_matrix(), 3)
  assert big.shape == (16, 16)
  np.testing.assert_allclose(big.sum(axis=1), 1.0)
  window, gains = topo.prop1_window(p, 1)
  assert gains[-1] < 1.0 and len(gains) == window


@pytest.mark.parametrize(
  "name,peers,n,message",
  [
    ("ring", 4, 4, "config.gossip.peers=4"),
    ("ring", 0, 4, "config.gossip.peers=0"),
    ("star", 1, 4, "config.gossip.topology='star'"),
    ("ring", 1, 1, "num_learners >= 2"),
  ],
)
def test_bad_topologies_are_rejected(name, peers, n, message):
  with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
    topo.make_topology(name, n, peers)


def test_config_validation():
  config = load_config("gala_a2c")
  validate(config)
  config.gossip.peers = 4
  with pytest.raises(ValueError, match="config.gossip.peers=4"):
    validate(config)
  config.gossip.peers = 1
  config.gossip.delay = -1
  with pytest.raises(ValueError, match="config.gossip.delay"):
    validate(config)


@pytest.mark.parametrize("name,combine", [("gala_a2c", "gossip"), ("allreduce_a2c", "allreduce")])
def test_paper_configs(name, combine):
  from galax.core.optimizers import scaled_learning_rate

  c = validate(load_config(name))
  assert (c.combine, c.num_learners, c.envs_per_learner, c.t_max) == (combine, 4, 16, 5)
  assert (c.optimizer.eps, c.optimizer.rmsprop_convention, c.optimizer.max_grad_norm) == (
    0.01,
    "torch",
    0.5,
  )
  lr = scaled_learning_rate(
    c.optimizer.learning_rate, c.optimizer.lr_scaling, c.envs_per_learner, c.num_learners
  )
  assert lr == pytest.approx(1.4e-3)
  assert c.total_env_steps == 40_000_000


# --- the gossip step --------------------------------------------------------------------


@pytest.mark.parametrize("devices,per_device", LAYOUTS)
@pytest.mark.parametrize("name,peers", TOPOLOGIES)
def test_gossip_step_is_the_mixing_matrix(name, peers, devices, per_device):
  n = devices * per_device
  topology = topo.make_topology(name, n, peers)
  gossip = Gossip(topology)
  params = _params(n)
  mixed = _sharded(lambda x: gossip.mix_step(x, ())[0], devices)(params)
  expected = topology.mixing_matrix() @ _stacked(params)
  np.testing.assert_allclose(_stacked(mixed), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("devices,per_device", LAYOUTS)
def test_shift_learners_moves_whole_learners(devices, per_device):
  n = devices * per_device
  ids = np.arange(n, dtype=np.int32)
  shifts = list(range(-1, 2 * n + 1))
  out = _sharded(lambda x: jnp.stack([shift_learners(x, s) for s in shifts], axis=1), devices)(ids)
  for k, shift in enumerate(shifts):
    np.testing.assert_array_equal(
      np.asarray(out[:, k]), (ids - shift) % n, err_msg=f"shift {shift}"
    )


@pytest.mark.parametrize(
  "per_device,name,ppermutes",
  [(1, "ring", 1), (2, "ring", 1), (1, "exponential", 3), (2, "exponential", 4)],
)
def test_ring_gossip_uses_ppermute_not_all_gather(per_device, name, ppermutes):
  n = 8 * per_device
  gossip = Gossip(topo.make_topology(name, n))
  fn = _sharded(lambda x: gossip.mix_step(x, ())[0], 8)
  params = _params(n)
  prims = _primitives(jax.make_jaxpr(fn)(params).jaxpr)
  # One ppermute per shift and parameter leaf: with 2 learners per device a shift by 1, 2,
  # 4 or 8 learners (the exponential graph of 16) takes one slice of the block from one
  # other device (shift 1: half the block, the other half is local; else a whole block).
  assert prims.count("ppermute") == ppermutes * len(jax.tree.leaves(params)), prims
  assert "all_gather" not in prims and "psum" not in prims and "all_to_all" not in prims


def test_full_topology_uses_an_all_reduce():
  gossip = Gossip(topo.make_topology("full", 8))
  fn = _sharded(lambda x: gossip.mix_step(x, ())[0], 8)
  prims = _primitives(jax.make_jaxpr(fn)(_params(8)).jaxpr)
  assert "psum" in prims and "ppermute" not in prims and "all_gather" not in prims


# --- message delay ----------------------------------------------------------------------


def _run_gossip(gossip, params, updates, devices, metrics=False):
  """Applies x <- gossip(x + u_k) for each u_k; returns the x^k and the metrics."""
  state = gossip.init(jax.tree.map(np.asarray, params))

  def step(x, s, u):
    new = jax.tree.map(jnp.add, x, u)
    x, s, metrics = gossip.params(x, new, s)
    return x, s, metrics.get(gossip.name, {})

  mesh = Mesh(np.array(jax.devices()[:devices]), (AXIS,))
  out_specs = (P(AXIS), P(AXIS), P(AXIS))
  fn = jax.jit(
    jax.shard_map(step, mesh=mesh, in_specs=(P(AXIS),) * 3, out_specs=out_specs, check_vma=False)
  )
  xs, ms = [], []
  for u in updates:
    params, state, m = fn(params, state, u)
    xs.append(_stacked(params))
    ms.append(jax.tree.map(np.asarray, m))
  return xs, ms


def _delayed_reference(topology, x0, updates, delay):
  """numpy: x^{k+1} = w (y_i^k + sum_s y_{i-s}^{k-delay}), y^k = x^k + u^k, y^{<0} = x^0."""
  w = topology.weight
  x, ys, xs = x0, [], []
  for u in updates:
    y = x + u
    ys.append(y)
    sent = ys[-1 - delay] if len(ys) > delay else x0
    x = w * (y + sum(np.roll(sent, s, axis=0) for s in topology.shifts))
    xs.append(x)
  return xs


@pytest.mark.parametrize(
  "name,delay,devices,per_device",
  [("ring", 1, 4, 2), ("ring", 3, 8, 1), ("exponential", 2, 2, 4), ("full", 2, 4, 2)],
)
def test_delayed_gossip_matches_numpy_reference(name, delay, devices, per_device):
  n = devices * per_device
  topology = topo.make_topology(name, n)
  x0 = jax.tree.map(lambda x: np.repeat(x, n, axis=0), _params(1, seed=1))  # identical start
  updates = [_params(n, seed=10 + k) for k in range(6)]
  xs, _ = _run_gossip(Gossip(topology, delay=delay), x0, updates, devices)
  reference = _delayed_reference(topology, _stacked(x0), [_stacked(u) for u in updates], delay)
  # The reference itself: with delay 0 it is plain mixing, and the augmented graph of the
  # paper's Appendix B reproduces the delayed recursion.
  no_delay = _delayed_reference(topology, _stacked(x0), [_stacked(updates[0])], 0)
  np.testing.assert_allclose(
    no_delay[0], topology.mixing_matrix() @ (_stacked(x0) + _stacked(updates[0]))
  )
  big = topo.augmented_mixing_matrix(topology.mixing_matrix(), delay)
  state = np.concatenate([_stacked(x0)] * (delay + 1))
  for k, u in enumerate(updates):
    state = big @ (state + np.concatenate([_stacked(u)] + [np.zeros_like(_stacked(u))] * delay))
    np.testing.assert_allclose(state[:n], reference[k], atol=1e-12)
  for k, (got, want) in enumerate(zip(xs, reference)):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"update {k}")


def test_delayed_gossip_sends_before_the_update_is_computed():
  """With delay >= 1 the ppermutes read only the previous update's parameters (the
  outbox), so XLA may overlap the transfer with this update's rollout and gradient."""
  gossip = Gossip(topo.make_topology("exponential", 8), delay=2)
  x0 = _params(8)
  state = gossip.init(x0)
  mesh = Mesh(np.array(jax.devices()), (AXIS,))
  fn = jax.shard_map(
    gossip.mix_step,
    mesh=mesh,
    in_specs=(P(AXIS), P(AXIS)),
    out_specs=(P(AXIS), P(AXIS)),
    check_vma=False,
  )
  (shard_map_eqn,) = jax.make_jaxpr(fn)(x0, state).jaxpr.eqns
  inner = shard_map_eqn.params["jaxpr"]
  n_params = len(jax.tree.leaves(x0))
  outbox = set(inner.invars[n_params : 2 * n_params])  # GossipState's first field
  sends = [e for e in inner.eqns if e.primitive.name == "ppermute"]
  assert len(sends) == 3 * n_params
  assert all(v in outbox for e in sends for v in e.invars)


def test_delay_changes_the_result():
  topology = topo.make_topology("ring", 8)
  x0 = _params(8, seed=1)
  updates = [_params(8, seed=10 + k) for k in range(3)]
  plain, _ = _run_gossip(Gossip(topology), x0, updates, 8)
  delayed, _ = _run_gossip(Gossip(topology, delay=1), x0, updates, 8)
  assert np.max(np.abs(plain[-1] - delayed[-1])) > 0.1


# --- consensus: identical learners stay identical; Prop. 1 bounds the distance ----------


@pytest.mark.parametrize(
  "name,peers,delay", [("ring", 1, 0), ("ring", 2, 2), ("exponential", 1, 1), ("full", 1, 0)]
)
def test_identical_learners_with_zero_updates_stay_identical(name, peers, delay):
  n = 8
  one = _params(1, seed=3)
  x0 = jax.tree.map(lambda x: np.repeat(x, n, axis=0), one)
  zeros = [jax.tree.map(np.zeros_like, x0) for _ in range(5)]
  xs, ms = _run_gossip(
    Gossip(topo.make_topology(name, n, peers), delay=delay, metrics=True), x0, zeros, 4
  )
  for x, m in zip(xs, ms):
    assert np.all(x == x[0]), "learners drifted apart"
    np.testing.assert_allclose(x[0], _stacked(one)[0], rtol=1e-6)
    assert np.all(m["prop1_bound"] == 0.0) and np.all(m["centered_update_norm"] == 0.0)
    assert np.all(m["consensus_distance"] < 1e-5)


@pytest.mark.parametrize(
  "name,peers,delay",
  [
    ("ring", 1, 0),
    ("ring", 2, 0),
    ("ring", 1, 2),
    ("exponential", 1, 0),
    ("exponential", 1, 1),
    ("full", 1, 0),
  ],
)
def test_consensus_distance_stays_below_the_prop1_bound(name, peers, delay):
  n, steps = 8, 30
  topology = topo.make_topology(name, n, peers)
  one = _params(1, seed=3)
  x0 = jax.tree.map(lambda x: np.repeat(x, n, axis=0), one)
  rng = np.random.default_rng(7)
  bias = rng.normal(size=(n, 1)).astype(np.float32)  # learners pull in different directions
  updates = [
    jax.tree.map(
      lambda x: (
        0.05 * rng.normal(size=x.shape) + 0.02 * bias.reshape((n,) + (1,) * (x.ndim - 1))
      ).astype(np.float32),
      x0,
    )
    for _ in range(steps)
  ]
  xs, ms = _run_gossip(Gossip(topology, delay=delay, metrics=True), x0, updates, 4)

  beta = topo.beta(topology.mixing_matrix())
  bound_no_delay, nodes = 0.0, n * (delay + 1)
  for k, (x, m, u) in enumerate(zip(xs, ms, updates)):
    centered = x - x.mean(axis=0)
    np.testing.assert_allclose(
      m["consensus_distance"], np.linalg.norm(centered, axis=1), rtol=1e-4, atol=1e-6
    )
    distance = np.linalg.norm(centered)
    np.testing.assert_allclose(m["consensus_distance_total"], distance, rtol=1e-4, atol=1e-6)
    g = _stacked(u)
    g_expected = np.sqrt(
      np.sum((g - g.sum(0) / nodes) ** 2) + (nodes - n) * np.sum((g.sum(0) / nodes) ** 2)
    )
    np.testing.assert_allclose(m["centered_update_norm"], g_expected, rtol=1e-4)
    bound = m["prop1_bound"]
    np.testing.assert_allclose(bound, bound[0])  # every learner holds the same bound
    assert distance <= bound[0] * (1 + 1e-5) + 1e-6, f"update {k}: {distance} > {bound[0]}"
    if delay == 0:  # B_{k+1} = beta (B_k + ||Pi U^k||)
      bound_no_delay = beta * (bound_no_delay + g_expected)
      np.testing.assert_allclose(bound[0], bound_no_delay, rtol=1e-4, atol=1e-6)
  if name != "full":
    assert distance > 0.01  # the test is not vacuous: learners did disagree


def test_grad_cosine_similarity_matches_numpy():
  n = 8
  grads = _params(n, seed=5)
  mesh = Mesh(np.array(jax.devices()[:4]), (AXIS,))
  fn = jax.jit(
    jax.shard_map(
      diagnostics.grad_cosine_similarity,
      mesh=mesh,
      in_specs=P(AXIS),
      out_specs=P(AXIS),
      check_vma=False,
    )
  )
  cos = np.asarray(fn(grads))
  g = _stacked(grads)
  g /= np.linalg.norm(g, axis=1, keepdims=True)
  np.testing.assert_allclose(cos, g @ g.T, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.diag(cos), 1.0, rtol=1e-6)


# --- GALA-A2C: the gossip combiner inside the A2C learner --------------------------------


@pytest.mark.slow
def test_gala_a2c_update_and_its_metrics():
  from galax.config import make_algorithm
  from galax.parallel.layout import to_host

  config = load_config(
    "cartpole_a2c",
    num_learners=4,
    envs_per_learner=4,
    num_devices=2,
    combine="gossip",
    updates_per_call=3,
    gossip__metrics=True,
    grad_similarity=True,
  )
  algorithm = make_algorithm(config)
  state = algorithm.init()
  initial = to_host(state.params)
  state, metrics = algorithm.step(state)
  params, metrics = to_host(state.params), to_host(metrics)
  algorithm.env.close()
  assert all(np.all(x == x[0]) for x in jax.tree.leaves(initial))  # identical start
  x = _stacked(params)
  assert np.linalg.norm(x - x.mean(0)) > 1e-4  # own envs, own updates: learners differ
  g = metrics["gossip"]
  np.testing.assert_allclose(
    g["consensus_distance"][-1], np.linalg.norm(x - x.mean(0), axis=1), rtol=1e-4, atol=1e-6
  )
  assert np.all(g["consensus_distance_total"] <= g["prop1_bound"] * (1 + 1e-5) + 1e-6)
  cos = metrics["grad_cosine"]
  assert cos.shape == (3, 4, 4)
  np.testing.assert_allclose(cos, np.swapaxes(cos, 1, 2), atol=1e-5)
  np.testing.assert_allclose(np.diagonal(cos, axis1=1, axis2=2), 1.0, rtol=1e-5)
  assert np.all(cos < 1.0 - 1e-6 + np.eye(4))  # different envs: different gradients


@pytest.mark.slow
def test_gala_a2c_step_gossips_with_ppermute_only():
  from galax.config import make_algorithm

  config = load_config(
    "cartpole_a2c",
    num_learners=8,
    envs_per_learner=2,
    num_devices=4,
    combine="gossip",
    updates_per_call=2,
  )
  algorithm = make_algorithm(config)
  prims = _primitives(jax.make_jaxpr(algorithm.step)(algorithm.abstract_init()).jaxpr)
  algorithm.env.close()
  assert "ppermute" in prims
  assert not {"all_gather", "psum", "all_to_all"} & set(prims), sorted(set(prims))


@pytest.mark.slow
def test_gala_training_writes_consensus_metrics(tmp_path):
  from galax.training.loop import train

  config = load_config(
    "cartpole_a2c",
    num_learners=2,
    envs_per_learner=4,
    combine="gossip",
    updates_per_call=5,
    total_env_steps=400,
    log_every_steps=200,
    tensorboard=False,
    target_return=0.0,
    gossip__metrics=True,
    grad_similarity=True,
  )
  result = train(config, workdir=str(tmp_path), log=lambda _: None)
  assert result.updates == 10
  with open(tmp_path / "metrics.csv") as f:
    header = f.readline().strip().split(",")
  for column in ("gossip/consensus_distance_total", "gossip/prop1_bound", "grad_cosine"):
    assert column in header
