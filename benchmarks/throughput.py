"""Env steps per second of the A2C learner vs raw envpool stepping, in one run.

  python benchmarks/throughput.py --env=Pong-v5 --num_envs=16,64
  python benchmarks/throughput.py --env=CartPole-v1 --num_envs=16

For each env count it measures, on the same machine and in the same process:
  raw     envpool stepping with uniformly random actions inside a jitted lax.scan (the
          physical limit of the envs with this interface),
  acting  the rollout alone (policy forward + sampling + stepping),
  a2c     the full A2C learner (rollout + returns + loss + RMSProp step),
and prints steps/s and the ratios to raw. Compile time is excluded (one warm-up call).
"""

from __future__ import annotations

import json
import time

import jax
import jax.numpy as jnp
from absl import app, flags

from galax.algorithms import make_algorithm
from galax.envs import make_env
from galax.rollout import rollout
from galax.algorithms.common import block_policy, initial_params, make_setup

_ENV = flags.DEFINE_string("env", "Pong-v5", "envpool id.")
_CONFIG = flags.DEFINE_string("config", "", "Config module (default: pong_paac for Atari, "
                              "cartpole_a2c otherwise).")
_NUM_ENVS = flags.DEFINE_list("num_envs", ["16", "64"], "Env counts to measure.")
_SECONDS = flags.DEFINE_float("seconds", 10.0, "Minimum measuring time per figure.")
_THREADS = flags.DEFINE_integer("env_threads", 0, "envpool threads (0: envpool's choice).")
_JSON = flags.DEFINE_string("json", "", "Also write the figures to this JSON file.")


def _timed(fn, state, steps_per_call: int, seconds: float) -> tuple[float, float]:
  """Returns (steps/s, compile+first call seconds)."""
  t0 = time.perf_counter()
  state = fn(state)
  jax.block_until_ready(state)
  first = time.perf_counter() - t0
  calls, t0 = 0, time.perf_counter()
  while True:
    state = fn(state)
    calls += 1
    if calls % 4 == 0:
      jax.block_until_ready(state)
      if time.perf_counter() - t0 >= seconds:
        break
  jax.block_until_ready(state)
  return calls * steps_per_call / (time.perf_counter() - t0), first


def _config(env_id: str, num_envs: int):
  import importlib.util  # pylint: disable=g-import-not-at-top
  import os  # pylint: disable=g-import-not-at-top

  name = _CONFIG.value or ("pong_paac" if env_id.endswith("-v5") else "cartpole_a2c")
  path = name if name.endswith(".py") else os.path.join(
      os.path.dirname(__file__), "..", "configs", f"{name}.py")
  spec = importlib.util.spec_from_file_location("bench_config", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = module.get_config()
  config.env.id = env_id
  config.envs_per_learner = num_envs
  config.env.num_threads = _THREADS.value
  config.updates_per_call = 20
  return config


def measure(env_id: str, num_envs: int, seconds: float) -> dict[str, float]:
  config = _config(env_id, num_envs)
  t_max = config.t_max
  steps_per_call = config.updates_per_call * t_max * num_envs

  # Raw envpool: random actions, same number of steps per jitted call.
  env = make_env(config, num_envs)
  num_actions = env.spec.num_actions

  @jax.jit
  def raw(carry):
    env_state, key = carry

    def body(c, _):
      s, k = c
      k, sub = jax.random.split(k)
      s, _ = env.step(s, jax.random.randint(sub, (num_envs,), 0, num_actions))
      return (s, k), None

    return jax.lax.scan(body, (env_state, key), None, length=config.updates_per_call * t_max)[0]

  raw_sps, _ = _timed(raw, (env.reset(), jax.random.PRNGKey(0)), steps_per_call, seconds)
  env.close()

  # Acting only: the learner's rollout without learning.
  setup = make_setup(config, t_max)
  params = jax.tree.map(jnp.asarray, initial_params(setup))
  policy = block_policy(setup.network.apply, 1)

  @jax.jit
  def act(carry):
    env_state, keys = carry

    def body(c, _):
      s, k, _ = rollout(policy, params, setup.env, c[0], c[1], t_max)
      return (s, k), None

    return jax.lax.scan(body, (env_state, keys), None, length=config.updates_per_call)[0]

  from galax.rollout import init_action_keys  # pylint: disable=g-import-not-at-top

  act_sps, _ = _timed(act, (setup.env.reset(), init_action_keys(0, 0, num_envs)),
                      steps_per_call, seconds)
  setup.env.close()

  # The full A2C learner.
  algorithm = make_algorithm(config)
  step = lambda s: algorithm.step(s)[0]
  a2c_sps, compile_s = _timed(step, algorithm.init(), steps_per_call, seconds)
  algorithm.env.close()
  return dict(env=env_id, num_envs=num_envs, raw_sps=raw_sps, acting_sps=act_sps,
              a2c_sps=a2c_sps, acting_over_raw=act_sps / raw_sps, a2c_over_raw=a2c_sps / raw_sps,
              a2c_compile_s=compile_s)


def main(argv):
  del argv
  device = jax.devices()[0]
  print(f"device: {device.platform} ({device.device_kind}), {jax.device_count()} device(s)")
  rows = []
  print(f"{'env':>14} {'envs':>5} {'raw steps/s':>12} {'acting':>10} {'a2c':>10} "
        f"{'acting/raw':>10} {'a2c/raw':>8}")
  for n in _NUM_ENVS.value:
    r = measure(_ENV.value, int(n), _SECONDS.value)
    rows.append(r)
    print(f"{r['env']:>14} {r['num_envs']:>5} {r['raw_sps']:>12.0f} {r['acting_sps']:>10.0f} "
          f"{r['a2c_sps']:>10.0f} {r['acting_over_raw']:>10.2f} {r['a2c_over_raw']:>8.2f}",
          flush=True)
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      json.dump(dict(device=str(device), rows=rows), f, indent=2)


if __name__ == "__main__":
  app.run(main)
