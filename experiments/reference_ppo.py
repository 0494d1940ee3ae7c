"""An independent PPO / A2C on raw gymnax, to cross-check galax's MinAtar learning curves.

It imports nothing from galax: its own network (the MinAtar conv, 16 3x3 + fc 128, as
galax's "minatar"), rollout, GAE, PPO-clip loss and Adam, written directly on gymnax's
auto-resetting `step` (a time-limit end counts as done: no truncation bootstrap). When a
galax run does not learn what a paper or a baseline says it should, this answers whether
the gap is galax's or the setting's: run both at the same settings and compare.

  python -m experiments.reference_ppo --env=Asterix-MinAtar --steps=1000000 --seed=0
  python -m experiments.reference_ppo --env=Asterix-MinAtar --t_max=16 --epochs=1 \
      --minibatches=1 --lr=1e-3 --normalize_advantages=false   # A2C's shape (minatar_a2c)

The defaults are configs/minatar_ppo.py's before 2026-11 (it now has Adam 5e-3 and an MLP): 64 envs
x 128 steps, 4 epochs x 8 minibatches, gamma 0.99, GAE 0.95, clip 0.2 (policy and value), entropy
0.01, value 0.5, Adam 5e-4
annealed linearly to 0 over the run, eps 1e-5, global-norm clip 0.5. Advantages are
normalized per minibatch (galax normalizes over the whole batch). Prints the mean return of
the episodes completed in each logging window.
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax


class MinAtarNet(nn.Module):
  num_actions: int

  @nn.compact
  def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    relu_init = nn.initializers.orthogonal(np.sqrt(2))
    x = nn.relu(
      nn.Conv(16, (3, 3), padding="VALID", kernel_init=relu_init)(obs.astype(jnp.float32))
    )
    x = nn.relu(nn.Dense(128, kernel_init=relu_init)(x.reshape(x.shape[0], -1)))
    logits = nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(0.01))(x)
    return logits, nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0))(x)[:, 0]


def gae(rewards, dones, values, last_value, gamma, lam):
  """A_t = delta_t + gamma lam (1 - d_t) A_{t+1}, delta_t = r_t + gamma (1 - d_t) V_{t+1} - V_t."""

  def back(carry, step):
    advantage, next_value = carry
    reward, done, value = step
    delta = reward + gamma * (1.0 - done) * next_value - value
    advantage = delta + gamma * lam * (1.0 - done) * advantage
    return (advantage, value), advantage

  _, advantages = jax.lax.scan(
    back, (jnp.zeros_like(last_value), last_value), (rewards, dones, values), reverse=True
  )
  return advantages


def ppo_loss(p, batch, net: MinAtarNet, args: argparse.Namespace) -> jax.Array:
  """PPO-clip's loss of one minibatch: clipped surrogate, clipped value loss (x 0.5),
  entropy bonus (x 0.01); advantages normalized per minibatch if asked."""
  obs, actions, old_logp, old_values, advantages, targets = batch
  logits, values = net.apply(p, obs)
  logp_all = jax.nn.log_softmax(logits)
  ratio = jnp.exp(jnp.take_along_axis(logp_all, actions[:, None], 1)[:, 0] - old_logp)
  if args.normalize_advantages:
    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
  policy = -jnp.minimum(
    ratio * advantages, jnp.clip(ratio, 1 - args.clip, 1 + args.clip) * advantages
  ).mean()
  clipped = old_values + jnp.clip(values - old_values, -args.clip, args.clip)
  value = 0.5 * jnp.maximum((values - targets) ** 2, (clipped - targets) ** 2).mean()
  entropy = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
  return policy + 0.5 * value - 0.01 * entropy


def make_act(net: MinAtarNet, env, params, n: int):
  """One env step of the n envs as a scan body: sample, step (gymnax auto-resets), and the
  trajectory row with the finished episodes' returns."""

  def act(carry, _):
    p, env_state, obs, key, episode_return = carry
    key, action_key, step_key = jax.random.split(key, 3)
    logits, value = net.apply(p, obs)
    action = jax.random.categorical(action_key, logits)
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
    next_obs, env_state, reward, terminated, truncated, _ = jax.vmap(
      env.step, in_axes=(0, 0, 0, None)
    )(jax.random.split(step_key, n), env_state, action, params)
    done = terminated | truncated
    episode_return = episode_return + reward
    finished = (done, episode_return)
    episode_return = jnp.where(done, 0.0, episode_return)
    return (p, env_state, next_obs, key, episode_return), (
      obs,
      action,
      logp,
      value,
      reward,
      done.astype(jnp.float32),
      finished,
    )

  return act


