"""HTS-PPO at both gradient points against PPO, from `galax.results.sweep` output (issue: the
confounded HTS-PPO verdict). Reads per-seed run JSONs and prints a markdown table of the
final training returns (mean of the last 100 episodes) with 95% bootstrap CIs, and each
HTS-PPO point's difference from PPO with a 95% Welch t-interval (`paper_protocols.welch_ci`,
the interval of the Verdicts page, docs/results.md), labelled and judged against the claim
HTS-PPO = PPO by `galax.results.verdict` (margin: 10% of PPO's mean), with one verdict per
point over the games.

  python -m experiments.hts_gradient_point --ppo=<sweep dir> --hts=<sweep dir> \
      --label="Table A6 PPO" [--out=table.md]

The committed tables, again from the committed seed JSONs (D=docs/results/hts_gradient_point):

  python -m experiments.hts_gradient_point --ppo=$D/a6_ppo --hts=$D/a6_hts_ppo \
      --label="(a) HTS-RL Table A6's PPO" --out=$D/table_a6.md
  python -m experiments.hts_gradient_point --ppo=$D/b_ppo \
      --hts=$D/b_hts_ppo_current,$D/b_hts_ppo_stale --label="(b) minatar_ppo" \
      --out=$D/table_minatar_ppo.md

`--ppo`: a sweep over env.id; `--hts`: a sweep over env.id (and hts.gradient_point), or
several comma-separated sweeps, each of one gradient point.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
from typing import Sequence

import numpy as np

from galax.results import paper_protocols as protocols
from galax.results import verdict as rule

from .verdicts import welch_two_groups


def read_runs(sweep_dir: str) -> dict[tuple[str, str], np.ndarray]:
  """{(game, gradient point or "ppo"): final training returns per seed} of a sweep."""
  found: dict[tuple[str, str], list[float]] = {}
  for path in glob.glob(os.path.join(sweep_dir, "**", "seed*.json"), recursive=True):
    with open(path) as f:
      run = json.load(f)
    config = run["config"]
    game = config["env"]["id"].split("/")[-1]
    point = config["hts"]["gradient_point"] if config["algorithm"] == "hts_ppo" else "ppo"
    found.setdefault((game, point), []).append(float(run["train_mean_return"]))
  return {k: np.array(v) for k, v in found.items()}


def table(runs: dict[tuple[str, str], np.ndarray], label: str) -> str:
  lines = [
    f"### {label}",
    "",
    "| game | PPO | HTS-PPO current | HTS-PPO stale (Eq. 6) | current - PPO | stale - PPO |",
    "| --- | --- | --- | --- | --- | --- |",
  ]
  verdicts: dict[str, dict[str, str]] = dict(current={}, stale={})
  for game in sorted({g for g, _ in runs}):
    cells, diffs = [], []
    for point in ("ppo", "current", "stale"):
      values = runs.get((game, point))
      if values is None:
        cells.append("-")
        continue
      mean, lo, hi = protocols.bootstrap_ci(values)
      cells.append(f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={len(values)})")
    for point in ("current", "stale"):
      if (game, point) in runs and (game, "ppo") in runs:
        base = runs[(game, "ppo")]
        c = rule.difference(
          *welch_two_groups(runs[(game, point)], base, "diff"), baseline=float(base.mean())
        )
        verdicts[point][game] = rule.verdict("equal", c)
        diffs.append(f"{rule.describe(c)}, {verdicts[point][game]}")
      else:
        diffs.append("-")
    lines.append(f"| {game} | " + " | ".join(cells + diffs) + " |")
  lines.append("")
  lines += [f"- HTS-PPO {point} = PPO: {rule.overall(v)}" for point, v in verdicts.items() if v]
  return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> str:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--ppo", required=True)
  parser.add_argument("--hts", required=True, help="one or more sweep dirs, comma-separated")
  parser.add_argument("--label", default="HTS-PPO vs PPO")
  parser.add_argument("--out", default="")
  args = parser.parse_args(argv)
  runs = read_runs(args.ppo)
  for directory in args.hts.split(","):
    runs.update(read_runs(directory))
  text = table(runs, args.label)
  if args.out:
    with open(args.out, "w") as f:
      f.write(text)
  print(text)
  return text


if __name__ == "__main__":
  main()
