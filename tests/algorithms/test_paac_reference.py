"""configs/pong_paac.py's update equals the PAAC authors' code, transcribed.

The authors' code (Alfredvc/paac at a8bb993; a copy in ../shared/papers/paac-authors-code/)
is TensorFlow 1; the reference below restates what it computes, with file:line references:

  targets    y_t = r_t + gamma y_{t+1} (1 - over_t), y_T = V(s_T)        paac.py:144-149
  advantage  A_t = y_t - V(s_t), V from acting (a constant)              paac.py:149
  log pi     log(pi + 1e-30), pi = softmax(logits)                       policy_v_network.py:29
  entropy    -sum_a pi log pi                                            policy_v_network.py:33
  actor      mean(-(log pi(a_t) A_t + beta H_t)), beta = 0.02            policy_v_network.py:46-51
  critic     mean(0.25 (y_t - V(s_t))^2)                                 policy_v_network.py:53
  loss       5.0 (actor + critic)                                        networks.py:112, pvn:57
  clip       g * 3 / max(||g||, 3) over all tensors (global norm)        actor_learner.py:56-59
  RMSProp    ms = 0.99 ms + 0.01 g^2 (ms starts at 1, TF1's slot),       actor_learner.py:33,
             w -= lr g / sqrt(ms + 0.1)                                  train.py:83-84
  lr         0.0224 (1 - global_step / 80M), global_step counted         actor_learner.py:119-123,
             before the update: (u + 1) x 160 at update u                paac.py:127, train.py:85-86
  init       U(+-1/sqrt(fan_in)) for weights and biases, every layer     networks.py:24-96

Only the network's forward pass is shared with galax (its flax `apply`); the loss is
differentiated by `jax.grad`, clipping and RMSProp run in float64 numpy. galax's side is
pong_paac's own: its settings (`from_config`), its network, `a2c_grads` and the optimizer
that `make_optimizer` builds. On a fixed batch (32 envs x t_max 5, some episode ends), three
updates must agree to 1e-5 of their size. The old pong_paac (the paper's entropy and clip,
a mean loss with value weight 0.5, orthogonal init, annealing over the run) fails it.
"""

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from galax.algorithms.a2c import a2c_grads
from galax.config import load as load_config
from galax.config import run_settings
from galax.core import networks, optimizers
from galax.core.rollout import Trajectory
from galax.envs import EnvSpec

T, B, U = 5, 32, 3  # t_max, envs, updates
LR0, ANNEAL, ENTROPY, VALUE, SCALE = 0.0224, 80_000_000, 0.02, 0.25, 5.0
CLIP, DECAY, EPS, MS0, GAMMA = 3.0, 0.99, 0.1, 1.0, 0.99
SPEC = EnvSpec("Pong-v5", "atari", (4, 84, 84), np.dtype(np.uint8), 6, "CHW", 27_000)


def authors_lr(global_step: int) -> float:
  """actor_learner.py:119-123."""
  return LR0 - global_step * LR0 / ANNEAL if global_step <= ANNEAL else 0.0


def batch(seed: int = 0) -> dict[str, np.ndarray]:
  """Random frames, actions and clipped rewards; mostly won points, so that the value error
  is large enough for the clip to act on some updates; about one step in six ends a game."""
  rng = np.random.default_rng(seed)
  return dict(
    obs=rng.integers(0, 256, (T + 1, B, *SPEC.obs_shape), np.uint8),
    actions=rng.integers(0, SPEC.num_actions, (T, B)),
    rewards=rng.choice([-1.0, 0.0, 1.0, 1.0], (T, B)),
    over=rng.random((T, B)) < 0.17,
  )


def authors_targets(rewards, over, values, bootstrap):
  """paac.py:144-149: y_t and the advantage y_t - v_t, in float64."""
  y, adv, estimated = np.zeros((T, B)), np.zeros((T, B)), np.float64(bootstrap)
  for t in reversed(range(T)):
    estimated = rewards[t] + GAMMA * estimated * (1.0 - over[t])
    y[t], adv[t] = estimated, estimated - values[t]
  return y, adv


