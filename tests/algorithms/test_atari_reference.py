"""galax's PAAC update on real Atari (envpool Pong-v5) equals an independent reference.

Written when configs/pong_paac.py, then at the paper's settings, kept its policy near
uniform (2026-11-25; at the authors' code's settings it now learns Pong, docs/results.md),
it pins that no implementation bug sits in the env adapter, the rollout and its action
sampling, the n-step returns, the loss, the gradient clipping or TF-style RMSProp: over one
`step` call of pong_paac's update at a small size (4 envs, t_max 5, 13 updates, lr 0.0007 x
4 annealed to 0 over the 13 updates: `optimizer.anneal_steps` = the run's 260 agent steps),
galax's parameters, RMSProp mean squares, per-update losses and gradient norms, episode
statistics, last observations and sampling keys equal those of a reference that shares only
the flax network with galax: envpool's plain numpy API with its own NEXT_STEP bookkeeping,
the documented sampling rule, numpy n-step returns, a hand-written loss differentiated by
`jax.grad`, numpy global-norm clipping and RMSProp.

The 62-step time limit puts Pong's first points (agent steps 60-61), a truncation that
bootstraps from the final observation and envpool's auto-reset step inside the rollouts,
and `MAX_GRAD_NORM` = 0.5 makes clipping act on some updates only (pong_paac's 3 acts on
none: these gradients' norms are 0.004 to 2.8); the test checks that all of it happened.
tests/algorithms/test_paac_reference.py checks the loss and optimizer against the authors'
code itself.
"""

from typing import Any, Callable, NamedTuple

import envpool
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from galax.config import load as load_config
from galax.config import make_algorithm

B, T, U, SEED, LIMIT = 4, 5, 13, 0, 62  # envs, t_max, updates, seed, time limit
LR, GAMMA, DECAY, EPS, NU0 = 0.0007 * B, 0.99, 0.99, 0.1, 1.0  # pong_paac's, lr x envs
ENTROPY, VALUE = 0.02, 0.25  # pong_paac's (the authors' code)
MAX_GRAD_NORM = 0.5  # pong_paac's 3 never acts this early: norms are 0.004 to 2.8
ENV_OPTIONS = dict(
  img_height=84,
  img_width=84,
  gray_scale=True,
  frame_skip=4,
  stack_num=4,
  noop_max=30,
  repeat_action_probability=0.0,
  episodic_life=False,
  reward_clip=True,
  max_episode_steps=LIMIT,
  num_threads=1,
)


class Run(NamedTuple):
  params: Any  # one learner's parameters after the U updates
  nu: Any  # RMSProp's mean squares
  losses: np.ndarray  # [U] loss of each update
  grad_norms: np.ndarray  # [U] global norm of each update's (unclipped) gradient
  episodes: np.ndarray  # [U, B, T, 3]: (over, return, length) of each step
  obs: np.ndarray  # [B, ...] the envs' observations after the call
  keys: np.ndarray  # [B, 2] the sampling keys after the call


class Coverage(NamedTuple):
  rewards: int  # nonzero rewards
  truncations: int
  invalid: int  # auto-reset steps
  clipped: int  # updates whose gradient was clipped


class RefEnv:
  """envpool's numpy API; the step after an episode's end is an auto-reset step (invalid)."""

  def __init__(self):
    self.env = envpool.make(
      "Pong-v5", env_type="gymnasium", num_envs=B, seed=SEED, **ENV_OPTIONS
    )  # env j has seed SEED + j, as galax's pool
    self.obs, _ = self.env.reset()
    self.reset_next = np.zeros(B, bool)
    self.ret, self.length = np.zeros(B), np.zeros(B, int)

  def step(self, actions: np.ndarray) -> tuple[np.ndarray, ...]:
    """(reward, terminated, truncated, valid, episode stats [B, 3]); sets `self.obs`."""
    self.obs, reward, term, trunc, info = self.env.step(actions.astype(np.int32))
    valid = ~self.reset_next
    term, trunc = valid & term, valid & trunc & ~term
    over = valid & (info["terminated"].astype(bool) | trunc)  # the full game ended
    self.ret += np.where(valid, info["reward"], 0.0)
    self.length += valid
    stats = np.stack([over, self.ret, self.length], axis=-1)
    self.ret[over], self.length[over] = 0.0, 0
    self.reset_next = term | trunc
    return np.where(valid, reward, 0.0), term, trunc, valid, stats


