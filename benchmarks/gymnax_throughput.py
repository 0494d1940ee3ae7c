"""gymnax throughput: raw vmapped stepping vs A2C, GALA and PPO, and PPO vs envpool.

  python -m benchmarks.gymnax_throughput --json=benchmarks/results/cpu_gymnax.json \
      --md=benchmarks/results/cpu_gymnax.md

For each env and env count it measures, in one process (compile time excluded):
  raw     gymnax `step` vmapped over the envs with uniformly random actions in a jitted
          scan (the physical limit for that env count),
  a2c     A2C (configs/cartpole_a2c.py's settings on CartPole, configs/minatar_a2c.py's
          on MinAtar) with all envs in one learner,
  gala    GALA-A2C: 4 learners x n/4 envs on one device, 1-peer gossip ring,
  ppo     PPO at the CleanRL/PureJaxRL CartPole shape: envs x 128 steps, 4 epochs x 4
          minibatches, GAE (one gradient per minibatch: `grad_chunks=1`),
and, for CartPole, the same PPO on envpool's CartPole-v1 (the gymnax-vs-envpool ratio).
Every call runs `updates_per_call` updates (a scan; MinAtar's configs use patch convolutions,
so they scan on CPU too).
"""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks import cli, measure
from galax import config as config_lib

KINDS = ("a2c", "gala", "ppo")


def parse(argv: list[str]) -> argparse.Namespace:
  p = cli.parser("gymnax_throughput", __doc__)
  p.add_argument(
    "--envs",
    type=cli.strings,
    default=["gymnax/CartPole-v1", "gymnax/Breakout-MinAtar"],
    help="gymnax ids.",
  )
  p.add_argument("--num_envs", type=cli.ints, default=[64, 256, 1024, 4096], help="Env counts.")
  p.add_argument(
    "--kinds", type=cli.strings, default=["a2c", "gala", "ppo"], help="Learners besides raw."
  )
  p.add_argument("--seconds", type=float, default=3.0, help="Measuring time per figure.")
  p.add_argument(
    "--steps_per_call", type=int, default=65536, help="Env steps per call (sets updates_per_call)."
  )
  p.add_argument(
    "--minatar_ppo_max_envs",
    type=int,
    default=1024,
    help="Largest env count for MinAtar PPO (4096 envs x 128 steps of 10x10xC floats is "
    "~1 GB of storage per update before activations).",
  )
  p.add_argument("--json", default="", help="Write the figures to this JSON file.")
  p.add_argument("--md", default="", help="Write a markdown table to this file.")
  args = p.parse_args(argv)
  unknown = sorted(set(args.kinds) - set(KINDS))
  if unknown:
    cli.fail(f"--kinds: no learner {unknown}; choose from {list(KINDS)}.")
  return args


def _config(args: argparse.Namespace, env_id: str, kind: str, num_envs: int):
  minatar = env_id.endswith("MinAtar")
  config = config_lib.load("minatar_a2c" if minatar else "cartpole_a2c")
  config.env.id = env_id
  config.envs_per_learner = num_envs
  if kind == "gala":
    config.num_learners, config.envs_per_learner, config.num_devices = 4, num_envs // 4, 1
    config.combine = "gossip"
  if kind == "ppo":
    config.algorithm, config.t_max, config.returns = "ppo", 128, "gae"
    config.ppo.epochs, config.ppo.minibatches, config.ppo.clip = 4, 4, 0.2
    # One gradient per minibatch (CPU auto would chunk MinAtar's; with XLA convolutions
    # the 16 minibatch steps were also unrolled, and chunks multiplied that program).
    config.grad_chunks = 1
  steps_per_update = num_envs * config.t_max
  config.updates_per_call = max(1, args.steps_per_call // steps_per_update)
  return config


def _measure(args: argparse.Namespace, env_id: str, n: int) -> dict:
  seconds = args.seconds
  row = dict(env=env_id, num_envs=n)
  row["raw_sps"] = measure.raw_envpool(_config(args, env_id, "a2c", n), seconds)["steps_per_second"]
  kinds = list(args.kinds)
  if "ppo" in kinds and env_id.endswith("MinAtar") and n > args.minatar_ppo_max_envs:
    kinds.remove("ppo")
  for kind in kinds:
    out = measure.algorithm(_config(args, env_id, kind, n), seconds)
    row[f"{kind}_sps"], row[f"{kind}_compile_s"] = out["steps_per_second"], out["compile_s"]
    row[f"{kind}_over_raw"] = row[f"{kind}_sps"] / row["raw_sps"]
  if env_id == "gymnax/CartPole-v1" and "ppo" in kinds:
    config = _config(args, env_id, "ppo", n)
    config.env.id = "CartPole-v1"
    row["envpool_ppo_sps"] = measure.algorithm(config, seconds)["steps_per_second"]
    row["ppo_gymnax_over_envpool"] = row["ppo_sps"] / row["envpool_ppo_sps"]
  return row


def _table(rows: list[dict]) -> str:
  lines = [
    "| env | envs | raw steps/s | A2C | GALA (4 learners) | PPO | A2C/raw | GALA/raw | "
    "PPO/raw | envpool PPO | PPO gymnax/envpool |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ]
  for r in rows:
    envpool = (
      f"{r['envpool_ppo_sps']:,.0f} | {r['ppo_gymnax_over_envpool']:.2f}"
      if "envpool_ppo_sps" in r
      else "- | -"
    )
    sps = {
      k: (f"{r[k + '_sps']:,.0f}", f"{r[k + '_over_raw']:.2f}") if k + "_sps" in r else ("-", "-")
      for k in ("a2c", "gala", "ppo")
    }
    lines.append(
      f"| {r['env']} | {r['num_envs']} | {r['raw_sps']:,.0f} | {sps['a2c'][0]} | "
      f"{sps['gala'][0]} | {sps['ppo'][0]} | {sps['a2c'][1]} | {sps['gala'][1]} | "
      f"{sps['ppo'][1]} | {envpool} |"
    )
  return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
  args = parse(sys.argv[1:] if argv is None else argv)
  info = measure.machine()
  print(f"device: {info['device']}; cpu: {info['cpu']}; jax {info['jax']}", flush=True)
  rows = []
  for env_id in args.envs:
    for n in args.num_envs:
      rows.append(_measure(args, env_id, n))
      print(_table(rows[-1:]).splitlines()[-1], flush=True)
      _write(args, info, rows)  # after every row: a cut-short run keeps what it measured
  print(_table(rows))


def _write(args: argparse.Namespace, info: dict, rows: list[dict]) -> None:
  table = _table(rows)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(dict(machine=info, rows=rows), f, indent=2)
  if args.md:
    with open(args.md, "w") as f:
      f.write(
        f"# gymnax throughput ({info['date']}, {info['device']}, {info['cpu']}, "
        f"jax {info['jax']}, commit {info['commit']})\n\nSteps/s of all envs together, "
        "measured on a shared 2-core CPU (noisy); compile time excluded.\n\n" + table + "\n"
      )


if __name__ == "__main__":
  main()
