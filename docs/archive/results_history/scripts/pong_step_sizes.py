"""Why configs/pong_paac.py's policy stays uniform: the size of its updates, measured.

  python docs/archive/results_history/scripts/pong_step_sizes.py      # 4 variants x 200 updates
  python docs/archive/results_history/scripts/pong_step_sizes.py --variants=paac,sb3 --calls=8

Each variant trains pong_paac (Pong-v5, archnips, 32 envs x t_max 5) for `calls` x 50
updates from the same seed, changing only what its row names, and prints per layer the root
mean square of the parameters at init and of one update's change (the change over the
last call's 50 updates / 50: the drift, the part of the steps that does not cancel),
the mean gradient norm and the policy's entropy (ln 6 = 1.792 is uniform).

  paac       the paper's optimizer: TF RMSProp, eps 0.1 inside the square root, mean
             square starting at 1, lr 0.0007 x 32 = 0.0224, clip 40
  paac_sum   the same with the loss summed over the t_max steps (PAAC's code scales its
             mean loss by t_max)
  paac_lecun the same with lecun-normal init everywhere (the policy head not scaled by
             0.01: gradients reach the torso through the policy)
  sb3        PyTorch RMSProp (eps 1e-5 outside the root, mean square from 0), lr 7e-4,
             clip 0.5: SB3's / baselines' A2C optimizer

With eps = 0.1 inside the root and a mean square nu that decays from 1 to the square of
gradients of order 1e-4 per element, the step lr g / sqrt(nu + 0.1) becomes plain SGD at
lr / sqrt(0.1) = 0.071: an element's step is proportional to its gradient, and the
660k-weight fc layer, whose elements get the smallest gradients, barely moves. PyTorch's
RMSProp divides by sqrt(nu) + 1e-5 instead, so every element moves by about lr.
Figures: ../2026-11-25.md, "Why the old pong_paac's policy stayed uniform" (this script
then ran as benchmarks/pong_step_sizes.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import jax
import numpy as np

import galax
from galax import config as config_lib

VARIANTS: dict[str, dict[str, object]] = {
  "paac": {},
  "paac_sum": dict(loss__sum_over_time=True),
  "paac_lecun": dict(network__init="lecun"),
  "sb3": dict(
    optimizer__rmsprop_convention="torch",
    optimizer__eps=1e-5,
    optimizer__rmsprop_initial_scale=0.0,
    optimizer__learning_rate=7e-4,
    optimizer__lr_scaling="none",
    optimizer__max_grad_norm=0.5,
  ),
}


def parse(argv: Sequence[str]) -> argparse.Namespace:
  parser = argparse.ArgumentParser(
    prog="pong_step_sizes.py",
    description=__doc__,
    formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  parser.add_argument("--variants", default=",".join(VARIANTS), help=f"Of {list(VARIANTS)}.")
  parser.add_argument("--calls", type=int, default=4, help="Calls of 50 updates per variant.")
  parser.add_argument("--seed", type=int, default=0, help="Seed of every variant.")
  args = parser.parse_args(argv)
  args.variants = [v for v in args.variants.split(",") if v]
  unknown = sorted(set(args.variants) - set(VARIANTS))
  if unknown:
    parser.exit(2, f"error: --variants: no variant {unknown}; choose from {list(VARIANTS)}.\n")
  if args.calls < 1:
    parser.exit(2, f"error: --calls must be >= 1, not {args.calls}.\n")
  return args


def layer_rms(tree) -> dict[str, float]:
  """Root mean square of each leaf, keyed by its path ('torso/Dense_0/kernel')."""
  flat = jax.tree_util.tree_flatten_with_path(tree)[0]
  return {
    "/".join(str(getattr(k, "key", k)) for k in path[1:]): float(
      np.sqrt(np.mean(np.square(np.asarray(x))))
    )
    for path, x in flat
  }


def measure(overrides: dict[str, object], calls: int, seed: int) -> dict[str, object]:
  """Init RMS, last call's per-update drift RMS, gradient norm and entropy per call."""
  config = config_lib.load("pong_paac", updates_per_call=50, seed=seed, **overrides)
  algorithm = galax.make_algorithm(config_lib.validate(config))
  state = algorithm.init()
  init = jax.device_get(state.params)
  entropy, grad_norm = [], []
  for _ in range(calls):
    before = jax.device_get(state.params)
    state, metrics = algorithm.step(state)
    after = jax.device_get(state.params)
    entropy.append(float(np.mean(metrics["loss"]["entropy"])))
    grad_norm.append(float(np.mean(metrics["grad_norm"])))
  drift = jax.tree.map(lambda a, b: (a - b) / config.updates_per_call, after, before)
  return dict(init=layer_rms(init), drift=layer_rms(drift), entropy=entropy, grad_norm=grad_norm)


def main(argv: Sequence[str] | None = None) -> None:
  args = parse(sys.argv[1:] if argv is None else argv)
  results = {name: measure(VARIANTS[name], args.calls, args.seed) for name in args.variants}
  names = list(results)
  layers = [k for k in results[names[0]]["drift"] if k.endswith("kernel")]
  heads = {"Dense_0/kernel": "policy head", "Dense_1/kernel": "value head"}
  print(
    f"per-update drift RMS of each kernel over updates "
    f"{(args.calls - 1) * 50}-{args.calls * 50} (init RMS in brackets)"
  )
  print(f"| layer | {' | '.join(names)} |")
  print(f"| --- | {' | '.join('---:' for _ in names)} |")
  for layer in layers:
    cells = [f"{results[n]['drift'][layer]:.2e} [{results[n]['init'][layer]:.3f}]" for n in names]
    print(f"| {heads.get(layer, layer)} | {' | '.join(cells)} |")
  for what in ("grad_norm", "entropy"):
    cells = [" ".join(f"{x:.3f}" for x in results[n][what]) for n in names]
    print(f"| {what} per call | {' | '.join(cells)} |")


if __name__ == "__main__":
  main()
