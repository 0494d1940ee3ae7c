"""Env steps per second of the A2C learner vs raw envpool stepping, in one run.

  python -m benchmarks.throughput --env=Pong-v5 --num_envs=16,64
  python -m benchmarks.throughput --env=CartPole-v1 --num_envs=16

For each env count it measures, in the same process on the same machine:
  raw     envpool stepping with uniformly random actions inside a jitted lax.scan (the
          physical limit of the envs through this interface),
  acting  the learner's rollout alone (policy forward + sampling + stepping),
  a2c     the full A2C learner (rollout + returns + loss + optimizer step),
and prints steps/s and the ratios to raw. Compile time is excluded (first call).

It then splits the learner's time per 1000 env steps into env stepping (1/raw), acting
overhead (policy forward, sampling, host-device traffic of the custom calls: 1/acting -
1/raw) and learning (returns, loss, gradient, optimizer: 1/a2c - 1/acting).
"""

from __future__ import annotations

import json
import sys

from absl import app, flags

from benchmarks import measure
from galax import config as config_lib
from galax.config import cli

_ENV = flags.DEFINE_string("env", "Pong-v5", "envpool id.")
_CONFIG = flags.DEFINE_string(
  "config", "", "Config name or file (default: pong_paac for Atari, cartpole_a2c otherwise)."
)
_NUM_ENVS = flags.DEFINE_list("num_envs", ["16", "64"], "Env counts to measure.")
_SECONDS = flags.DEFINE_float("seconds", 10.0, "Measuring time per figure.")
_THREADS = flags.DEFINE_integer("env_threads", 0, "envpool threads (0: envpool's choice).")
_JSON = flags.DEFINE_string("json", "", "Also write the figures to this JSON file.")


def _config(num_envs: int):
  name = _CONFIG.value or ("pong_paac" if _ENV.value.endswith("-v5") else "cartpole_a2c")
  config = config_lib.load(name)
  config.env.id = _ENV.value
  config.envs_per_learner = num_envs
  config.env.num_threads = _THREADS.value
  config.updates_per_call = 20
  return config


def main(argv):
  del argv
  info = measure.machine()
  print(f"device: {info['device']}; cpu: {info['cpu']}; jax {info['jax']}")
  print(
    f"{'env':>14} {'envs':>5} {'raw steps/s':>12} {'acting':>10} {'a2c':>10} "
    f"{'acting/raw':>10} {'a2c/raw':>8} {'a2c compile s':>13}"
  )
  rows = []
  for n in map(int, _NUM_ENVS.value):
    config = _config(n)
    raw = measure.raw_envpool(config, _SECONDS.value)
    acting = measure.acting_only(config, _SECONDS.value)
    a2c = measure.algorithm(config, _SECONDS.value)
    row = dict(
      env=_ENV.value,
      num_envs=n,
      raw_sps=raw["steps_per_second"],
      acting_sps=acting["steps_per_second"],
      a2c_sps=a2c["steps_per_second"],
      a2c_compile_s=a2c["compile_s"],
    )
    row["acting_over_raw"] = row["acting_sps"] / row["raw_sps"]
    row["a2c_over_raw"] = row["a2c_sps"] / row["raw_sps"]
    rows.append(row)
    print(
      f"{row['env']:>14} {n:>5} {row['raw_sps']:>12.0f} {row['acting_sps']:>10.0f} "
      f"{row['a2c_sps']:>10.0f} {row['acting_over_raw']:>10.2f} {row['a2c_over_raw']:>8.2f} "
      f"{row['a2c_compile_s']:>13.1f}",
      flush=True,
    )
  print("\ntime per 1000 env steps (ms): env stepping | acting overhead | learning")
  for r in rows:
    env_ms = 1e3 / r["raw_sps"] * 1e3
    act_ms = 1e3 / r["acting_sps"] * 1e3 - env_ms
    learn_ms = 1e3 / r["a2c_sps"] * 1e3 - 1e3 / r["acting_sps"] * 1e3
    r.update(env_ms_per_1k=env_ms, acting_ms_per_1k=act_ms, learning_ms_per_1k=learn_ms)
    print(f"{r['env']:>14} {r['num_envs']:>5} {env_ms:10.1f} | {act_ms:10.1f} | {learn_ms:10.1f}")
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      json.dump(dict(machine=info, rows=rows), f, indent=2)


if __name__ == "__main__":
  cli.answer_help(sys.argv, sys.modules[__name__])  # --help: exit 0, as galax's commands
  app.run(main)
