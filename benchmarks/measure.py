"""Shared measuring code for the benchmark scripts: steady-state steps/s with compile time
reported apart, raw envpool stepping, acting alone, and any galax algorithm.

Every figure is env (agent) steps per second of all envs together; for Atari one step is
4 frames.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import jax
import jax.numpy as jnp

import galax
from galax.algorithms.registry import spec_for
from galax.config import run_settings
from galax.core.rollout import init_action_keys, rollout
from galax.envs import make_env
from galax.framework.algorithm import initial_params
from galax.framework.update import block_policy, make_setup
from galax.runtime import provenance


def steps_per_second(
  fn: Callable[[Any], Any], state: Any, steps_per_call: int, seconds: float
) -> tuple[float, float, Any]:
  """Calls `state = fn(state)` repeatedly; returns (steps/s, compile seconds, state).

  The first call (compilation and warm-up) is timed apart and excluded from steps/s; the
  compile seconds reported are that first call less one steady-state call.
  """
  t0 = time.perf_counter()
  state = jax.block_until_ready(fn(state))
  first = time.perf_counter() - t0
  calls, t0 = 0, time.perf_counter()
  while True:
    state = fn(state)
    calls += 1
    if calls % 2 == 0:
      jax.block_until_ready(state)
      if time.perf_counter() - t0 >= seconds:
        break
  jax.block_until_ready(state)
  elapsed = time.perf_counter() - t0
  return calls * steps_per_call / elapsed, max(0.0, first - elapsed / calls), state


def raw_envpool(config: Any, seconds: float, steps_per_call: int = 100) -> dict[str, float]:
  """envpool stepping with uniform random actions in a jitted scan (the env's own limit)."""
  env = make_env(
    run_settings(config).env, config.envs_per_learner * config.num_learners, seed=config.seed
  )
  n, num_actions = env.num_envs, env.spec.num_actions

  @jax.jit
  def run(carry):
    def body(c, _):
      state, key = c
      key, sub = jax.random.split(key)
      state, _ = env.step(state, jax.random.randint(sub, (n,), 0, num_actions))
      return (state, key), None

    return jax.lax.scan(body, carry, None, length=steps_per_call)[0]

  sps, first, _ = steps_per_second(
    run, (env.reset(), jax.random.PRNGKey(0)), steps_per_call * n, seconds
  )
  env.close()
  return dict(steps_per_second=sps, compile_s=first)


def acting_only(config: Any, seconds: float, rollouts_per_call: int = 20) -> dict[str, float]:
  """The learner's rollout (policy forward, sampling, env steps) without learning."""
  spec = spec_for(config.algorithm)
  setup = make_setup(run_settings(config, spec), spec)
  params = jax.tree.map(jnp.asarray, initial_params(setup))
  policy = block_policy(setup.network.apply, setup.layout.local_learners)
  n = setup.env.num_envs

  @jax.jit
  def run(carry):
    def body(c, _):
      env_state, keys, _ = rollout(policy, params, setup.env, c[0], c[1], config.t_max)
      return (env_state, keys), None

    return jax.lax.scan(body, carry, None, length=rollouts_per_call)[0]

  sps, first, _ = steps_per_second(
    run,
    (setup.env.reset(), init_action_keys(0, 0, n)),
    rollouts_per_call * config.t_max * n,
    seconds,
  )
  setup.env.close()
  return dict(steps_per_second=sps, compile_s=first)


def algorithm(config: Any, seconds: float) -> dict[str, float]:
  """A galax algorithm's jitted step (updates_per_call updates per call)."""
  algo = galax.make_algorithm(config)
  steps_per_call = algo.updates_per_call * algo.env_steps_per_update
  sps, first, _ = steps_per_second(lambda s: algo.step(s)[0], algo.init(), steps_per_call, seconds)
  algo.env.close()
  return dict(steps_per_second=sps, compile_s=first)


def machine() -> dict[str, str]:
  """What the figures were measured on."""
  ran_on = provenance.machine()
  return dict(
    device=ran_on["backend"],
    cpu=f"{ran_on['cpu']} x {ran_on['cores']}",
    jax=ran_on["jax"],
    commit=(provenance.git_info()["commit"] or "")[:7],
    date=time.strftime("%Y-%m-%d"),
  )
