"""The accelerator plan: every gymnax config compiled for TPU slices and an H100 node.

  python -m benchmarks.accelerator_plan --out=docs/accelerators.md
  python -m benchmarks.accelerator_plan --configs=minatar_gala --topologies=v5e:2x4 --out=-

For each config and target: `galax.aot.compile`'s figures at the config's envs per learner (one
learner per chip), then the largest envs per learner that fits the chip
(`galax.aot.compile.find_max_envs`, on the `--max_envs_on` targets) and the figures there. Needs the
`tpu` and `gpu-aot` extras; runs on a CPU. Everything in the tables is a compiler estimate, not a
measurement.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from galax.aot import compile as aot  # noqa: E402
from galax.config import load  # noqa: E402

CONFIGS = ("minatar_a2c", "minatar_gala", "minatar_hts_a2c", "minatar_ppo")  # the gymnax configs
TOPOLOGIES = ("v5e:2x4", "v5p:4x4x4", "v6e:16x16", "h100:8")


def _steps(x: float) -> str:
  return f"{x / 1e6:,.2f}M" if x >= 1e6 else f"{x / 1e3:,.0f}k"


def row(r: aot.Report) -> str:
  collectives = ", ".join(f"{op} x{c:g}" for op, (c, _) in r.collectives.items()) or "none"
  return (
    f"| {r.config_name} | {r.topology} | {r.envs_per_chip:,} | "
    f"{r.needed_bytes / 2**30:.3f} / {r.chip_memory_bytes / 2**30:.0f} | "
    f"{r.flops_per_update:.3g} | {r.bytes_per_update:.3g} | {r.ops_per_update:,.0f} | "
    f"{collectives} | {r.compile_s:.1f} | {r.bound} | "
    f"{_steps(r.steps_per_s_per_chip)} | {_steps(r.steps_per_s_slice)} |"
  )


HEADER = (
  "| config | target | envs/chip | GiB needed / HBM per chip | FLOPs/update/chip | "
  "bytes/update/chip | kernels/update | collectives/update | compile s | bound | "
  "steps/s/chip | steps/s slice |\n" + "|---" * 12 + "|"
)


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(
    description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
  )
  parser.add_argument("--configs", default=",".join(CONFIGS))
  parser.add_argument("--topologies", default=",".join(TOPOLOGIES))
  parser.add_argument(
    "--max_envs_on",
    default="v5e:2x4,h100:8",
    help="targets to search the largest env count on (each search is a "
    "few compiles, the large ones slow on a CPU)",
  )
  parser.add_argument("--out", default="docs/accelerators.md", help="'-' for stdout")
  args = parser.parse_args(argv)
  at_config, at_max = [], []
  start = time.time()
  for name in [c for c in args.configs.split(",") if c]:
    for topology in [t for t in args.topologies.split(",") if t]:
      at_config.append(row(aot.build(name, load(name), topology)))
      if topology not in args.max_envs_on.split(","):
        continue
      envs, report = aot.find_max_envs(name, load(name), topology)
      at_max.append(row(report))
      print(
        f"{name} on {topology}: fits up to {envs:,} envs per learner "
        f"({time.time() - start:.0f} s so far)",
        file=sys.stderr,
        flush=True,
      )
  text = "\n".join(
    [
      "### At each config's envs per learner",
      "",
      HEADER,
      *at_config,
      "",
      "### At the largest envs per learner that fits (powers of two times the config's)",
      "",
      HEADER,
      *at_max,
      "",
    ]
  )
  if args.out == "-":
    print(text)
  else:
    with open(args.out + ".tables", "w") as f:
      f.write(text)
    print(f"wrote {args.out}.tables ({time.time() - start:.0f} s)")


if __name__ == "__main__":
  main()