def make_authors_grad(apply: Callable) -> Callable:
  def loss(params, obs, actions, y, adv):  # flat [T * B] batch, as the authors feed it
    logits, v = apply(params, obs)
    pi = jax.nn.softmax(logits)
    log_pi = jnp.log(pi + 1e-30)
    entropy = -jnp.sum(pi * log_pi, axis=1)
    log_selected = jnp.sum(log_pi * jax.nn.one_hot(actions, SPEC.num_actions), axis=1)
    actor = jnp.mean(-(log_selected * adv + ENTROPY * entropy))
    critic = jnp.mean(0.25 * jnp.square(y - v))
    return SCALE * (actor + critic)

  return jax.jit(jax.value_and_grad(loss))


def authors_run(apply: Callable, params0: Any, data: dict[str, np.ndarray]):
  """U updates on the batch: (params, [U] losses, [U] unclipped global norms)."""
  forward, loss_grad = jax.jit(apply), make_authors_grad(apply)
  leaves, tree = jax.tree.flatten(params0)
  w = [np.asarray(x, np.float64) for x in leaves]
  ms = [np.full_like(x, MS0) for x in w]
  obs = data["obs"][:T].reshape(T * B, *SPEC.obs_shape)
  out_losses, norms = [], []
  for u in range(U):
    params = jax.tree.unflatten(tree, [np.float32(x) for x in w])
    values = np.asarray(forward(params, data["obs"])[1], np.float64)  # [T + 1, B]
    y, adv = authors_targets(data["rewards"], data["over"], values[:T], values[T])
    loss, grads = loss_grad(
      params,
      obs,
      data["actions"].reshape(-1),
      np.float32(y.reshape(-1)),
      np.float32(adv.reshape(-1)),
    )
    g = [np.asarray(x, np.float64) for x in jax.tree.leaves(grads)]
    norm = np.sqrt(sum(np.sum(np.square(x)) for x in g))
    g = [x * CLIP / max(norm, CLIP) for x in g]
    lr = authors_lr((u + 1) * T * B)
    for i, gi in enumerate(g):
      ms[i] = DECAY * ms[i] + (1.0 - DECAY) * np.square(gi)
      w[i] = w[i] - lr * gi / np.sqrt(ms[i] + EPS)
    out_losses.append(float(loss))
    norms.append(norm)
  return jax.tree.unflatten(tree, w), np.array(out_losses), np.array(norms)


def galax_run(config, data: dict[str, np.ndarray]):
  """U updates of pong_paac's update on the batch, from its own initial parameters:
  (params0, apply, params, [U] losses, [U] unclipped global norms)."""
  run = run_settings(config)
  network = run.network.build(SPEC)
  params = networks.init_params(network, SPEC, jax.random.PRNGKey(int(config.seed)))
  settings = run.optimizer
  env_steps_per_update = T * int(config.envs_per_learner)
  total_updates = int(config.total_env_steps) // env_steps_per_update
  optimizer, _ = optimizers.make_optimizer(
    settings,
    int(config.envs_per_learner),
    1,
    settings.anneal_updates(total_updates, env_steps_per_update),
  )
  returns, loss = run.returns, run.loss
  over = jnp.asarray(data["over"])

  @jax.jit
  def update(params, opt_state):
    logits, values = network.apply(params, data["obs"])
    traj = Trajectory(
      obs=data["obs"][:T],
      actions=jnp.asarray(data["actions"], jnp.int32),
      rewards=jnp.asarray(data["rewards"], jnp.float32),
      terminated=over,
      truncated=jnp.zeros_like(over),
      valid=jnp.ones_like(over),
      behaviour_logits=logits[:T],
      values=values,
      episode_over=over,
      episode_return=jnp.zeros((T, B)),
      episode_length=jnp.zeros((T, B), jnp.int32),
    )
    grads, terms = a2c_grads(network.apply, returns, loss, params, traj)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))
    return jax.tree.map(jnp.add, params, updates), opt_state, terms.total, norm

  params0, opt_state, out_losses, norms = params, optimizer.init(params), [], []
  for _ in range(U):
    params, opt_state, total, norm = update(params, opt_state)
    out_losses.append(float(total))
    norms.append(float(norm))
  return params0, network.apply, params, np.array(out_losses), np.array(norms)


