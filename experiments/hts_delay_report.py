"""Experiment D's table and picture, by the rule registered before its first run
(PREREGISTRATION.md, "D: why the one-step delay fails").

  python -m experiments.hts_delay_report      # writes docs/results/hts_delay_stability/table.md

A cell (variant, rate) learns when the mean of its 3 seeds' final returns is at least
LEARNS x the best A2C cell's; a variant's largest stable rate is the largest rate whose
cell learns. The reading compares Eq. 6's and theta_k's largest stable rates with A2C's.
"""

from __future__ import annotations

import os
from typing import Mapping, Sequence

import numpy as np

from . import hts_delay_stability as study

Cells = Mapping[tuple[str, float], dict]


def largest_stable(cells: Cells, variant: str, rates: Sequence[float], bar: float) -> float | None:
  learned = [r for r in rates if (variant, r) in cells and cells[variant, r]["mean"] >= bar]
  return max(learned) if learned else None


def reading(stable: Mapping[str, float | None]) -> str:
  """The registered one-sentence reading from the three largest stable rates."""
  a2c, stale, current = stable["a2c"], stable["hts_stale"], stable["hts_current"]
  if a2c is None:
    return "No A2C cell learns, so no rate is stable for the baseline and nothing is read."
  below = lambda rate: rate is None or rate < a2c  # noqa: E731
  if below(current):
    return (
      "theta_k's largest stable rate lies below A2C's as well: the lag in the data (one"
      " update off-policy), not only the gradient's delay, lowers the stable rate."
    )
  if below(stale):
    return (
      "Eq. 6's largest stable rate lies below A2C's while theta_k's equals it: the"
      " gradient's one-step delay is the cause, as delayed-gradient stability predicts."
    )
  return (
    "Eq. 6's largest stable rate equals A2C's: the delay costs no stable rate at this"
    " grid's resolution (a factor 2) on MinAtar, and B-fast's floor is not explained here."
  )


def _format(rate: float | None) -> str:
  return "none" if rate is None else f"{rate:.3g}"


def table(cells: Cells, rates: Sequence[float]) -> list[str]:
  a2c_means = [cells["a2c", r]["mean"] for r in rates if ("a2c", r) in cells]
  best = max(a2c_means) if a2c_means else float("nan")
  bar = study.LEARNS * best
  head = "| variant | " + " | ".join(f"lr {r:.3g}" for r in rates) + " | largest stable |"
  lines = [
    "Final training return at 1M agent steps (mean of 3 seeds [min, max]; * the cell"
    f" learns: >= {study.LEARNS} x the best A2C cell's {best:.2f} = {bar:.2f}), then the"
    " median gradient norm past 500k (mean of the seeds' medians):",
    "",
    head,
    "|" + " --- |" * (len(rates) + 2),
  ]
  stable = {v: largest_stable(cells, v, rates, bar) for v in study.VARIANTS}
  for variant, label in study.LABELS.items():
    row = []
    for rate in rates:
      cell = cells.get((variant, rate))
      if cell is None:
        row.append("-")
        continue
      mark = "*" if cell["mean"] >= bar else ""
      low, high = min(cell["finals"]), max(cell["finals"])
      grad = float(np.mean(cell["grads"]))
      row.append(f"{cell['mean']:.2f}{mark} [{low:.2f}, {high:.2f}]; g {grad:.3f}")
    lines.append(f"| {label} | " + " | ".join(row) + f" | {_format(stable[variant])} |")
  complete = all((v, r) in cells for v in study.VARIANTS for r in rates)
  largest = ", ".join(f"{study.LABELS[v]} {_format(stable[v])}" for v in study.VARIANTS)
  lines += [
    "",
    f"Largest stable rates: {largest}.",
    "",
    f"**Reading.** {reading(stable)}" if complete else "**Reading:** not yet (cells missing).",
  ]
  return lines


def picture(cells: Cells, rates: Sequence[float], path: str) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, (ret, grad) = plt.subplots(1, 2, figsize=(10, 4))
  for variant, label in study.LABELS.items():
    have = [r for r in rates if (variant, r) in cells]
    if not have:
      continue
    finals = np.array([cells[variant, r]["finals"] for r in have])
    grads = np.array([cells[variant, r]["grads"] for r in have])
    for axis, values in ((ret, finals), (grad, grads)):
      (line,) = axis.plot(have, values.mean(1), marker="o", label=label)
      axis.fill_between(have, values.min(1), values.max(1), alpha=0.2, color=line.get_color())
  for axis, name in (
    (ret, "final training return at 1M"),
    (grad, "median gradient norm past 500k"),
  ):
    axis.set_xscale("log")
    axis.set_xlabel("learning rate (RMSProp)")
    axis.set_ylabel(name)
  grad.set_yscale("log")
  ret.legend(fontsize=8)
  fig.suptitle("Breakout-MinAtar, B-fast's A2C settings: mean of 3 seeds, band = seeds' range")
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def write(cells: Cells, rates: Sequence[float]) -> None:
  os.makedirs(study.KEPT, exist_ok=True)
  lines = [
    "# Experiment D: the largest stable rate of A2C and HTS-A2C (issue 75)",
    "",
    'Registered in docs/results/atari_gala_hts/PREREGISTRATION.md ("D: why the one-step'
    ' delay fails") before the first run; written by `python -m'
    " experiments.hts_delay_report` from the runs' kept files.",
    "",
    *table(cells, rates),
    "",
    "![return and gradient norm against the rate](stability.png)",
  ]
  with open(os.path.join(study.KEPT, "table.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  picture(cells, rates, os.path.join(study.KEPT, "stability.png"))
  print("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> None:
  import argparse

  argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args(argv)
  rates = study.grid()
  write(study.table_cells(rates), rates)


if __name__ == "__main__":
  main()