def nstep_returns(
  rewards: np.ndarray, values: np.ndarray, term: np.ndarray, trunc: np.ndarray
) -> np.ndarray:
  """G_t = r_t (terminated), r_t + gamma V(o_{t+1}) (truncated: o_{t+1} is the true final
  observation), else r_t + gamma G_{t+1}; G_T = V(o_T). values: [T + 1, B]."""
  returns, g = np.zeros_like(rewards), values[-1]
  for t in reversed(range(len(rewards))):
    g = np.where(term[t], rewards[t], rewards[t] + GAMMA * np.where(trunc[t], values[t + 1], g))
    returns[t] = g
  return returns


def make_loss(apply: Callable) -> Callable:
  """jit(value_and_grad) of the A2C loss of a flat batch [T * B] (no galax code)."""

  def loss(params, obs, actions, returns, mask):
    """T (-mean(m log pi(a) A) - c_H mean(m H) + c_V mean(m (G - V)^2)), means over T * B:
    the loss summed over the t_max steps (pong_paac's sum_over_time)."""
    logits, values = apply(params, obs)  # obs [T * B, ...]
    logp = jax.nn.log_softmax(logits)
    adv = jax.lax.stop_gradient(returns - values)
    policy = -jnp.sum(mask * logp[jnp.arange(len(actions)), actions] * adv)
    entropy = -jnp.sum(mask * jnp.sum(jnp.exp(logp) * logp, axis=-1))
    value = jnp.sum(mask * jnp.square(returns - values))
    return T * (policy - ENTROPY * entropy + VALUE * value) / mask.size

  return jax.jit(jax.value_and_grad(loss))


def reference_run(apply: Callable, params0: Any) -> tuple[Run, Coverage]:
  """U updates of the reference from `params0`, in numpy except for the network."""

  @jax.jit
  def sample(keys, logits):  # per env: (key, draw) = split(key); a ~ categorical(draw)
    def one(key, logit):
      key, draw = jax.random.split(key)
      return key, jax.random.categorical(draw, logit)

    return jax.vmap(one)(keys, logits)

  forward, loss_grad = jax.jit(apply), make_loss(apply)
  leaves, tree = jax.tree.flatten(params0)
  x = [np.asarray(p, np.float64) for p in leaves]
  nu = [np.full_like(p, NU0) for p in x]
  f32 = lambda xs: jax.tree.unflatten(tree, [np.float32(p) for p in xs])
  keys = jnp.stack([jax.random.fold_in(jax.random.PRNGKey(SEED + 1), j) for j in range(B)])
  env, cover = RefEnv(), Coverage(0, 0, 0, 0)
  losses, norms, episodes = [], [], []
  for k in range(U):
    params = f32(x)
    obs, acts, vals, rews, terms, truncs, valids, stats = ([] for _ in range(8))
    for _ in range(T):
      logits, value = forward(params, env.obs)
      keys, actions = sample(keys, logits)
      obs.append(env.obs)
      acts.append(np.asarray(actions))
      vals.append(np.asarray(value))
      for out, row in zip((rews, terms, truncs, valids, stats), env.step(acts[-1])):
        out.append(row)
    vals.append(np.asarray(forward(params, env.obs)[1]))  # V(o_T)
    rews, terms, truncs, valids = map(np.array, (rews, terms, truncs, valids))
    returns = nstep_returns(rews, np.array(vals, np.float64), terms, truncs)
    loss, grads = loss_grad(
      params,
      np.concatenate(obs),
      np.concatenate(acts),
      np.float32(returns.reshape(-1)),
      np.float32(valids.reshape(-1)),
    )
    g = [np.asarray(x_, np.float64) for x_ in jax.tree.leaves(grads)]
    norm = np.sqrt(sum(np.sum(np.square(x_)) for x_ in g))
    g = [x_ * min(1.0, MAX_GRAD_NORM / norm) for x_ in g]  # global-norm clipping
    lr = LR * (1.0 - k / U)  # linear annealing to 0 over the run's U updates
    for i, gi in enumerate(g):  # TF RMSProp: eps inside the square root
      nu[i] = DECAY * nu[i] + (1.0 - DECAY) * np.square(gi)
      x[i] = x[i] - lr * gi / np.sqrt(nu[i] + EPS)
    losses.append(float(loss))
    norms.append(norm)
    episodes.append(np.stack(stats, axis=1))  # [B, T, 3]
    cover = Coverage(
      cover.rewards + int(np.count_nonzero(rews)),
      cover.truncations + int(truncs.sum()),
      cover.invalid + int((~valids).sum()),
      cover.clipped + int(norm > MAX_GRAD_NORM),
    )
  run = Run(
    jax.tree.unflatten(tree, x),
    jax.tree.unflatten(tree, nu),
    np.array(losses),
    np.array(norms),
    np.array(episodes),
    env.obs,
    np.asarray(keys),
  )
  env.env.close()
  return run, cover


