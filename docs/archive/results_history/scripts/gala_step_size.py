"""How far GALA-A2C's and all-reduce A2C's parameters move per update, at the GALA claim's
settings (experiments/claims.py: 4 learners x 16 envs, RMSProp eps 0.01, lr 7e-4 x sqrt(4)).

  python docs/archive/results_history/scripts/gala_step_size.py --windows=12

For each variant it trains from the same seed and prints, for consecutive windows of
`--window` updates, learner 0's net displacement per update, ||theta_{k+W} - theta_k|| / W
(the part of the motion that persists over W updates), and the mean over the windows. With
SGD, GALA on the full graph makes exactly all-reduce's updates (a test in
tests/results/test_experiments_claims.py). With per-learner RMSProp, each learner normalises its own
16-env gradient, whose second moment is larger than that of the 4-learner mean gradient;
this script measures the resulting difference in step size.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import jax
import numpy as np

from galax.experiments import claims  # installed with galax


def displacements(config, windows: int, window: int) -> list[float]:
  """Learner 0's ||theta_{k+W} - theta_k|| / W for `windows` consecutive windows."""
  import galax

  config.updates_per_call = window
  algo = galax.make_algorithm(config)
  state, out = algo.init(), []
  for _ in range(windows):
    before = [np.asarray(x[0]) for x in jax.tree.leaves(state.params)]
    state, _ = algo.step(state)
    after = [np.asarray(x[0]) for x in jax.tree.leaves(state.params)]
    out.append(float(np.sqrt(sum(np.sum((b - a) ** 2) for a, b in zip(before, after)))) / window)
  return out


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(
    prog="gala_step_size.py",
    description=__doc__,
    formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  parser.add_argument("--env", default="gymnax/SpaceInvaders-MinAtar")
  parser.add_argument("--variants", default="allreduce,gala_full,gala_ring")
  parser.add_argument("--windows", type=int, default=12)
  parser.add_argument("--window", type=int, default=50, help="updates per window")
  parser.add_argument("--seed", type=int, default=0)
  args = parser.parse_args(sys.argv[1:] if argv is None else argv)
  try:
    if args.windows < 1 or args.window < 1:
      raise ValueError("--windows and --window must be >= 1.")
    variants = {v.name: v for v in claims.gala_variants(args.env, 10_000_000)}
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    unknown = sorted(set(names) - set(variants))
    if unknown:
      raise ValueError(f"--variants: no variant {unknown}; choose from {sorted(variants)}.")
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
  print(
    f"{args.env}: learner 0's net displacement per update, windows of {args.window} "
    f"updates ({args.window * 64} env steps), seed {args.seed}"
  )
  means = {}
  for name in names:
    config = variants[name].config
    config.seed = args.seed
    config.gossip.metrics = False  # not needed here; the updates are the same
    values = displacements(config, args.windows, args.window)
    means[name] = float(np.mean(values[1:])) if len(values) > 1 else values[0]
    print(
      f"{name:18s} "
      + " ".join(f"{v:.4f}" for v in values)
      + f" | mean after the first window {means[name]:.4f}",
      flush=True,
    )
  if "allreduce" in means:
    for name, value in means.items():
      if name != "allreduce":
        print(f"{name} / allreduce: {value / means['allreduce']:.2f}")


if __name__ == "__main__":
  main()
