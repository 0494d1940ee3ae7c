"""Verdicts cells of issue 56's pre-registered Atari runs kept under
docs/results/atari_gala_hts (PREREGISTRATION.md): A-code's GALA-A2C - all-reduce A2C on
Breakout-v5 (p1c, p1d) and B-fast's HTS-A2C / A2C to a running mean of 18 on Pong-v5 (p2c,
p2d). Read by `experiments.verdicts_page.all_cells`."""

from __future__ import annotations

import csv
import os

from . import verdicts_cells as cells
from .atari_prereg import kept_folder
from .atari_prereg_report import first_row_at

ATARI = "atari_gala_hts"


def _kept_run(folder: str, stops: tuple[str, ...]) -> tuple[dict, cells.Row] | None:
  """(result.json, its Row without a score) of a run kept under `folder` that stopped for
  one of `stops`: the folder (a run counts once in the provenance, whatever its cells), the
  commit of its last sitting and whether any sitting ran from a dirty tree (None: not
  recorded, as for the older sources); None for a run not kept or not done."""
  if not os.path.exists(os.path.join(cells.RESULTS, folder, "result.json")):
    return None
  result = cells.load(os.path.join(folder, "result.json"))
  if result.get("stopped") not in stops:
    return None
  has_sittings = os.path.exists(os.path.join(cells.RESULTS, folder, "sittings.json"))
  sittings = cells.load(os.path.join(folder, "sittings.json")) if has_sittings else []
  git = result.get("git") or {}
  flags = [f for f in (git.get("dirty"), *(s.get("dirty") for s in sittings)) if f is not None]
  dirty = any(flags) if flags else None
  return result, dict(run=folder, commit=git.get("commit"), dirty=dirty)


def _kept(name: str) -> str:
  """Run `name`'s kept folder (atari_prereg names it), relative to cells.RESULTS."""
  return os.path.join(ATARI, os.path.basename(kept_folder(name)))


def _acode_rows(arm: str) -> list[cells.Row]:
  """The final training return of each finished A-code seed of `arm` kept under ATARI."""
  rows = []
  for seed in range(3):
    kept = _kept_run(_kept(f"codeeps_{arm}_{seed}"), ("budget",))
    if kept:
      rows.append(dict(kept[1], score=float(kept[0]["mean_return"])))
  return rows


def _bfast_rows(arm: str) -> tuple[list[cells.Row], list[cells.Row], int]:
  """(agent steps, minutes) to a running mean of 18 of each finished B-fast seed of `arm`
  kept under ATARI, and how many are censored: counted at their last row, the 10M cap."""
  steps, minutes, censored = [], [], 0
  for seed in range(3):
    folder = _kept(f"bfast_{arm}_{seed}")
    kept = _kept_run(folder, ("budget", "target return"))
    if kept:
      with open(os.path.join(cells.RESULTS, folder, "metrics.csv")) as f:
        rows = list(csv.DictReader(f))
      row = first_row_at(rows, PONG_TARGET)
      censored += row is None
      row = rows[-1] if row is None else row
      steps.append(dict(kept[1], score=float(row["env_steps"])))
      minutes.append(dict(kept[1], score=float(row["wall_time_s"]) / 60))
  return steps, minutes, censored


def atari_cells() -> list[cells.Cell]:
  """GALA-A2C - all-reduce A2C on Breakout-v5 at 5M agent steps (PREREGISTRATION.md's A1
  "higher" and A2 "at least"), once all 3 seeds of each arm are kept; none before."""
  gala, allreduce = _acode_rows("gala"), _acode_rows("allreduce")
  if min(len(gala), len(allreduce)) < 3:
    return []
  name = "Breakout-v5 A-code 5M"
  return [
    cells.Cell("p1c", name, "higher", "diff", cells.TRAIN, ATARI, gala, allreduce, pooled=False),
    cells.Cell("p1d", name, "at least", "diff", cells.TRAIN, ATARI, gala, allreduce, pooled=False),
  ]


PONG_TARGET = 18.0  # B-fast's running mean to reach


def bfast_cells() -> list[cells.Cell]:
  """HTS-A2C / A2C on Pong-v5 at pong_fast's settings (PREREGISTRATION.md's B1f "equal" in
  agent steps to 18, B2f "lower" in minutes), once all 3 seeds of each arm are kept."""
  hts_steps, hts_minutes, hts_censored = _bfast_rows("hts")
  a2c_steps, a2c_minutes, a2c_censored = _bfast_rows("a2c")
  if min(len(hts_steps), len(a2c_steps)) < 3:
    return []
  censored = (hts_censored, a2c_censored)
  note = f" (censored at 10M: HTS-A2C {hts_censored}, A2C {a2c_censored})" if any(censored) else ""
  return [
    cells.Cell("p2c", f"Pong-v5 B-fast, agent steps to 18{note}", "equal", "ratio",
               cells.TIME, ATARI, hts_steps, a2c_steps, pooled=False, censored=censored),
    cells.Cell("p2d", f"Pong-v5 B-fast, minutes to 18, 2 cores{note}", "lower", "ratio",
               cells.TIME, ATARI, hts_minutes, a2c_minutes, pooled=False, censored=censored),
  ]  # fmt: skip
