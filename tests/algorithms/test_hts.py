"""HTS-RL (galax/algorithms/hts/segment.py): versions of every update, determinism, delay-off
consistency with A2C / PPO, the send -> learner -> recv order, config errors."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from algorithm_runs import small_mlp_config

from galax.algorithms.a2c import a2c_grads
from galax.algorithms.hts.ordering import after
from galax.config import make_algorithm, set_fields, validate
from galax.core.rollout import Trajectory


def make_config(algorithm="hts_a2c", **overrides):
  c = small_mlp_config("CartPole-v1", (32, 32), envs_per_learner=16, updates_per_call=1)
  c.algorithm = algorithm
  c.ppo.clip = 0.2
  c.total_env_steps = 1_000_000
  return validate(set_fields(c, overrides))


def host(tree):
  return jax.tree.map(np.asarray, tree)


def run(config, segments, hlo=None):
  """Runs `segments` single-segment calls; returns host copies of states and metrics.

  `hlo` (a list) receives the compiled program's text (the same compilation `step` uses).
  """
  algo = make_algorithm(config)
  try:
    state, step = algo.init(), algo.step
    if hlo is not None:  # run the compiled program whose text is kept (not a second compile)
      step = algo.step.lower(state).compile()
      hlo.append(step.as_text())
    states, metrics = [host(state)], []
    for _ in range(segments):
      state, m = step(state)
      states.append(host(state))  # host copies: `step` donates its input
      metrics.append(host(m))
    return algo, states, metrics
  finally:
    algo.env.close()


def assert_trees_equal(a, b):
  flat_a, tree_a = jax.tree.flatten(a)
  flat_b, tree_b = jax.tree.flatten(b)
  assert tree_a == tree_b
  for x, y in zip(flat_a, flat_b):
    np.testing.assert_array_equal(x, y)


def time_major_storage(state) -> Trajectory:
  return jax.tree.map(lambda x: np.swapaxes(x, 0, 1), state.extra.storage)


# --- versions: data and gradient at theta_{k-1}, applied to theta_k --------------------

SEGMENTS = 4


def sgd_a2c_config(**overrides):
  return make_config(
    "hts_a2c",
    **{
      "optimizer.name": "sgd",
      "optimizer.learning_rate": 0.05,
      "optimizer.max_grad_norm": 0.0,
      **overrides,
    },
  )


A2C_HLO = []  # the compiled segment of `a2c_sgd_run` (4 micro-batches)


@pytest.fixture(scope="module")
def a2c_sgd_run():
  return run(sgd_a2c_config(), SEGMENTS + 1, hlo=A2C_HLO)


@pytest.mark.slow
def test_versions_of_every_update(a2c_sgd_run):
  _, states, metrics = a2c_sgd_run
  for k, m in enumerate(metrics):
    v = {key: int(x[0, 0]) for key, x in m["hts"].items()}
    assert v["applied_to_version"] == k and v["new_version"] == k + 1
    if k == 0:  # nothing to learn from yet: theta_1 = theta_0, optimizer untouched
      assert not v["learned"] and v["data_version"] == -1
      assert_trees_equal(states[1].params, states[0].params)
      assert_trees_equal(states[1].opt_state, states[0].opt_state)
    else:
      assert v["learned"]
      assert v["data_version"] == v["grad_version"] == k - 1
    # The storage left for segment k + 1 was filled by theta_k, which is also the
    # behaviour parameter set carried along.
    extra = states[k + 1].extra
    assert int(extra.storage_version[0]) == int(extra.behaviour_version[0]) == k
    assert_trees_equal(extra.behaviour_params, states[k].params)


@pytest.mark.slow
def test_updates_follow_eq6(a2c_sgd_run):
  """theta_{k+1} - theta_k = -lr * grad L(theta_{k-1}; D_{k-1}), recomputed independently."""
  algo, states, _ = a2c_sgd_run
  apply_fn = algo.network.apply
  lr = algo.setup.settings.optimizer.learning_rate
  settings = algo.setup.settings.returns, algo.setup.settings.loss
  squeeze = lambda tree: jax.tree.map(lambda x: x[0], tree)
  # Jitted once (op by op, each op compiles apart): the network and the recomputed gradient.
  apply_fn = jax.jit(apply_fn)
  grad_fn = jax.jit(lambda params, storage: a2c_grads(apply_fn, *settings, params, storage)[0])
  for k in range(1, len(states) - 1):
    storage = time_major_storage(states[k])  # D_{k-1}, filled by theta_{k-1}
    theta_prev, theta_k = squeeze(states[k - 1].params), squeeze(states[k].params)
    # The storage really was collected by theta_{k-1}:
    logits, _ = apply_fn(theta_prev, storage.obs)
    np.testing.assert_allclose(storage.behaviour_logits, logits, rtol=1e-5, atol=1e-6)
    grads = grad_fn(theta_prev, storage)
    step = jax.tree.map(lambda new, old: new - old, squeeze(states[k + 1].params), theta_k)
    expected = jax.tree.map(lambda g: -lr * g, grads)
    jax.tree.map(
      lambda s, e: np.testing.assert_allclose(s, e, rtol=1e-4, atol=1e-6), step, expected
    )
    if k >= 2:  # the gradient at theta_k (no delay) would give another step
      wrong = grad_fn(theta_k, storage)
      diff = max(
        float(np.max(np.abs(-lr * w - s)))
        for w, s in zip(jax.tree.leaves(wrong), jax.tree.leaves(step))
      )
      assert diff > 1e-5


def ppo_config(**overrides):
  """HTS-PPO at lr 3e-3 and clip 1e-3: where its epochs start off the behaviour policy
  (the "current" point, the default), the first minibatch's clip fraction shows it."""
  return make_config("hts_ppo", **{"optimizer.learning_rate": 3e-3, "ppo.clip": 1e-3, **overrides})


