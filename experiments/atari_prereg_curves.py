"""Issue 56's curves: each registered arm's running mean against agent steps and minutes.

  python -m experiments.atari_prereg_curves            # writes docs/results/atari_gala_hts/*.png

One picture per experiment (A-code on Breakout-v5: GALA-A2C, all-reduce A2C, the nominal
16-env A2C; B and B-fast on Pong-v5: HTS-A2C, A2C), two panels: against agent steps, and against
minutes of training (`train_time_s`: evaluations excluded, sittings added up; the runs
shared the 2 cores with other work, so minutes compare loosely). Each arm: its seeds' mean,
with a 95% t-interval band over seeds where it has MIN_SEEDS_FOR_CI runs (the registration's
statistic), and each seed as a thin line. The mean is of the finished runs only (a run
still under way would hold its last value past its end); a run under way is dashed.
"""

from __future__ import annotations

import argparse
import os
from typing import Sequence

import numpy as np
from scipy import stats

from galax.results.paper_protocols import MIN_SEEDS_FOR_CI, align_curves

from . import atari_prereg as prereg
from .atari_prereg_report import metrics_rows

EXPERIMENTS = {
  "breakout_acode": (
    "A-code, Breakout-v5 (RMSProp eps 1e-5, 4 learners x 16 envs)",
    {
      "GALA-A2C": [f"codeeps_gala_{s}" for s in range(3)],
      "all-reduce A2C": [f"codeeps_allreduce_{s}" for s in range(3)],
      "A2C, 1 x 16 envs": ["codeeps_a2c16_0"],
    },
  ),
  "pong_hts": (
    "B, Pong-v5 (hts_a2c_atari's settings)",
    {"HTS-A2C": [f"hts_{s}" for s in range(3)], "A2C": [f"a2c_{s}" for s in range(3)]},
  ),
  "pong_hts_fast": (
    "B-fast, Pong-v5 (pong_fast's settings, archnips)",
    {
      "HTS-A2C": [f"bfast_hts_{s}" for s in range(3)],
      "A2C": [f"bfast_a2c_{s}" for s in range(3)],
    },
  ),
}
AXES = (("env_steps", "agent steps (millions)", 1e6), ("train_time_s", "minutes of training", 60))


def arm_curves(names: Sequence[str], x_key: str) -> list[tuple[np.ndarray, np.ndarray, bool]]:
  """(x, running mean, finished) of each run of an arm that has metrics rows."""
  curves = []
  for name in names:
    rows = [r for r in metrics_rows(name) if r["mean_return"]]
    if rows:
      x = np.array([float(r[x_key]) for r in rows])
      y = np.array([float(r["mean_return"]) for r in rows])
      curves.append((x, y, prereg.status(name).startswith("finished")))
  return curves


def t_band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Mean over runs [runs, points] and its 95% t-interval."""
  n = values.shape[0]
  mean = values.mean(axis=0)
  half = stats.t.ppf(0.975, n - 1) * values.std(axis=0, ddof=1) / np.sqrt(n)
  return mean, mean - half, mean + half


def plot_experiment(title: str, arms: dict[str, list[str]], path: str) -> bool:
  """Writes the two-panel picture; False (nothing written) where no arm has a run yet."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  if not any(arm_curves(names, "env_steps") for names in arms.values()):
    return False
  fig, panels = plt.subplots(1, 2, figsize=(11, 3.8), dpi=100)
  for ax, (x_key, x_label, scale) in zip(panels, AXES):
    for arm, names in arms.items():
      curves = arm_curves(names, x_key)
      done = [c for c in curves if c[2]]
      if not curves:
        continue
      label = f"{arm} ({len(done)} finished, {len(curves) - len(done)} under way)"
      if done:
        grid, values = align_curves([c[0] for c in done], [c[1] for c in done])
        (line,) = ax.plot(grid / scale, values.mean(axis=0), label=label)
        if len(done) >= MIN_SEEDS_FOR_CI:
          _, low, high = t_band(values)
          ax.fill_between(grid / scale, low, high, color=line.get_color(), alpha=0.2, lw=0)
      else:
        (line,) = ax.plot([], [], label=label)
      for x, y, finished in curves:
        style = "-" if finished else "--"
        ax.plot(x / scale, y, style, color=line.get_color(), lw=0.6, alpha=0.5)
    ax.set_xlabel(x_label)
    ax.set_ylabel("running mean of 100 games (raw)")
    ax.grid(alpha=0.3)
  panels[0].legend(fontsize=8)
  fig.suptitle(f"{title}: seeds' mean (95% t band at >= {MIN_SEEDS_FOR_CI} seeds)", fontsize=10)
  fig.tight_layout()
  fig.savefig(path)
  plt.close(fig)
  return True


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--out", default=prereg.KEPT)
  args = parser.parse_args(argv)
  os.makedirs(args.out, exist_ok=True)
  for file, (title, arms) in EXPERIMENTS.items():
    path = os.path.join(args.out, f"{file}.png")
    print(f"wrote {path}" if plot_experiment(title, arms, path) else f"{file}: no runs yet")


if __name__ == "__main__":
  main()
