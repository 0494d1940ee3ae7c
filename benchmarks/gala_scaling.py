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

import argparse
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

import galax
from benchmarks import cli, measure
from galax import config as config_lib
from galax.envs import env_family


def parse(argv: list[str]) -> argparse.Namespace:
  p = cli.parser("gala_scaling", __doc__)
  p.add_argument("--env", default="Pong-v5", help="envpool id.")
  p.add_argument("--total_envs", type=cli.ints, default=[64], help="Total env counts N.")
  p.add_argument("--learners", type=cli.ints, default=[4], help="Learner counts n (divide N).")
  p.add_argument("--seconds", type=float, default=10.0, help="Measuring time per figure.")
  p.add_argument("--rounds", type=int, default=5, help="Alternating rounds (median reported).")
  p.add_argument("--updates_per_call", type=int, default=10, help="Updates per jitted call.")
  p.add_argument("--delay", type=int, default=0, help="GALA message delay tau.")
  p.add_argument("--devices", type=int, default=0, help="Virtual CPU devices (0: the real ones).")
  # --num_devices 1: every learner on one device; 0: as many devices as divide n.
  p.add_argument("--num_devices", type=int, default=1, help="Devices of the n learners.")
  p.add_argument("--env_threads", type=int, default=0, help="envpool threads (0: envpool's).")
  p.add_argument("--learner_map", default="auto", help="config.learner_map of the n-learner runs.")
  p.add_argument("--json", default="", help="Also write the figures to this JSON file.")
  args = p.parse_args(argv)
  for total in args.total_envs:
    for learners in args.learners:
      if total % learners:
        cli.fail(f"--learners={learners} must divide --total_envs={total}.")
  return args


KINDS = ("a2c", "independent", "allreduce", "gala")


def make_config(args: argparse.Namespace, kind: str, total_envs: int, learners: int):
  env_id = args.env
  atari = env_family(env_id) == "atari"
  config = config_lib.load("gala_a2c" if atari else "cartpole_a2c")
  config.env.id = env_id
  config.env.num_threads = args.env_threads
  config.updates_per_call = args.updates_per_call
  config.target_return = 0.0
  if kind == "a2c":
    config.num_learners, config.envs_per_learner, config.combine = 1, total_envs, "independent"
    config.num_devices = 1
    return config
  config.num_learners, config.envs_per_learner = learners, total_envs // learners
  config.num_devices = args.num_devices
  config.learner_map = args.learner_map
  config.combine = {"independent": "independent", "allreduce": "allreduce", "gala": "gossip"}[kind]
  config.gossip.topology, config.gossip.peers, config.gossip.delay = "ring", 1, args.delay
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


def main(argv: list[str] | None = None) -> None:
  args = parse(sys.argv[1:] if argv is None else argv)
  info = measure.machine()
  print(f"device: {info['device']}; cpu: {info['cpu']}; jax {info['jax']}; commit {info['commit']}")
  print(
    f"{'env':>12} {'N':>4} {'n':>3} {'kind':>12} {'layout':>8} {'steps/s':>10} "
    f"{'/ a2c':>6} {'compile s':>9}"
  )
  rows = []
  for total in args.total_envs:
    configs = {"a2c": make_config(args, "a2c", total, 1)}
    for learners in args.learners:
      if learners >= 2:
        for kind in KINDS[1:]:
          configs[f"{kind}/{learners}"] = make_config(args, kind, total, learners)
    results = measure_interleaved(configs, args.seconds, args.rounds)
    base = results["a2c"]["steps_per_second"]
    for name, result in results.items():
      config, sps = configs[name], result["steps_per_second"]
      n = config.num_learners
      row = dict(
        env=args.env,
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
  if args.json:
    with open(args.json, "w") as f:
      json.dump(
        dict(
          machine=info,
          delay=args.delay,
          num_devices=args.num_devices,
          learner_map=args.learner_map,
          rows=rows,
        ),
        f,
        indent=2,
      )


if __name__ == "__main__":
  main()
