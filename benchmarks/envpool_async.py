"""envpool's sync vs async mode (`config.env.batch_size`) on Pong: steps/s, interleaved.

Three figures per setting (num_envs N, batch B; B = N is sync):
  raw     envpool's Python API with random actions (benchmarks/device_phases.py's raw phase,
          the same options: episodic life, reward clipping, envpool's thread count)
  acting  galax's jitted rollout (`measure.acting_only`: the config's network acts, no learning)
  a2c     a galax training step (`measure.algorithm`), the config's A2C
Rounds interleave the settings, so each ratio to sync comes from neighbouring timings (the
2-core machine here is shared); the summary gives the median ratio per setting.

  python -m benchmarks.envpool_async --envs=16,32,64 --parts=raw,acting --rounds=3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from benchmarks.device_phases import _raw_rate

PARTS = ("raw", "acting", "a2c")


def _galax_rate(part: str, config_name: str, envs: int, batch: int, seconds: float) -> float:
  from benchmarks import measure
  from galax.config import load as load_config

  config = load_config(config_name, envs_per_learner=envs)
  config.env.batch_size = 0 if batch == envs else batch
  run = measure.acting_only if part == "acting" else measure.algorithm
  return run(config, seconds)["steps_per_second"]


def rate(part: str, config_name: str, envs: int, batch: int, seconds: float) -> float:
  if part == "raw":
    return _raw_rate(envs, batch, seconds)
  return _galax_rate(part, config_name, envs, batch, seconds)


def main(argv: list[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--envs", default="16,32,64")
  parser.add_argument("--divisors", default="2,4", help="B = N / d for each d (and sync)")
  parser.add_argument("--parts", default="raw,acting")
  parser.add_argument("--config", default="pong_fast")
  parser.add_argument("--seconds", type=float, default=3.0)
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--out", default="", help="a JSON file for every timing")
  args = parser.parse_args(argv)
  parts = args.parts.split(",")
  if set(parts) - set(PARTS):
    raise SystemExit(f"error: --parts takes {', '.join(PARTS)}")
  envs = [int(n) for n in args.envs.split(",")]
  divisors = [1] + [int(d) for d in args.divisors.split(",")]
  timings: dict[str, list[float]] = {}
  for r in range(args.rounds):
    for part in parts:
      for n in envs:
        for d in divisors:
          key = f"{part} N={n} B={n // d}"
          timings.setdefault(key, []).append(rate(part, args.config, n, n // d, args.seconds))
          print(f"round {r} {key}: {timings[key][-1]:,.0f} steps/s", flush=True)
  print("median steps/s, and the median over rounds of async / sync of the same round:")
  for part in parts:
    for n in envs:
      sync = timings[f"{part} N={n} B={n}"]
      cells = [f"sync {statistics.median(sync):,.0f}"]
      for d in divisors[1:]:
        runs = timings[f"{part} N={n} B={n // d}"]
        ratio = statistics.median(a / s for a, s in zip(runs, sync))
        cells.append(f"B={n // d} {statistics.median(runs):,.0f} ({ratio:.2f}x)")
      print(f"{part} N={n}: " + ", ".join(cells))
  if args.out:
    with open(args.out, "w") as f:
      json.dump(dict(args=vars(args), timings=timings), f, indent=1)


if __name__ == "__main__":
  main(sys.argv[1:])
