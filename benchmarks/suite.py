"""Throughput of every architecture, measured in one run on one machine.

  python -m benchmarks.suite --env=Pong-v5 --num_envs=16,64 --learners=1,4
  python -m benchmarks.suite --env=CartPole-v1 --devices=8 --weak_scaling --learners=1,2,4,8
  python -m benchmarks.suite --algorithms=raw,acting,a2c --num_envs=32 --updates_per_call=20

For each algorithm, env count N (all learners together) and learner count n it measures the
steady-state env steps/s of the jitted training step (compile time reported apart) and its
ratio to raw envpool stepping with N envs (random actions, same interface). Writes
`<out>.json` and `<out>.md` (a markdown table with the machine description and the command).

With raw, acting (A2C's rollout alone: policy forward, sampling and stepping, no learning)
and a2c measured at the same env count, it also splits A2C's time per 1000 env steps into
env stepping (1/raw), acting overhead (1/acting - 1/raw) and learning (1/a2c - 1/acting);
the third command is what benchmarks/throughput.py measured, before it merged here.

--weak_scaling keeps envs per learner fixed (N = n x --envs_per_learner) to compare how
all-reduce and gossip scale with the number of learners; with --devices=D the learners are
spread over D virtual CPU devices (set before jax is imported).

Each figure is measured in a fresh child process (--isolate, the default): envpool's
GFootball pools keep their memory after they are closed (~50 MB per env, measured), so one
process measuring raw, PPO and HTS-PPO at 16 and 64 envs grew to ~18 GB; a child per figure
also keeps env threads and compiled programs of earlier figures out of later ones.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import sys
from typing import Any

# --devices must act before jax is imported.
for _arg in sys.argv:
  if _arg.startswith("--devices="):
    _flag = f"--xla_force_host_platform_device_count={_arg.split('=', 1)[1]}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()


from benchmarks import cli, measure
from galax import config as config_lib
from galax.envs import env_family

# algorithm -> (config name, learner rule): "one" runs 1 learner with all N envs, "many"
# splits N envs over n learners.
ALGORITHMS: dict[str, tuple[str, str]] = {
  "a2c": ("pong_paac", "one"),
  "allreduce": ("allreduce_a2c", "many"),
  "gala": ("gala_a2c", "many"),
  "hts_a2c": ("hts_a2c_atari", "one"),
  "ppo": ("ppo_gfootball", "one"),
  "hts_ppo": ("hts_ppo_gfootball", "one"),
  "impala": ("impala_atari", "one"),
  "a3c": ("a3c_atari", "many"),
  "ba3c": ("ba3c_breakout", "many"),
  "acting": ("pong_paac", "one"),  # A2C's rollout alone: measured on request only
}
DEFAULT_ALGORITHMS = ["raw", *(a for a in ALGORITHMS if a != "acting")]

# PPO and HTS-PPO are the HTS paper's GFootball algorithms: they run on --ppo_env.
PPO_FAMILY = ("ppo", "hts_ppo")


def parse(argv: list[str]) -> argparse.Namespace:
  p = cli.parser("suite", __doc__)
  p.add_argument("--env", default="Pong-v5", help="envpool id of the A2C-family algorithms.")
  p.add_argument(
    "--ppo_env",
    default="gfootball/academy_3_vs_1_with_keeper-v1",
    help="envpool id of PPO and HTS-PPO ('same': --env).",
  )
  p.add_argument("--num_envs", type=cli.ints, default=[16, 32, 64, 128], help="Total envs.")
  p.add_argument("--learners", type=cli.ints, default=[1, 2, 4, 8], help="Learner counts.")
  p.add_argument(
    "--algorithms", type=cli.strings, default=DEFAULT_ALGORITHMS, help="What to measure."
  )
  p.add_argument("--seconds", type=float, default=10.0, help="Measuring time per figure.")
  p.add_argument(
    "--steps_per_call",
    type=int,
    default=4000,
    help="Env steps per call to the training step, rounded to whole updates (at least "
    "one): updates_per_call = max(1, round(this / steps per update)).",
  )
  p.add_argument(
    "--updates_per_call", type=int, default=0, help="Updates per call (0: --steps_per_call's)."
  )
  p.add_argument("--env_threads", type=int, default=0, help="envpool threads (0: envpool's).")
  cli.add_bool(p, "weak_scaling", False, "Fix envs per learner instead of total envs.")
  p.add_argument("--envs_per_learner", type=int, default=16, help="Envs per learner (weak).")
  p.add_argument(
    "--network",
    default="",
    help="Run every algorithm with this network (e.g. archnips) instead of its config's own.",
  )
  p.add_argument("--devices", type=int, default=0, help="Virtual CPU devices (0: the real ones).")
  cli.add_bool(p, "isolate", True, "Measure each figure in a fresh child process.")
  p.add_argument("--out", default="", help="Write <out>.json and <out>.md.")
  args = p.parse_args(argv)
  unknown = [a for a in args.algorithms if a != "raw" and a not in ALGORITHMS]
  if unknown:
    cli.fail(f"--algorithms: no algorithm {unknown}; choose from {['raw', *ALGORITHMS]}.")
  return args


def _config(
  args: argparse.Namespace, algorithm: str, env_id: str, learners: int, envs_per_learner: int
) -> Any:
  name, _ = ALGORITHMS[algorithm]
  config = config_lib.load(name)
  if config.env.id != env_id:
    config.env.id = env_id
    if env_family(env_id) == "classic_control":  # vector observations need the MLP
      config.network.name = "mlp"
      config.env.options = type(config.env.options)()  # drop Atari options (BA3C's RGB)
  if args.network:
    config.network.name = args.network
  config.num_learners = learners
  config.envs_per_learner = envs_per_learner
  config.num_devices = 0
  steps_per_update = learners * envs_per_learner * config.t_max
  if algorithm.startswith("hts"):
    steps_per_update = learners * envs_per_learner * config.hts.alpha
  config.updates_per_call = args.updates_per_call or max(
    1, round(args.steps_per_call / steps_per_update)
  )
  if args.env_threads:
    config.env.num_threads = args.env_threads
  config.total_env_steps = 10**9
  config.target_return = 0.0
  return config


def _grid(args: argparse.Namespace, algorithm: str) -> list[tuple[int, int]]:
  """(total envs, learners) pairs to measure for an algorithm."""
  rule = "one" if algorithm == "raw" else ALGORITHMS[algorithm][1]
  learners = [1] if rule == "one" else [n for n in args.learners if n > 1]
  pairs = []
  for n in learners:
    totals = [n * args.envs_per_learner] if args.weak_scaling else list(args.num_envs)
    pairs.extend((total, n) for total in totals if total % n == 0)
  return pairs


def env_of(args: argparse.Namespace, algorithm: str) -> str:
  if algorithm in PPO_FAMILY and args.ppo_env != "same":
    return args.ppo_env
  return args.env


def time_split(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
  """A2C's milliseconds per 1000 env steps: env stepping (1/raw), acting overhead (1/acting -
  1/raw) and learning (1/a2c - 1/acting), at each (env, envs) where all three were measured."""
  rate = {(r["algorithm"], r["env"], r["num_envs"]): r["steps_per_second"] for r in rows}
  split = []
  for (algorithm, env, envs), a2c in rate.items():
    if algorithm != "a2c" or {("raw", env, envs), ("acting", env, envs)} - set(rate):
      continue
    raw_ms, acting_ms = 1e6 / rate["raw", env, envs], 1e6 / rate["acting", env, envs]
    split.append(
      dict(
        env=env,
        num_envs=envs,
        env_ms_per_1k=raw_ms,
        acting_ms_per_1k=acting_ms - raw_ms,
        learning_ms_per_1k=1e6 / a2c - acting_ms,
      )
    )
  return split


def split_lines(split: list[dict[str, Any]]) -> list[str]:
  lines = ["time per 1000 env steps (ms): env stepping | acting overhead | learning"]
  for r in split:
    lines.append(
      f"{r['env']:>14} {r['num_envs']:>5} {r['env_ms_per_1k']:10.1f} | "
      f"{r['acting_ms_per_1k']:10.1f} | {r['learning_ms_per_1k']:10.1f}"
    )
  return lines


def markdown(info: dict[str, Any], rows: list[dict[str, Any]], command: str) -> str:
  lines = [
    f"Measured {info['date']} on {info['device']}; CPU {info['cpu']}; jax {info['jax']}; "
    f"commit {info['commit']}.",
    "",
    f"`{command}`",
    "",
    "| algorithm | env | network | learners | envs | steps/s | vs raw envpool | compile s |",
    "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
  ]
  for r in rows:
    ratio = f"{r['ratio_to_raw']:.2f}" if r.get("ratio_to_raw") is not None else "-"
    lines.append(
      f"| {r['algorithm']} | {r['env']} | {r.get('network', '-')} | "
      f"{r['learners']} | {r['num_envs']} | "
      f"{r['steps_per_second']:.0f} | {ratio} | {r['compile_s']:.1f} |"
    )
  split = time_split(rows)
  if split:
    lines += ["", "```", *split_lines(split), "```"]
  return "\n".join(lines) + "\n"


def measure_job(
  args: argparse.Namespace, algorithm: str, env_id: str, total: int, learners: int, source: str
) -> tuple[dict[str, float], str]:
  """(figure, network name) of one table row, measured in this process."""
  if algorithm == "raw":
    config = _config(args, source, env_id, 1, total)
    return measure.raw_envpool(config, args.seconds), "-"
  config = _config(args, algorithm, env_id, learners, total // learners)
  run = measure.acting_only if algorithm == "acting" else measure.algorithm
  return run(config, args.seconds), config.network.name


def _in_child(args: argparse.Namespace, job: tuple) -> tuple[dict[str, float], str]:
  """measure_job in a fresh spawned process (jax and envpool threads do not survive fork)."""
  context = multiprocessing.get_context("spawn")
  with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
    return pool.submit(measure_job, args, *job).result()


def _jobs(args: argparse.Namespace) -> list[tuple[str, str, int, int, str]]:
  """(algorithm, env, total envs, learners, the algorithm whose env options it takes), raw
  envpool first: measured for every (env, total envs) an algorithm runs, with that
  algorithm's env options (Atari preprocessing, GFootball's representation)."""
  algorithms = args.algorithms
  learning = [a for a in algorithms if a != "raw"]
  jobs = []
  if "raw" in algorithms:
    firsts = {}
    for algorithm in learning:
      for total, _ in _grid(args, algorithm):
        firsts.setdefault((env_of(args, algorithm), total), algorithm)
    jobs += [("raw", env, total, 1, firsts[env, total]) for env, total in sorted(firsts)]
  return jobs + [(a, env_of(args, a), total, n, a) for a in learning for total, n in _grid(args, a)]


def _row(job: tuple, figure: dict[str, float], network: str, raw: float | None) -> dict:
  """One table row, printed as it comes."""
  algorithm, env_id, total, learners, _ = job
  ratio = figure["steps_per_second"] / raw if raw else None
  row = dict(
    algorithm=algorithm,
    env=env_id,
    network=network,
    num_envs=total,
    learners=learners,
    steps_per_second=figure["steps_per_second"],
    compile_s=figure["compile_s"],
    ratio_to_raw=ratio,
  )
  print(
    f"{algorithm:>10} {env_id} learners {learners:>2} envs {total:>4}: "
    f"{row['steps_per_second']:>9.0f} steps/s"
    + (f" ({ratio:.2f} of raw)" if ratio is not None else "")
    + f", compile {row['compile_s']:.1f}s",
    flush=True,
  )
  return row


def main(argv: list[str] | None = None) -> None:
  args = parse(sys.argv[1:] if argv is None else argv)
  info = measure.machine()
  command = "python " + " ".join(sys.argv)
  print(f"device: {info['device']}; cpu: {info['cpu']}; jax {info['jax']}", flush=True)
  raw: dict[tuple[str, int], float] = {}
  rows, skipped = [], set()
  for algorithm, env_id, total, learners, source in _jobs(args):
    if algorithm in skipped:
      continue
    job = (algorithm, env_id, total, learners, source)
    try:
      if args.isolate:
        figure, network = _in_child(args, job)
      else:
        figure, network = measure_job(args, *job)
    except (FileNotFoundError, ValueError) as e:
      print(f"{algorithm:>10}: skipped ({e})", flush=True)
      skipped.add(algorithm)
      continue
    if algorithm == "raw":
      raw[env_id, total] = figure["steps_per_second"]
    rows.append(_row(job, figure, network, raw.get((env_id, total))))
  split = time_split(rows)
  if split:
    print("\n" + "\n".join(split_lines(split)), flush=True)
  if args.out:
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out + ".json", "w") as f:
      json.dump(dict(machine=info, command=command, rows=rows, time_split=split), f, indent=2)
    with open(args.out + ".md", "w") as f:
      f.write(markdown(info, rows, command))


if __name__ == "__main__":
  main()