def galax_run() -> tuple[Run, Any, Callable]:
  """One `step` call of pong_paac at the test's size: (run, initial params, the network's
  apply)."""
  config = load_config(
    "pong_paac",
    envs_per_learner=B,
    t_max=T,
    updates_per_call=U,
    total_env_steps=B * T * U,
    seed=SEED,
    env__max_episode_steps=LIMIT,
    env__num_threads=1,
    optimizer__anneal_steps=B * T * U,
    optimizer__max_grad_norm=MAX_GRAD_NORM,
  )
  alg = make_algorithm(config)
  try:
    for k in range(U):  # the reference's schedule is galax's
      np.testing.assert_allclose(alg.learning_rate(k), LR * (1 - k / U), rtol=1e-6)
    state = alg.init()
    params0 = jax.device_get(state.params)  # `step` donates `state`
    state, metrics = alg.step(state)
    params, nu, obs, keys, metrics = jax.device_get(
      (
        state.params,
        optax.tree_utils.tree_get(state.opt_state, "nu"),
        state.env_state.obs,
        state.action_keys,
        metrics,
      )
    )
  finally:
    alg.env.close()
  first = lambda tree: jax.tree.map(lambda leaf: leaf[0], tree)  # the one learner
  ep = metrics["episodes"]  # [U, B, T] each
  episodes = np.stack([ep["over"], ep["returns"], ep["lengths"]], axis=-1)
  run = Run(
    first(params),
    first(nu),
    metrics["loss"]["total"][:, 0],
    metrics["grad_norm"][:, 0],
    episodes,
    obs,
    keys,
  )
  return run, first(params0), alg.network.apply


def assert_float32_close(
  actual: np.ndarray, expected: np.ndarray, start: Any, magnitude: Any, name: str
) -> None:
  """|actual - expected| <= 1e-3 |expected - start| + U/2 float32 ulps of `magnitude`: a
  relative check of the U updates' sum, plus galax's float32 rounding of each update's
  result (at most half an ulp each; the largest observed sum is about 4.5 ulps)."""
  ulp = np.spacing(np.abs(np.asarray(magnitude, np.float32)))
  excess = np.abs(actual - expected) - (1e-3 * np.abs(expected - start) + U / 2 * ulp)
  assert excess.max() <= 0, f"{name}: off by {excess.max():.3g} beyond the tolerance"


@pytest.mark.slow  # 20-30 s on 2 busy CPU cores, most of it compiling galax's update
def test_pong_paac_update_equals_an_independent_reference():
  galax, params0, apply = galax_run()
  ref, cover = reference_run(apply, params0)
  # The rollouts hold what the update must get right, and clipping acts on some updates.
  assert cover.rewards > 0 and cover.truncations > 0 and cover.invalid > 0, cover
  assert 0 < cover.clipped < U, cover
  # The same envs, actions and sampling keys: identical observations and episodes.
  np.testing.assert_array_equal(galax.keys, ref.keys)
  np.testing.assert_array_equal(galax.obs, ref.obs)
  np.testing.assert_array_equal(galax.episodes[..., 0], ref.episodes[..., 0])
  over = ref.episodes[..., 0].astype(bool)  # return and length where an episode ended
  np.testing.assert_allclose(galax.episodes[over], ref.episodes[over])
  # The same update: losses and gradient norms of each update, then parameters and nu.
  np.testing.assert_allclose(galax.losses, ref.losses, rtol=2e-4, atol=1e-6)
  np.testing.assert_allclose(galax.grad_norms, ref.grad_norms, rtol=2e-4)
  named = jax.tree_util.tree_flatten_with_path(params0)[0]
  for (path, p0), p, r, nu, ref_nu in zip(
    named, *map(jax.tree.leaves, (galax.params, ref.params, galax.nu, ref.nu))
  ):
    name = jax.tree_util.keystr(path)
    assert_float32_close(p, r, p0, np.maximum(np.abs(p0), np.abs(r)), name)
    # nu = d^U nu_0 + (1 - d) sum_k d^(U-1-k) g_k^2: the relative part is the gradients'.
    assert_float32_close(nu, ref_nu, DECAY**U * NU0, NU0, "nu of " + name)