@functools.lru_cache(maxsize=None)
def ppo_run():
  """`SEGMENTS` segments of `ppo_config()` (host copies), built once per process: also
  test_hts_gradient_point's "current" run. 16 envs, 1 env thread, one PPO minibatch
  update per env step (4 micro-batches), 1 actor."""
  return run(ppo_config(), SEGMENTS)


@pytest.mark.slow
def test_hts_ppo_versions():
  _, states, metrics = ppo_run()
  assert_trees_equal(states[1].params, states[0].params)
  for k, m in enumerate(metrics):
    v = {key: int(x[0, 0]) for key, x in m["hts"].items()}
    assert v["applied_to_version"] == v["grad_version"] == k  # PPO starts at theta_k ...
    assert v["data_version"] == k - 1  # ... on D_{k-1}, ratios against theta_{k-1}
    assert v["learned"] == (k > 0)
    assert int(states[k + 1].extra.storage_version[0]) == k
  assert not np.array_equal(
    states[3].params["params"]["Dense_0"]["kernel"], states[2].params["params"]["Dense_0"]["kernel"]
  )


# --- determinism --------------------------------------------------------------------

# Env worker threads, the micro-batch schedule and the actor groups change nothing.
VARIANT = {"env.num_threads": 2, "hts.microbatches": 1, "hts.num_actors": 2}


@pytest.mark.slow
def test_bitwise_determinism_hts_ppo_repeat():
  final = run(ppo_config(), SEGMENTS)[1][-1]
  assert_trees_equal(final.params, ppo_run()[1][-1].params)


@pytest.mark.slow
def test_bitwise_determinism_hts_ppo_threads_microbatches_actors():
  final = run(ppo_config(**VARIANT), SEGMENTS)[1][-1]
  baseline = ppo_run()[1][-1]
  assert_trees_equal(final.params, baseline.params)
  assert_trees_equal(final.opt_state, baseline.opt_state)
  assert_trees_equal(final.extra.storage, baseline.extra.storage)


@pytest.mark.slow
def test_bitwise_determinism_hts_a2c_threads_microbatches_actors(a2c_sgd_run):
  """A2C's per-step gradient units: 4 micro-batches, 1 actor, 1 thread == 1, 2, 2."""
  final = run(sgd_a2c_config(**VARIANT), SEGMENTS + 1)[1][-1]
  baseline = a2c_sgd_run[1][-1]
  assert_trees_equal(final.params, baseline.params)
  assert_trees_equal(final.extra.behaviour_params, baseline.extra.behaviour_params)


# --- delay off: plain A2C / PPO -------------------------------------------------------


@functools.lru_cache(maxsize=None)
def delay_off_run(algorithm, gradient_point=None):
  """3 segments with the delay off (host copies), built once per process: HTS-PPO's is also
  test_hts_gradient_point's "current" point (envpool programs hold the pool's handle, so
  the compile cache cannot serve a second build)."""
  point = {} if gradient_point is None else {"hts.gradient_point": gradient_point}
  return run(make_config(algorithm, **{"hts.delayed": False, **point}), 3)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,plain", [("hts_a2c", "a2c"), ("hts_ppo", "ppo")])
def test_delay_off_reduces_to_plain(algorithm, plain):
  hts = delay_off_run(algorithm)
  ref = run(make_config(plain), 3)
  for k in range(1, 4):
    assert int(hts[2][k - 1]["hts"]["data_version"][0, 0]) == k - 1
    assert int(hts[2][k - 1]["hts"]["grad_version"][0, 0]) == k - 1
    jax.tree.map(
      lambda x, y: np.testing.assert_allclose(x, y, rtol=2e-5, atol=1e-6),
      hts[1][k].params,
      ref[1][k].params,
    )
  # The same envs took the same actions: identical episode statistics.
  for m_hts, m_ref in zip(hts[2], ref[2]):
    assert_trees_equal(m_hts["episodes"], m_ref["episodes"])


# --- send -> learner -> recv ----------------------------------------------------------


