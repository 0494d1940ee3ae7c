"""Compile time of the first call and steady steps/s, per config (issue 15's table).

  python -m benchmarks.compile_time ba3c_breakout gala_a2c --seconds=20 \
      --set updates_per_call=1

Compare two code paths in one run on the same machine: run this file with
PYTHONPATH pointing at the other checkout's sources, alternating, and report ratios
(compile times on a shared CPU are noisy).
"""

from __future__ import annotations

import argparse

import galax
from benchmarks import measure  # benchmarks/measure.py, next to this file
from galax import config as config_lib


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("configs", nargs="+", help="names in configs/ or config files")
  parser.add_argument("--seconds", type=float, default=10.0, help="steady-state seconds")
  parser.add_argument(
    "--set",
    action="append",
    default=[],
    metavar="KEY=VALUE",
    help="a dotted config field, e.g. updates_per_call=1 (repeatable)",
  )
  args = parser.parse_args()
  print(f"galax from {galax.__file__}; {measure.machine()}")
  print(f"{'config':<24} {'compile s':>9} {'steps/s':>9}")
  for name in args.configs:
    config = config_lib.load(name)
    for item in args.set:  # by hand: the other checkout may predate config.set_fields
      key, value = item.split("=", 1)
      *parents, leaf = key.split(".")
      node = config
      for part in parents:
        node = node[part]
      node[leaf] = type(node[leaf])(value)
    result = measure.algorithm(config_lib.validate(config), args.seconds)
    print(f"{name:<24} {result['compile_s']:>9.1f} {result['steps_per_second']:>9.0f}", flush=True)


if __name__ == "__main__":
  main()