def assert_updates_close(actual, expected, start) -> None:
  """|actual - expected| <= 1e-5 max|expected - start| + U float32 ulps, per tensor: 1e-5 of
  the U updates' largest step in the tensor (single elements whose gradient nearly cancels
  carry float32 sums' rounding), plus galax's float32 rounding of each update's result."""
  for (path, a), r, p0 in zip(
    jax.tree_util.tree_flatten_with_path(actual)[0],
    jax.tree.leaves(expected),
    jax.tree.leaves(start),
  ):
    ulp = np.spacing(np.maximum(np.abs(p0), np.abs(r)).astype(np.float32))
    excess = np.abs(np.asarray(a, np.float64) - r) - (1e-5 * np.abs(r - p0).max() + U * ulp)
    assert excess.max() <= 0, (
      f"{jax.tree_util.keystr(path)}: off by {excess.max():.3g} beyond 1e-5 of the update"
    )


def test_pong_paac_initialises_as_the_authors():
  """networks.py:24-96: every weight and bias U(+-1/sqrt(fan_in)), heads included."""
  config = load_config("pong_paac")
  network = run_settings(config).network.build(SPEC)
  params = networks.init_params(network, SPEC, jax.random.PRNGKey(0))["params"]
  fan_ins = {"Conv_0": 8 * 8 * 4, "Conv_1": 4 * 4 * 16, "Dense_0": 9 * 9 * 32}
  layers = {**params["torso"], "policy": params["Dense_0"], "value": params["Dense_1"]}
  assert len(layers) == 5
  for name, layer in layers.items():
    bound = 1.0 / np.sqrt(fan_ins.get(name, 256))
    for leaf, x in layer.items():
      x = np.asarray(x)
      assert np.abs(x).max() <= bound, (name, leaf)
      # Uniform on [-bound, bound]: std bound / sqrt 3, the whole range used.
      assert np.abs(x).max() > 0.8 * bound, (name, leaf)
      if x.size >= 256:
        assert abs(x.std() * np.sqrt(3) / bound - 1) < 0.15, (name, leaf)


def test_pong_paac_anneals_as_the_authors():
  """The lr at update u is the authors' at global step (u + 1) 160, to one update, over
  80M agent steps whatever the run's length."""
  for total in (80_000_000, 15_000_000):
    config = load_config("pong_paac", total_env_steps=total)
    settings = run_settings(config).optimizer
    per_update = T * config.envs_per_learner
    schedule = optimizers.make_schedule(
      settings, config.envs_per_learner, 1, settings.anneal_updates(total // per_update, per_update)
    )
    for u in (0, 1, 99_999, 249_999, 499_998, 499_999, 500_000, 700_000):
      error = abs(float(schedule(u)) - authors_lr((u + 1) * per_update))
      assert error <= LR0 * per_update / ANNEAL + 1e-9, u


@pytest.fixture(scope="module")
def data():
  return batch()


def test_pong_paac_update_equals_the_authors_code(data):
  config = load_config("pong_paac")
  params0, apply, params, galax_losses, galax_norms = galax_run(config, data)
  ref_params, ref_losses, ref_norms = authors_run(apply, params0, data)
  assert (ref_norms > CLIP).any(), ref_norms  # the clip acts on this batch
  np.testing.assert_allclose(galax_losses, ref_losses, rtol=1e-5)
  np.testing.assert_allclose(galax_norms, ref_norms, rtol=1e-5)
  assert_updates_close(params, ref_params, params0)
