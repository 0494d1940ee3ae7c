"""Where an A2C update's time goes, against raw env stepping (one learner, gymnax or envpool).

  python -m benchmarks.a2c_cost_split --config=cartpole_a2c --env=gymnax/CartPole-v1 \
      --num_envs=1024

Times, in one process and interleaved (median over rounds), one update's worth of work
(t_max steps of every env) built up piece by piece, each a jitted scan of updates:
  raw        env steps with uniformly random actions (the env's own limit),
  +forward   the policy network on every observation, greedy actions,
  +sampling  per-env categorical sampling with per-env keys (`rollout.sample_actions`),
  acting     the whole `rollout.rollout` (trajectory rows and the bootstrap value added),
  +gradient  acting plus the A2C gradient (`a2c.a2c_grads`) and a plain SGD step,
  a2c        galax's A2C update as the algorithm runs it (`make_algorithm(config).step`:
             RMSProp, clipping, metrics, finite checks),
and prints microseconds per update, each piece's increment, and the ratio of each to raw.
Every piece uses the algorithm's resolved choices (its block policy over one learner,
`learner_map`, `grad_chunks`). The increments say what bounds A2C's ratio to raw stepping on
this machine; XLA fuses the whole update its own way, so the last increment can be negative.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import jax
import jax.numpy as jnp

import galax
from benchmarks import cli, measure
from galax import config as config_lib
from galax.algorithms.a2c import a2c_grads
from galax.algorithms.registry import spec_for
from galax.config import run_settings
from galax.core.rollout import init_action_keys, rollout, sample_actions
from galax.envs import check_env_id
from galax.framework.algorithm import initial_params
from galax.framework.update import block_policy, make_setup
from galax.parallel import layout as lx

PIECES = ("raw", "+forward", "+sampling", "acting", "+gradient", "a2c")


def parse(argv: list[str]) -> argparse.Namespace:
  p = cli.parser("a2c_cost_split", __doc__)
  p.add_argument("--config", default="cartpole_a2c", help="A config of configs/ (an A2C one).")
  p.add_argument("--env", default="gymnax/CartPole-v1", help="Env id.")
  p.add_argument("--num_envs", type=int, default=1024, help="Envs of the one learner.")
  p.add_argument("--updates_per_call", type=int, default=12, help="Updates per timed call.")
  p.add_argument("--rounds", type=int, default=9, help="Timed calls of each piece (interleaved).")
  p.add_argument("--json", default="", help="Write the figures to this JSON file.")
  args = p.parse_args(argv)
  for flag in ("num_envs", "updates_per_call", "rounds"):
    if getattr(args, flag) < 1:  # absl took them and failed later (--rounds=0: IndexError)
      cli.fail(f"--{flag}={getattr(args, flag)}: give at least 1.")
  try:
    config_lib.config_path(args.config)
  except FileNotFoundError as e:
    cli.fail(f"--config: {e}")
  try:
    check_env_id(args.env)
  except ValueError as e:
    cli.fail(f"--env: {e}")
  return args


def _env_steps(env, t_max: int, updates: int, choose):
  """A jitted scan of `updates` updates' env steps (t_max of every env each), the actions
  from `choose(obs, keys, key) -> (keys, key, actions)`."""

  def one_update(carry, _):
    def step(c, _):
      env_state, keys, key = c
      keys, key, actions = choose(env_state.obs, keys, key)
      return (env.step(env_state, actions)[0], keys, key), None

    return jax.lax.scan(step, carry, None, length=t_max)[0], None

  return jax.jit(lambda c: jax.lax.scan(one_update, c, None, length=updates)[0])


def _choosers(policy, params, env, n: int) -> tuple:
  """raw's, +forward's and +sampling's actions: uniformly random, greedy under the policy,
  sampled from it with per-env keys."""

  def random_actions(obs, keys, key):
    key, sub = jax.random.split(key)
    return keys, key, jax.random.randint(sub, (n,), 0, env.spec.num_actions)

  def greedy(obs, keys, key):
    return keys, key, jnp.argmax(policy(params, obs)[0], axis=-1)

  def sampled(obs, keys, key):
    keys, actions = sample_actions(keys, policy(params, obs)[0])
    return keys, key, actions

  return random_actions, greedy, sampled


def _learning(policy, env, t_max: int, updates: int, grads_of, how: str, with_grad: bool):
  """A jitted scan of `updates` rollouts (acting), each with the A2C gradient of the one
  learner (`grads_of(params, trajectory)`, mapped as `how`) and a plain SGD step if
  `with_grad` (+gradient)."""

  def one_update(carry, _):
    p, env_state, keys = carry
    env_state, keys, traj = rollout(policy, p, env, env_state, keys, t_max)
    if with_grad:
      grads, _ = lx.map_learners(grads_of, p, lx.split_learners(traj, 1), how=how)
      p = jax.tree.map(lambda w, g: w - 1e-4 * g, p, grads)
    return (p, env_state, keys), None

  return jax.jit(lambda c: jax.lax.scan(one_update, c, None, length=updates)[0])


def _pieces(config) -> dict:
  """name -> (jitted fn of a carry, initial carry), each running `updates` updates."""
  # The algorithm's own pieces: params [1, ...] of one learner, its policy over the block
  # (`learner_map` as resolved), its gradient chunks.
  spec = spec_for(config.algorithm)
  setup = make_setup(run_settings(config, spec), spec)
  params = jax.tree.map(jnp.asarray, initial_params(setup))
  apply_fn, env, n, t_max = setup.network.apply, setup.env, setup.env.num_envs, config.t_max
  updates, how, chunks = config.updates_per_call, setup.plan.learner_map, setup.plan.grad_chunks
  policy = block_policy(apply_fn, 1, how)
  settings = setup.settings.returns, setup.settings.loss
  random_actions, greedy, sampled = _choosers(policy, params, env, n)

  def grads_of(q, t):
    return a2c_grads(apply_fn, *settings, q, t, chunks)

  keys = init_action_keys(config.seed, 0, n)
  env_carry = (env.reset(), keys, jax.random.PRNGKey(1))
  learn_carry = (params, env.reset(), keys)
  algo = galax.make_algorithm(config)
  return {
    "raw": (_env_steps(env, t_max, updates, random_actions), env_carry),
    "+forward": (_env_steps(env, t_max, updates, greedy), env_carry),
    "+sampling": (_env_steps(env, t_max, updates, sampled), env_carry),
    "acting": (_learning(policy, env, t_max, updates, grads_of, how, False), learn_carry),
    "+gradient": (_learning(policy, env, t_max, updates, grads_of, how, True), learn_carry),
    "a2c": (lambda s: algo.step(s)[0], algo.init()),
  }


def main(argv: list[str] | None = None) -> None:
  args = parse(sys.argv[1:] if argv is None else argv)
  config = config_lib.load(args.config)
  if config.algorithm != "a2c":  # the pieces are A2C's (a2c_grads, one learner)
    cli.fail(f"--config={args.config}: its algorithm is {config.algorithm!r}, not 'a2c'.")
  config.env.id, config.envs_per_learner = args.env, args.num_envs
  config.updates_per_call = args.updates_per_call
  pieces = _pieces(config)
  carries = {k: jax.block_until_ready(fn(c)) for k, (fn, c) in pieces.items()}  # compile
  seconds = {k: [] for k in pieces}
  for _ in range(args.rounds):
    for k, (fn, _) in pieces.items():
      t0 = time.perf_counter()
      carries[k] = jax.block_until_ready(fn(carries[k]))
      seconds[k].append(time.perf_counter() - t0)
  per_update = {
    k: sorted(v)[len(v) // 2] / config.updates_per_call * 1e6 for k, v in seconds.items()
  }
  steps = args.num_envs * config.t_max
  info = measure.machine()
  print(
    f"{args.env}, {args.num_envs} envs x t_max {config.t_max}, "
    f"{info['cpu']}, jax {info['jax']}, commit {info['commit']}"
  )
  print("| piece | us per update | increment | steps/s | / raw |")
  print("| --- | ---: | ---: | ---: | ---: |")
  previous = 0.0
  for k in PIECES:
    us = per_update[k]
    print(
      f"| {k} | {us:,.0f} | {us - previous:+,.0f} | {steps / us * 1e6:,.0f} | "
      f"{per_update['raw'] / us:.2f} |"
    )
    previous = us
  if args.json:
    with open(args.json, "w") as f:
      json.dump(
        dict(
          machine=info,
          env=args.env,
          num_envs=args.num_envs,
          t_max=config.t_max,
          us_per_update=per_update,
        ),
        f,
        indent=2,
      )


if __name__ == "__main__":
  main()
