"""A short learning check of the BA3C, A3C and IMPALA baselines on CartPole-v1 (CPU).

  python -m benchmarks.learning_check                   # all three, seed 0
  python -m benchmarks.learning_check --baselines=impala --seeds=0,1,2

Each baseline trains from the CartPole A2C job (configs/cartpole_a2c.py: MLP 64-64, gamma
0.99, entropy 0.01) with its own architecture and optimizer settings below, until the mean
return of the last 100 full episodes reaches 475 (CartPole's solved bar) or --max_steps
agent steps pass, and prints the return reached, the steps it took and the wall time.

  ba3c    synchronous distributed BA3C: 4 learners x 8 envs x t_max 4 (batch 32 each),
          all-reduce, Adam (lr 1e-3, b1 0.8, b2 0.75, eps 1e-8), per-tensor clipping at
          average norm 0.1, sharded optimizer state, 3 of 4 gradients kept per update
  a3c     4 learners x 8 envs, RMSProp (lr 1e-3 annealed linearly over the budget), each
          round's 4 gradients applied one after another, computed at parameters 0..3
          updates old (plus their position 0..3 in the round)
  impala  16 envs x unroll 10, policy lag 2, V-trace (rho-bar = c-bar = 1), RMSProp (lr
          2e-3 annealed, PyTorch eps 0.01, clip 40) on the TorchBeast-style summed loss

CartPole is not Atari: learning rates and batch shapes are set for it (A3C and IMPALA
oscillate around 300-450 without annealing in 2M steps); the Atari hyper-parameters are in
configs/. With annealing the result depends on --max_steps (the schedule spans it).
"""

from __future__ import annotations

import argparse
import sys
import time

from benchmarks import cli
from galax import config as config_lib
from galax.training.loop import train

# Overrides of configs/cartpole_a2c.py (nested keys with "__").
BASELINES: dict[str, dict] = {
  "ba3c": dict(
    num_learners=4,
    num_devices=1,
    envs_per_learner=8,
    t_max=4,
    combine="allreduce",
    optimizer__name="adam",
    optimizer__learning_rate=1e-3,
    optimizer__adam_b1=0.8,
    optimizer__adam_b2=0.75,
    optimizer__eps=1e-8,
    optimizer__max_grad_norm=0.0,
    optimizer__clip_average_norm=0.1,
    optimizer__sharded_state=True,
    stragglers__num_kept=3,
  ),
  "a3c": dict(
    algorithm="a3c",
    num_learners=4,
    num_devices=1,
    envs_per_learner=8,
    t_max=5,
    optimizer__learning_rate=1e-3,
    optimizer__anneal="linear",
    a3c__max_staleness=3,
    a3c__staleness="uniform",
  ),
  "impala": dict(
    algorithm="impala",
    envs_per_learner=16,
    t_max=10,
    impala__policy_lag=2,
    impala__reduction="sum",
    loss__value_coef=0.25,
    optimizer__learning_rate=2e-3,
    optimizer__anneal="linear",
    optimizer__eps=0.01,
    optimizer__max_grad_norm=40.0,
    updates_per_call=20,
  ),
}


def parse(argv: list[str]) -> argparse.Namespace:
  p = cli.parser("learning_check", __doc__)
  p.add_argument("--baselines", type=cli.strings, default=list(BASELINES), help="What to train.")
  p.add_argument("--seeds", type=cli.ints, default=[0], help="Seeds.")
  p.add_argument("--max_steps", type=int, default=2_000_000, help="Agent-step budget per run.")
  p.add_argument("--target_return", type=float, default=475.0, help="Stop at this mean return.")
  args = p.parse_args(argv)
  unknown = sorted(set(args.baselines) - set(BASELINES))
  if unknown:
    cli.fail(f"--baselines: no baseline {unknown}; choose from {list(BASELINES)}.")
  return args


def main(argv: list[str] | None = None) -> None:
  args = parse(sys.argv[1:] if argv is None else argv)
  rows = []
  for name in args.baselines:
    for seed in args.seeds:
      config = config_lib.load(
        "cartpole_a2c",
        seed=seed,
        total_env_steps=args.max_steps,
        target_return=args.target_return,
        tensorboard=False,
        **BASELINES[name],
      )
      start = time.perf_counter()
      result = train(config, workdir=None, log=lambda _: None)
      wall = time.perf_counter() - start
      solved = result.mean_return >= args.target_return
      rows.append((name, seed, result.mean_return, result.env_steps, solved, wall))
      print(
        f"{name:>7} seed {seed}: mean return {result.mean_return:7.1f} over the last 100 "
        f"episodes after {result.env_steps:>9,} steps ({'solved' if solved else 'not solved'}"
        f", {wall:.0f} s wall, {result.episodes} episodes)",
        flush=True,
      )
  for name in args.baselines:
    mine = [r for r in rows if r[0] == name]
    steps = [r[3] for r in mine if r[4]]
    print(
      f"{name:>7}: solved {len(steps)} of {len(mine)} seeds"
      + (f", median {sorted(steps)[len(steps) // 2]:,} steps" if steps else "")
      + f"; final returns {', '.join(f'{r[2]:.0f}' for r in mine)}"
    )


if __name__ == "__main__":
  main()