def make_train(args: argparse.Namespace):
  # Imported here: gymnax (with the seaborn, pandas and matplotlib it pulls in) is most of
  # this script's start-up, which --help need not pay (issue 73).
  import gymnax

  env, params = gymnax.make(args.env)
  net = MinAtarNet(env.action_space(params).n)
  n, t = args.envs, args.t_max
  updates = args.steps // (n * t)
  tx = optax.chain(
    optax.clip_by_global_norm(0.5),
    optax.adam(
      optax.linear_schedule(args.lr, 0.0, updates * args.epochs * args.minibatches), eps=1e-5
    ),
  )
  loss_fn = functools.partial(ppo_loss, net=net, args=args)
  act = make_act(net, env, params, n)

  @jax.jit
  def update(p, opt_state, env_state, obs, key, episode_return):
    (p, env_state, obs, key, episode_return), traj = jax.lax.scan(
      act, (p, env_state, obs, key, episode_return), None, t
    )
    observations, actions, logps, values, rewards, dones, (ended, returns) = traj
    advantages = gae(rewards, dones, values, net.apply(p, obs)[1], 0.99, 0.95)
    flat = lambda x: x.reshape((n * t,) + x.shape[2:])
    data = tuple(map(flat, (observations, actions, logps, values, advantages, advantages + values)))
    size = n * t // args.minibatches
    for _ in range(args.epochs):  # unrolled: XLA:CPU runs conv gradients slowly in loops
      key, perm_key = jax.random.split(key)
      perm = jax.random.permutation(perm_key, n * t)
      for m in range(args.minibatches):
        batch = tuple(x[perm[m * size : (m + 1) * size]] for x in data)
        updates_, opt_state = tx.update(jax.grad(loss_fn)(p, batch), opt_state, p)
        p = optax.apply_updates(p, updates_)
    stats = (jnp.sum(jnp.where(ended, returns, 0.0)), jnp.sum(ended))
    return p, opt_state, env_state, obs, key, episode_return, stats

  def init(seed: int):
    reset_key, init_key, key = jax.random.split(jax.random.PRNGKey(seed), 3)
    obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, n), params)
    p = net.init(init_key, obs[:1])
    return p, tx.init(p), env_state, obs, key, jnp.zeros(n)

  return init, update, updates


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--env", default="Breakout-MinAtar", help="a gymnax id")
  parser.add_argument("--steps", type=int, default=1_000_000)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--envs", type=int, default=64)
  parser.add_argument("--t_max", type=int, default=128)
  parser.add_argument("--epochs", type=int, default=4)
  parser.add_argument("--minibatches", type=int, default=8)
  parser.add_argument("--lr", type=float, default=5e-4)
  parser.add_argument("--clip", type=float, default=0.2)
  parser.add_argument("--normalize_advantages", type=lambda s: s.lower() != "false", default=True)
  parser.add_argument("--log_every_steps", type=int, default=100_000)
  parser.add_argument("--out", default="", help="optional JSON file for the curve")
  args = parser.parse_args()
  init, update, updates = make_train(args)
  state, curve, window = init(args.seed), [], [0.0, 0]
  start, next_log, per_update = time.perf_counter(), args.log_every_steps, args.envs * args.t_max
  for u in range(1, updates + 1):
    *state, (total, count) = update(*state)
    window = [window[0] + float(total), window[1] + int(count)]
    if u * per_update >= next_log or u == updates:
      mean = window[0] / max(window[1], 1)
      curve.append(
        dict(
          steps=u * per_update,
          mean_return=mean,
          episodes=window[1],
          seconds=time.perf_counter() - start,
        )
      )
      print(
        f"{args.env} steps {u * per_update:>9d} | return {mean:6.2f} over {window[1]} "
        f"episodes | {time.perf_counter() - start:6.0f} s",
        flush=True,
      )
      window, next_log = [0.0, 0], next_log + args.log_every_steps
  if args.out:
    with open(args.out, "w") as f:
      json.dump(dict(args=vars(args), curve=curve), f, indent=1)


if __name__ == "__main__":
  main()
