"""GALA vs one A2C learner on the same device(s): env steps/s of each, in one run.

  python -m benchmarks.gala_scaling --env=Pong-v5 --total_envs=64 --learners=4
  python -m benchmarks.gala_scaling --env=CartPole-v1 --total_envs=16,64 --learners=2,4
  python -m benchmarks.gala_scaling --devices=4 --num_devices=4 ...   # 4 virtual CPU devices

For every total env count N and learner count n it measures the steady-state env steps/s
(all envs together; compile time excluded and reported apart; the algorithms are measured
in alternating rounds and the median reported, so load changes hit all alike) of
  a2c          1 learner with N envs (PAAC/A2C; the baseline),
  independent  n learners x N/n envs, no communication (the cost of the learner axis),
  allreduce    n learners x N/n envs averaging gradients (= one learner with N envs),
  gala         n learners x N/n envs gossiping on a 1-peer ring (--delay: message delay),
all on the same `--num_devices` devices (1: every learner on one device, GALA's "several
learners on one GPU"), and prints the ratios to a2c. --learner_map=vmap|unroll chooses
how a device's learners run their networks (config.learner_map; measure both on a GPU).
Hyper-parameters: configs/gala_a2c.py for Atari ids, configs/cartpole_a2c.py otherwise
(throughput does not depend on them).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

# --devices must act before jax is imported.
for _arg in sys.argv:
  if _arg.startswith("--devices="):
    _flag = f"--xla_force_host_platform_device_count={_arg.split('=', 1)[1]}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

import jax
import numpy as np
from absl import app, flags

import galax
from benchmarks import measure
from galax import config as config_lib
from galax.config import cli
from galax.envs import env_family

_ENV = flags.DEFINE_string("env", "Pong-v5", "envpool id.")
_TOTAL_ENVS = flags.DEFINE_list("total_envs", ["64"], "Total env counts N (all learners).")
_LEARNERS = flags.DEFINE_list("learners", ["4"], "Learner counts n (each must divide N).")
_SECONDS = flags.DEFINE_float("seconds", 10.0, "Measuring time per figure (all rounds).")
_ROUNDS = flags.DEFINE_integer("rounds", 5, "Alternating measuring rounds (median reported).")
_UPDATES = flags.DEFINE_integer("updates_per_call", 10, "Updates per jitted call.")
_DELAY = flags.DEFINE_integer("delay", 0, "GALA message delay tau.")
_DEVICES = flags.DEFINE_integer("devices", 0, "Virtual CPU devices (0: the real ones).")
_NUM_DEVICES = flags.DEFINE_integer(
  "num_devices",
  1,
  "Devices carrying the n learners (1: all on one device; 0: as many as divide n).",
)
_THREADS = flags.DEFINE_integer("env_threads", 0, "envpool threads per pool (0: envpool's).")
_LEARNER_MAP = flags.DEFINE_string(
  "learner_map", "auto", "config.learner_map of the n-learner runs: vmap | unroll | auto."
)
_JSON = flags.DEFINE_string("json", "", "Also write the figures to this JSON file.")

KINDS = ("a2c", "independent", "allreduce", "gala")


def make_config(kind: str, env_id: str, total_envs: int, learners: int):
  atari = env_family(env_id) == "atari"
  config = config_lib.load("gala_a2c" if atari else "cartpole_a2c")
  config.env.id = env_id
  config.env.num_threads = _THREADS.value
  config.updates_per_call = _UPDATES.value
  config.target_return = 0.0
  if kind == "a2c":
    config.num_learners, config.envs_per_learner, config.combine = 1, total_envs, "independent"
    config.num_devices = 1
    return config
  config.num_learners, config.envs_per_learner = learners, total_envs // learners
  config.num_devices = _NUM_DEVICES.value
  config.learner_map = _LEARNER_MAP.value
  config.combine = {"independent": "independent", "allreduce": "allreduce", "gala": "gossip"}[kind]
  config.gossip.topology, config.gossip.peers, config.gossip.delay = "ring", 1, _DELAY.value
  return config


def measure_interleaved(
  configs: dict[str, Any], seconds: float, rounds: int
) -> dict[str, dict[str, float]]:
  """Steady-state steps/s of several algorithms, measured in alternating rounds.

  Every algorithm is built and compiled first (its first call timed apart); then each
  round measures each algorithm for seconds / rounds. The median over rounds is reported,
  so a load change on a shared machine hits all algorithms alike.
  """
  built = {}
  for kind, config in configs.items():
    algorithm = galax.make_algorithm(config)
    t0 = time.perf_counter()
    state = jax.block_until_ready(algorithm.step(algorithm.init())[0])
    built[kind] = [algorithm, state, time.perf_counter() - t0]
  figures: dict[str, list[float]] = {kind: [] for kind in configs}
  for _ in range(rounds):
    for kind, entry in built.items():
      algorithm, state, _ = entry
      steps_per_call = algorithm.updates_per_call * algorithm.env_steps_per_update
      calls, t0 = 0, time.perf_counter()
      while calls == 0 or time.perf_counter() - t0 < seconds / rounds:
        state = jax.block_until_ready(algorithm.step(state)[0])
        calls += 1
      figures[kind].append(calls * steps_per_call / (time.perf_counter() - t0))
      entry[1] = state
  for algorithm, _, _ in built.values():
    algorithm.env.close()
  return {
    kind: dict(steps_per_second=float(np.median(figures[kind])), compile_s=built[kind][2])
    for kind in configs
  }


def main(argv):
  del argv
  info = measure.machine()
  print(f"device: {info['device']}; cpu: {info['cpu']}; jax {info['jax']}; commit {info['commit']}")
  print(
    f"{'env':>12} {'N':>4} {'n':>3} {'kind':>12} {'layout':>8} {'steps/s':>10} "
    f"{'/ a2c':>6} {'compile s':>9}"
  )
  rows = []
  for total in map(int, _TOTAL_ENVS.value):
    configs = {"a2c": make_config("a2c", _ENV.value, total, 1)}
    for learners in map(int, _LEARNERS.value):
      if total % learners:
        raise ValueError(f"--learners={learners} must divide --total_envs={total}.")
      if learners >= 2:
        for kind in KINDS[1:]:
          configs[f"{kind}/{learners}"] = make_config(kind, _ENV.value, total, learners)
    results = measure_interleaved(configs, _SECONDS.value, _ROUNDS.value)
    base = results["a2c"]["steps_per_second"]
    for name, result in results.items():
      config, sps = configs[name], result["steps_per_second"]
      n = config.num_learners
      row = dict(
        env=_ENV.value,
        total_envs=total,
        learners=n,
        kind=name.split("/")[0],
        layout=f"{n}x{config.envs_per_learner}",
        steps_per_second=sps,
        over_a2c=sps / base,
        compile_s=result["compile_s"],
      )
      rows.append(row)
      print(
        f"{row['env']:>12} {total:>4} {n:>3} {row['kind']:>12} {row['layout']:>8} "
        f"{sps:>10.0f} {row['over_a2c']:>6.2f} {row['compile_s']:>9.1f}",
        flush=True,
      )
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      json.dump(
        dict(
          machine=info,
          delay=_DELAY.value,
          num_devices=_NUM_DEVICES.value,
          learner_map=_LEARNER_MAP.value,
          rows=rows,
        ),
        f,
        indent=2,
      )


if __name__ == "__main__":
  cli.answer_help(sys.argv, sys.modules[__name__])  # --help: exit 0, as galax's commands
  app.run(main)
