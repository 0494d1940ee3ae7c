"""The runs of experiments/gala_best.py's pages: read from `galax.results.sweep` folders
(one per method and role, see gala_best.py) or from a stored runs.json, stored as runs.json,
and each method's best rate. experiments/ba3c_best_runs.py reads its runs.json through
these.

A method's best rate per game is the rate with the highest mean over seeds 0-2 (the
sweep's seeds), among all rates swept.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Iterator

import numpy as np

METHODS = ("ring", "allreduce", "a3c")
SWEEP_SEEDS = (0, 1, 2)

# {(group, game, lr): {seed: final training return}}
Runs = dict[tuple[str, str, float], dict[int, float]]


def group_of(folder: str) -> str:
  """'ring_ext' / 'ring_s34' / 'ring_s59' / 'ring' -> 'ring'; other folders are their own
  group."""
  for suffix in ("_ext", "_s34", "_s59"):
    if folder.endswith(suffix):
      return folder[: -len(suffix)]
  return folder


def seed_records(root: str) -> Iterator[tuple[str, str, float, dict]]:
  """(folder, game, learning rate, record) of each finished galax run's seed*.json under
  <root>/<folder>/ (the sweeps' layout; gala_best and ba3c_best read them alike)."""
  for path in glob.glob(os.path.join(root, "*", "**", "seed*.json"), recursive=True):
    with open(path) as f:
      run = json.load(f)
    if run.get("kind") != "galax-run" or run.get("train_mean_return") is None:
      continue
    folder = os.path.relpath(path, root).split(os.sep)[0]
    lr = float(run["config"]["optimizer"]["learning_rate"])
    yield folder, run["env_id"].split("/")[-1], lr, run


def read_runs(root: str) -> Runs:
  runs: Runs = {}
  for folder, game, lr, run in seed_records(root):
    runs.setdefault((group_of(folder), game, lr), {})[int(run["seed"])] = float(
      run["train_mean_return"]
    )
  return runs


def runs_from_json(path: str) -> Runs:
  """The runs of a committed runs.json (dump_runs' rows), as read_runs reads them from the
  run folders: each row under the group of its top folder."""
  with open(path) as f:
    rows = json.load(f)
  runs: Runs = {}
  for row in rows:
    if row.get("train_mean_return") is None:
      continue
    group = group_of(row["folder"].split("/")[0])
    runs.setdefault((group, row["game"], float(row["lr"])), {})[int(row["seed"])] = float(
      row["train_mean_return"]
    )
  return runs


def dump_runs(root: str, path: str) -> None:
  """Every run's (folder, game, rate, seed, final training return, galax commit) as JSON."""
  rows = []
  for run_path in sorted(glob.glob(os.path.join(root, "**", "seed*.json"), recursive=True)):
    with open(run_path) as f:
      run = json.load(f)
    if run.get("kind") != "galax-run":
      continue
    rel = os.path.relpath(run_path, root)
    folder = min((rel.split(f"/{key}")[0] for key in ("env.id=", "optimizer.")), key=len)
    rows.append(
      dict(
        folder=folder,
        game=run["env_id"].split("/")[-1],
        lr=float(run["config"]["optimizer"]["learning_rate"]),
        seed=int(run["seed"]),
        train_mean_return=run.get("train_mean_return"),
        final_metric=run.get("final_metric"),
        commit=(run.get("git") or {}).get("commit"),
        dirty=(run.get("git") or {}).get("dirty"),
      )
    )
  with open(path, "w") as f:
    json.dump(rows, f, indent=0)


def games(runs: Runs) -> list[str]:
  return sorted({g for _, g, _ in runs})


def rates(runs: Runs, group: str, game: str) -> list[float]:
  return sorted(lr for g, gm, lr in runs if g == group and gm == game)


def best_rate(runs: Runs, group: str, game: str) -> float | None:
  """The rate whose mean over the sweep's seeds (0-2) is highest."""
  scored = []
  for lr in rates(runs, group, game):
    values = [v for s, v in runs[(group, game, lr)].items() if s in SWEEP_SEEDS]
    if len(values) == len(SWEEP_SEEDS):
      scored.append((float(np.mean(values)), lr))
  return max(scored)[1] if scored else None


def best_rates(runs: Runs) -> dict[str, dict[str, float | None]]:
  return {m: {g: best_rate(runs, m, g) for g in games(runs)} for m in METHODS}


def values(runs: Runs, group: str, game: str, lr: float, held_out: bool = False) -> np.ndarray:
  """The runs at `lr`, in seed order; `held_out`: only the seeds that did not pick it."""
  seeds = runs.get((group, game, lr), {})
  return np.array([seeds[s] for s in sorted(seeds) if not (held_out and s in SWEEP_SEEDS)])


def read_folder(folder: str) -> dict[str, np.ndarray]:
  """{game: final training returns per seed} of every run under `folder`."""
  found: dict[str, dict[int, float]] = {}
  for path in glob.glob(os.path.join(folder, "**", "seed*.json"), recursive=True):
    with open(path) as f:
      run = json.load(f)
    if run.get("kind") == "galax-run" and run.get("train_mean_return") is not None:
      found.setdefault(run["env_id"].split("/")[-1], {})[int(run["seed"])] = float(
        run["train_mean_return"]
      )
  return {g: np.array([v[s] for s in sorted(v)]) for g, v in found.items()}
