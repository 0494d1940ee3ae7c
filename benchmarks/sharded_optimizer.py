"""Per-device optimizer-state memory, replicated vs sharded (ZeRO-1), in one run.

  python -m benchmarks.sharded_optimizer --devices=8 --learners=8,16,64
  python -m benchmarks.sharded_optimizer --config=ba3c_breakout --learners=64 --seconds=5

For each learner count n it builds the config's training state twice, with
optimizer.sharded_state False and True, and sums the bytes that each device actually holds
of the optimizer-state arrays (`addressable_shards`). Replicated, every learner holds the
whole state (L = n / D learners per device: L copies); sharded, every learner holds 1/n of
it, so the per-device figure falls by n. With --seconds > 0 it also times the training step
of both (env steps/s; compile excluded), and checks that both give the same parameters
after one call.
"""

from __future__ import annotations

import argparse
import os
import sys

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
from galax.parallel.layout import to_host


def parse(argv: list[str]) -> argparse.Namespace:
  p = cli.parser("sharded_optimizer", __doc__)
  p.add_argument("--config", default="ba3c_breakout", help="Config name or file.")
  p.add_argument("--learners", type=cli.ints, default=[8, 64], help="Learner counts n.")
  # Memory does not depend on the envs per learner: keep them few.
  p.add_argument("--envs_per_learner", type=int, default=1, help="Envs per learner.")
  p.add_argument("--devices", type=int, default=0, help="Virtual CPU devices (0: the real ones).")
  p.add_argument("--seconds", type=float, default=0.0, help="Also time the step (0: skip).")
  return p.parse_args(argv)


def bytes_per_device(tree) -> dict[str, int]:
  """Bytes of `tree`'s arrays held by each device (its addressable shards)."""
  held: dict[str, int] = {}
  for leaf in jax.tree.leaves(tree):
    for shard in leaf.addressable_shards:
      held[str(shard.device)] = held.get(str(shard.device), 0) + shard.data.nbytes
  return held


def measure_one(args: argparse.Namespace, learners: int, sharded: bool) -> dict:
  config = config_lib.load(
    args.config,
    num_learners=learners,
    envs_per_learner=args.envs_per_learner,
    combine="allreduce",
    updates_per_call=1,
  )
  config.optimizer.sharded_state = sharded
  config_lib.validate(config)
  algorithm = galax.make_algorithm(config)
  state = algorithm.init()
  held = bytes_per_device(state.opt_state)
  num_params = sum(int(np.prod(x.shape[1:])) for x in jax.tree.leaves(state.params))
  row = dict(
    learners=learners,
    devices=algorithm.layout.num_devices,
    per_device=algorithm.layout.learners_per_device,
    params=num_params,
    max_bytes=max(held.values()),
    min_bytes=min(held.values()),
  )
  if args.seconds > 0:
    state, _ = algorithm.step(state)
    row["params_after_one_call"] = to_host(state.params)
    steps = algorithm.updates_per_call * algorithm.env_steps_per_update
    sps, compile_s, _ = measure.steps_per_second(
      lambda s: algorithm.step(s)[0], state, steps, args.seconds
    )
    row.update(steps_per_second=sps, compile_s=compile_s)
  algorithm.env.close()
  return row


def main(argv: list[str] | None = None) -> None:
  args = parse(sys.argv[1:] if argv is None else argv)
  info = measure.machine()
  print(
    f"device: {info['device']}; cpu: {info['cpu']}; jax {info['jax']}; config {args.config}",
    flush=True,
  )
  rates = "  steps/s repl / shard" if args.seconds else ""
  print(
    f"{'learners':>8} {'devices':>7} {'L/dev':>5} {'params':>9} {'replicated B/dev':>17} "
    f"{'sharded B/dev':>14} {'ratio':>7}" + rates
  )
  for n in args.learners:
    replicated, sharded = measure_one(args, n, False), measure_one(args, n, True)
    ratio = replicated["max_bytes"] / sharded["max_bytes"]
    line = (
      f"{n:>8} {replicated['devices']:>7} {replicated['per_device']:>5} "
      f"{replicated['params']:>9} {replicated['max_bytes']:>17,} "
      f"{sharded['max_bytes']:>14,} {ratio:>7.2f}"
    )
    if args.seconds:
      same = all(
        np.allclose(a, b, rtol=1e-4, atol=1e-6)
        for a, b in zip(
          jax.tree.leaves(replicated["params_after_one_call"]),
          jax.tree.leaves(sharded["params_after_one_call"]),
        )
      )
      line += (
        f"  {replicated['steps_per_second']:.0f} / {sharded['steps_per_second']:.0f}"
        f" (same params after one update: {same})"
      )
    print(line, flush=True)


if __name__ == "__main__":
  main()
