"""Experiment D of issue 75: the largest stable learning rate of A2C, HTS-A2C at
theta_{k-1} (Eq. 6) and HTS-A2C at theta_k on Breakout-MinAtar
(docs/results/atari_gala_hts/PREREGISTRATION.md, "D: why the one-step delay fails").

  python -m experiments.hts_delay_stability run      # every registered run, in turn
  python -m experiments.hts_delay_report             # table.md and stability.png

`run` starts each run with its registered command (a finished run is skipped, a started
one resumed) and keeps its small files under docs/results/hts_delay_stability/runs/<name>;
experiments/hts_delay_report.py reads them there and writes the table and the picture by
the registered rule.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
from typing import Sequence

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(ROOT, "runs", "delay")
KEPT = os.path.join(ROOT, "docs", "results", "hts_delay_stability")
KEPT_FILES = ("config.json", "config_changes.json", "metrics.csv", "result.json", "sittings.json")
RATES = tuple(3e-4 * 2**k for k in range(6))
EXTENSION = (1.92e-2, 3.84e-2)  # only if A2C's cell at 9.6e-3 learns
SEEDS = (0, 1, 2)
VARIANTS = {
  "a2c": [],
  "hts_stale": ["--config.algorithm=hts_a2c", "--config.hts.alpha=5", "--config.hts.delayed=True"]
  + ["--config.hts.gradient_point=stale"],
  "hts_current": ["--config.algorithm=hts_a2c", "--config.hts.alpha=5"]
  + ["--config.hts.delayed=True", "--config.hts.gradient_point=current"],
}
LABELS = {
  "a2c": "A2C",
  "hts_stale": "HTS-A2C, theta_{k-1} (Eq. 6)",
  "hts_current": "HTS-A2C, theta_k",
}
SETTINGS = [
  "--config=minatar_a2c",
  "--config.network.name=minatar",
  "--config.network.conv_impl=patches",
  "--config.envs_per_learner=16",
  "--config.t_max=5",
  "--config.returns=nstep",
  "--config.optimizer.name=rmsprop",
  "--config.optimizer.rmsprop_convention=torch",
  "--config.optimizer.rmsprop_decay=0.99",
  "--config.optimizer.eps=1e-5",
  "--config.optimizer.anneal=none",
  "--config.total_env_steps=1000000",
  "--config.log_every_steps=50000",
]
LEARNS = 0.5  # a cell learns at >= LEARNS x the best A2C cell's mean final return


def name(variant: str, rate: float, seed: int) -> str:
  return f"{variant}_lr{rate:.3g}_s{seed}"


def command(variant: str, rate: float, seed: int) -> list[str]:
  flags = [f"--config.optimizer.learning_rate={rate:.3g}", f"--config.seed={seed}"]
  workdir = os.path.join(RUNS, name(variant, rate, seed))
  return [sys.executable, "run.py", *SETTINGS, *flags, f"--workdir={workdir}", *VARIANTS[variant]]


def folder(run: str) -> str:
  """Its workdir where it ran here, else its copy kept in the tree."""
  here = os.path.join(RUNS, run)
  return (
    here if os.path.exists(os.path.join(here, "result.json")) else os.path.join(KEPT, "runs", run)
  )


def result(run: str) -> dict | None:
  path = os.path.join(folder(run), "result.json")
  if not os.path.exists(path):
    return None
  with open(path) as f:
    return json.load(f)


def keep(run: str) -> None:
  target = os.path.join(KEPT, "runs", run)
  os.makedirs(target, exist_ok=True)
  for file in KEPT_FILES:
    if os.path.exists(os.path.join(RUNS, run, file)):
      shutil.copy2(os.path.join(RUNS, run, file), target)


def run_one(variant: str, rate: float, seed: int) -> None:
  run = name(variant, rate, seed)
  if result(run) is not None:
    return
  cmd = command(variant, rate, seed)
  if os.path.isdir(os.path.join(RUNS, run, "checkpoints")):
    cmd.append("--resume")
  print(f"delay: {run}", flush=True)
  subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
  keep(run)


def grid() -> list[float]:
  """The registered rates, with the extension where A2C's top cell learns."""
  cells = table_cells(list(RATES))
  top = cells.get(("a2c", RATES[-1]))
  best = max((v["mean"] for (var, _), v in cells.items() if var == "a2c"), default=None)
  extend = top is not None and best is not None and top["mean"] >= LEARNS * best
  return list(RATES) + (list(EXTENSION) if extend else [])


def final_and_gradient(run: str) -> tuple[float, float] | None:
  """(final return, median gradient norm past 500k) of a finished run, else None."""
  outcome = result(run)
  if outcome is None:
    return None
  with open(os.path.join(folder(run), "metrics.csv")) as f:
    rows = list(csv.DictReader(f))
  late = [float(r["grad_norm"]) for r in rows if int(r["env_steps"]) > 500_000]
  gradient = float(np.median(late)) if late else float("nan")
  final = 0.0 if outcome.get("diverged") else float(outcome["mean_return"])
  return final, gradient


def table_cells(rates: Sequence[float]) -> dict[tuple[str, float], dict]:
  """(variant, rate) -> its seeds' finals and gradient norms, for cells with every seed done."""
  cells = {}
  for variant in VARIANTS:
    for rate in rates:
      runs = [final_and_gradient(name(variant, rate, s)) for s in SEEDS]
      if all(runs):
        finals, grads = [r[0] for r in runs], [r[1] for r in runs]
        cells[variant, rate] = dict(finals=finals, grads=grads, mean=float(np.mean(finals)))
  return cells


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("action", choices=("run",))
  parser.parse_args(argv)
  for seed in SEEDS:
    for rate in RATES:
      for variant in VARIANTS:
        run_one(variant, rate, seed)
  extension = [r for r in grid() if r not in RATES]  # read once the registered grid is done
  for seed in SEEDS:
    for rate in extension:
      for variant in VARIANTS:
        run_one(variant, rate, seed)


if __name__ == "__main__":
  main()
