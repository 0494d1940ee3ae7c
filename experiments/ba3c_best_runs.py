"""The runs of experiments/ba3c_best.py's page: read from `galax.results.sweep` folders
(final return and training curve) or from its stored runs.json (final returns only), each
group's finals at a rate, and its best rate (the highest mean over seeds 0-2).
"""

from __future__ import annotations

import numpy as np

from experiments.gala_best_runs import runs_from_json as gala_runs_from_json
from experiments.gala_best_runs import seed_records

SWEEP_SEEDS = (0, 1, 2)
HELD_OUT = (3, 4, 5)

# {(group, game, lr): {seed: run}}; run: final return and curve
Runs = dict[tuple[str, str, float], dict[int, dict]]


def group_of(folder: str) -> str:
  return folder[:-4] if folder.endswith("_s35") else folder


def read_runs(root: str) -> Runs:
  runs: Runs = {}
  for folder, game, lr, run in seed_records(root):
    tc = run.get("train_curve") or {}
    pairs = [
      (s, r) for s, r in zip(tc.get("env_steps", []), tc.get("mean_return", [])) if r is not None
    ]
    runs.setdefault((group_of(folder), game, lr), {})[int(run["seed"])] = dict(
      final=float(run["train_mean_return"]),
      curve=[r for _, r in pairs],
      steps=[s for s, _ in pairs],
    )
  return runs


def runs_from_json(path: str) -> Runs:
  """The runs of a runs.json ba3c_best.py wrote: final returns only (no curves)."""
  runs: Runs = {}
  for (folder, game, lr), seeds in gala_runs_from_json(path).items():
    for seed, final in seeds.items():
      runs.setdefault((group_of(folder), game, lr), {})[seed] = dict(
        final=final, curve=[], steps=[]
      )
  return runs


def finals(runs: Runs, group: str, game: str, lr: float, seeds=SWEEP_SEEDS) -> np.ndarray:
  found = runs_at(runs, group, game, lr)
  return np.array([found[s]["final"] for s in seeds if s in found])


def runs_at(runs: Runs, group: str, game: str, lr: float) -> dict[int, dict]:
  """The runs at `lr` (4 x 1e-3 and 4e-3 may differ in the last bit)."""
  for (g, gm, r), found in runs.items():
    if g == group and gm == game and np.isclose(r, lr, rtol=1e-6, atol=0):
      return found
  return {}


def rates(runs: Runs, group: str, game: str) -> list[float]:
  return sorted(lr for g, gm, lr in runs if g == group and gm == game)


def best_rate(runs: Runs, group: str, game: str) -> float | None:
  scored = [
    (float(x.mean()), lr)
    for lr in rates(runs, group, game)
    if len(x := finals(runs, group, game, lr)) == len(SWEEP_SEEDS)
  ]
  return max(scored)[1] if scored else None