def test_after_is_a_bitwise_identity():
  x = dict(
    f=jnp.array([0.0, -0.0, jnp.nan, jnp.inf, 1.5]),
    i=jnp.arange(3, dtype=jnp.uint8),
    b=jnp.array([True, False]),
    z=jnp.int32(0),
  )
  dep = jnp.array([jnp.nan, 2.0])
  y = jax.jit(after)(x, dep)
  for a, b in zip(jax.tree.leaves(x), jax.tree.leaves(y)):
    np.testing.assert_array_equal(np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8))


def _computations(hlo: str) -> dict[str, list[str]]:
  """HLO text -> {computation name: its instruction lines, in schedule order}."""
  comps, name = {}, None
  for line in hlo.splitlines():
    header = re.match(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$", line)
    if header and not line.startswith(" "):
      name = header.group(1)
      comps[name] = []
    elif name and line.startswith(" "):
      comps[name].append(line)
  return comps


def _called(line: str) -> list[str]:
  names = re.findall(r"(?:calls|to_apply|body|condition)=%([\w.\-]+)", line)
  for group in re.findall(r"branch_computations=\{([^}]*)\}", line):
    names += [n.strip().lstrip("%") for n in group.split(",")]
  return names


@pytest.mark.slow
def test_learner_runs_between_send_and_recv(a2c_sgd_run):
  """In the compiled segment, every learner unit (the backward pass) runs between a send
  and the next recv: the env threads step while the learner computes."""
  del a2c_sgd_run  # fills A2C_HLO
  comps = _computations(A2C_HLO[0])
  has_grad = {}

  def grad_inside(name, seen=()):
    if name not in has_grad:
      lines = comps.get(name, [])
      has_grad[name] = any(re.search(r'op_name="[^"]*transpose\(jvp', l) for l in lines) or any(
        grad_inside(c) for l in lines for c in _called(l) if c not in seen
      )
    return has_grad[name]

  # The computation holding the env steps: the one with the send custom calls.
  segment = [
    n
    for n, lines in comps.items()
    if any("custom_call_target" in l and "_send" in l for l in lines)
  ]
  assert len(segment) == 1
  events = []
  for line in comps[segment[0]]:
    if "custom_call_target" in line and "_send" in line:
      events.append("send")
    elif "custom_call_target" in line and "_recv" in line:
      events.append("recv")
    elif re.search(r'op_name="[^"]*transpose\(jvp', line) or any(
      grad_inside(c) for c in _called(line)
    ):
      events.append("grad")
  assert events.count("send") == 4, events  # alpha = 4 hosted steps
  inside, outside, open_window = 0, 0, False
  for e in events:
    if e == "send":
      open_window = True
    elif e == "recv":
      open_window = False
    else:
      inside += open_window
      outside += not open_window
  assert inside >= 4 and outside == 0, events


# --- config errors ----------------------------------------------------------------------


def test_bad_hts_configs_raise():
  with pytest.raises(ValueError, match="alpha"):
    make_config(**{"hts.alpha": 6})  # not a multiple of t_max = 4
  with pytest.raises(ValueError, match="num_actors"):
    make_config(**{"hts.num_actors": 3})
  with pytest.raises(ValueError, match="microbatches"):
    algo = make_algorithm(make_config(**{"hts.microbatches": 3}))
    algo.env.close()


@pytest.mark.parametrize("name", ["hts_a2c_atari", "hts_ppo_gfootball", "ppo_gfootball"])
def test_experiment_configs_validate(name):
  import importlib.util
  import os

  path = os.path.join(os.path.dirname(__file__), "..", "..", "configs", f"{name}.py")
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = validate(module.get_config())
  assert config.algorithm in ("hts_a2c", "hts_ppo", "ppo")
  if config.algorithm == "hts_ppo":  # Table A6 / the authors' 3 vs 1 script
    assert (config.t_max, config.hts.alpha, config.gamma, config.ppo.clip) == (
      128,
      128,
      0.993,
      0.08,
    )
    assert (config.ppo.epochs, config.ppo.minibatches, config.loss.entropy_coef) == (2, 8, 0.003)
    assert config.optimizer.max_grad_norm == 0.64 and config.optimizer.anneal == "linear"


def test_each_hosted_unit_is_traced_once(monkeypatch):
  """One trace per unit call site: not one per changed carry entry, nor one more for the
  isolated call's dead branch (HTS-PPO, 4 pieces of 1 unit: was 4 x 3 entries x 2 = 24)."""
  from galax.algorithms.ppo import PPOLearner

  calls = []
  unit = PPOLearner.unit
  monkeypatch.setattr(PPOLearner, "unit", lambda self, c, u: (calls.append(u), unit(self, c, u))[1])
  algo = make_algorithm(make_config("hts_ppo", **{"hts.microbatches": 4}))
  try:
    algo.step.lower(algo.abstract_init())  # traced on the abstract state: no init compile
  finally:
    algo.env.close()
  assert len(calls) == 4
