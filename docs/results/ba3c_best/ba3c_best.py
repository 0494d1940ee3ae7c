"""BA3C best against best (issue 46, item 2), from `galax.results.sweep` output
(run.sh beside this file makes it); the page pair.md and its figures.

  python docs/results/ba3c_best/ba3c_best.py --runs=runs/ba3c_best --out=docs/results/ba3c_best
  python docs/results/ba3c_best/ba3c_best.py --runs=docs/results/ba3c_best/runs.json \
      --out=docs/results/ba3c_best        # pair.md again, from the kept runs

(runs.json holds each run's final return, not its curve: from it the drop table is kept
from the pair.md it rewrites, and the figures are not redrawn.) Needs galax installed.

`<root>` holds one folder per optimizer and shape (each a `galax.results.sweep --out`):

  rmsprop, adam        the paper's shape: 4 learners x 32 envs all-reduce (batch 2048),
                       per-tensor clip at average norm 0.1; the rate sweep on seeds 0-2
  adam_1x32            Adam at one learner of 32 envs (batch 512, BA3C's single-node batch)
  <folder>_s35         seeds 3-5 (held out) at rates picked on seeds 0-2

The score is each run's final training return (mean of the last 100 training episodes).
An optimizer's best rate per game is the rate with the highest mean over seeds 0-2.
Choosing on the seeds that are then compared biases the winner's mean upward, so each
best-against-best comparison is also made on seeds 3-5 alone, which played no part in the
choice. Differences: difference of means with a 95% Welch t-interval (`paper_protocols.
welch_ci`, the interval of the Verdicts page, docs/results.md), labelled by `galax.results.
verdict` (margin 10% of B's mean). Each group's own mean keeps a 95% bootstrap CI.

The linear-scaling test (BA3C, "Increasing the learning rate", Fig. 4): with Adam, scaling
the rate linearly with the batch "did not yield any positive results ... made the training
highly unstable", and the paper kept the single-node rate. At 4x the batch (1 -> 4 learners
of 32 envs): Adam at 4 x eta (the linear rule) against Adam at eta (the paper's choice), and
against the small batch at eta at equal env steps (what the rule promises to match), with
eta the small batch's best rate and eta = 1e-3 (the paper's); 2 x eta (the sqrt rule)
beside them. The instability is also read per run as the drop from the curve's peak to its
end.
The rate sweeps and best against best are `python -m galax.results.best`'s tables; this file
adds the 4a and 4e verdict cells, the linear-scaling tables and the figures.
"""

from __future__ import annotations

import argparse
import os
from typing import Sequence

import numpy as np

from galax.results import best
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule
from galax.results.best import SWEEP_SEEDS, Runs, cell, diff_cell

HELD_OUT = (3, 4, 5)
GAMES = ("Breakout-MinAtar", "SpaceInvaders-MinAtar")
NAMES = dict(adam="Adam(0.8, 0.75)", rmsprop="RMSProp", adam_1x32="Adam, 1 x 32 envs")


def kept_drops(text: str, old_path: str) -> str:
  """`text` with the drop table of the page at `old_path` (made from the run folders'
  curves, which runs.json lacks)."""
  if not os.path.exists(old_path):
    return text
  with open(old_path) as f:
    old = f.read()
  head = "Drop from the peak"
  section = lambda t: t.split(head, 1)[1].split("\n## ", 1)[0]
  return text.replace(section(text), section(old)) if head in old else text


def _rate(keys, group: str, game: str, lr: float) -> float:
  """The stored rate that is `lr` (4 x 1e-3 and 4e-3 may differ in the last bit)."""
  near = [r for g, gm, r in keys if g == group and gm == game and np.isclose(r, lr, rtol=1e-6)]
  return near[0] if near else lr


def finals(runs: Runs, group: str, game: str, lr: float, seeds=SWEEP_SEEDS) -> np.ndarray:
  return best.values(runs, group, game, _rate(runs, group, game, lr), seeds)


# {(group, game, rate): {seed: (env steps, running-mean training return)}}
Curves = dict[tuple[str, str, float], dict[int, tuple[list[int], list[float]]]]


def read_curves(root: str) -> Curves:
  """Each run's training curve, from the run folders (runs.json keeps none)."""
  curves: Curves = {}
  for folder, game, lr, run in best.seed_records(root):
    tc = run.get("train_curve") or {}
    both = zip(tc.get("env_steps", []), tc.get("mean_return", []))
    pairs = [(s, r) for s, r in both if r is not None]
    key = (best.group_of(folder), game, lr)
    curves.setdefault(key, {})[int(run["seed"])] = ([s for s, _ in pairs], [r for _, r in pairs])
  return curves


def drop(curves: Curves, group: str, game: str, lr: float, seeds) -> str:
  """Per seed: the curve's peak running-mean return minus its final value."""
  found = curves.get((group, game, _rate(curves, group, game, lr)), {})
  drops = [max(found[s][1]) - found[s][1][-1] for s in seeds if s in found and found[s][1]]
  return ", ".join(f"{d:.1f}" for d in drops) or "-"


# Verdict cells in docs/results.md's format: (id, cell, claim, comparison)
Cell = tuple[str, str, str, rule.Comparison]


def best_against_best(runs: Runs, cells: list[Cell]) -> str:
  """galax.results.best's table of Adam against RMSProp; 4a's cells on seeds 0-5 (and 3-5
  alone) where both ran them, else on seeds 0-2."""
  for game in GAMES:
    a_lr, r_lr = best.best_rate(runs, "adam", game), best.best_rate(runs, "rmsprop", game)
    if a_lr is None or r_lr is None:
      continue
    complete = all(
      len(finals(runs, g, game, lr, HELD_OUT)) == len(HELD_OUT)
      for g, lr in (("adam", a_lr), ("rmsprop", r_lr))
    )
    judged = (
      ((SWEEP_SEEDS + HELD_OUT, ""), (HELD_OUT, " (seeds 3-5)"))
      if complete
      else ((SWEEP_SEEDS, " (seeds 0-2)"),)
    )
    for seeds, suffix in judged:
      a, r = finals(runs, "adam", game, a_lr, seeds), finals(runs, "rmsprop", game, r_lr, seeds)
      cells.append(("4a", f"{game.split('-')[0]}{suffix}", "higher", best.compare(a, r)))
  labels = dict(adam="Adam", rmsprop="RMSProp")
  return best.best_table(runs, ("adam", "rmsprop"), labels, "higher")


def _etas(best: float | None) -> list[tuple[str, float]]:
  """(kind, eta): the small batch's best rate and the paper's 1e-3, or 1e-3 alone."""
  if best is not None and best != 1e-3:
    return [("best", best), ("paper", 1e-3)]
  return [("best = paper" if best == 1e-3 else "paper", 1e-3)]


def _scaling_rows(runs: Runs, game: str, kind: str, eta: float) -> list[str]:
  """The table's rows at `eta`, on seeds 0-2, 3-5 and 0-5 (the paper's eta: seeds 0-2)."""
  lines = []
  for name, seeds in (("0-2", SWEEP_SEEDS), ("3-5", HELD_OUT), ("0-5", SWEEP_SEEDS + HELD_OUT)):
    if name != "0-2" and (
      kind == "paper" or not len(finals(runs, "adam", game, 4 * eta, HELD_OUT))
    ):
      continue  # the paper's eta: seeds 0-2 only
    small = finals(runs, "adam_1x32", game, eta, seeds)
    same = finals(runs, "adam", game, eta, seeds)
    sqrt_ = finals(runs, "adam", game, 2 * eta, seeds)
    linear = finals(runs, "adam", game, 4 * eta, seeds)
    if not len(linear) or not len(same):
      continue
    lines.append(
      f"| {game} | {eta:g} ({kind}) | {name} | {cell(small)} | {cell(same)} "
      f"| {cell(sqrt_)} | {cell(linear)} | {diff_cell(linear, same, 'lower')} "
      f"| {diff_cell(linear, small, 'lower')} |"
    )
  return lines


def _scaling_cells(runs: Runs, game: str, eta: float) -> list[Cell]:
  """4e's cells at `eta`: 4 eta against eta and against 1 x 32 at eta, on seeds 0-5 where
  every group ran them, else on seeds 0-2."""
  full = SWEEP_SEEDS + HELD_OUT
  groups = (("adam", 4 * eta), ("adam", eta), ("adam_1x32", eta))
  seeds, suffix = (
    (full, "")
    if all(len(finals(runs, g, game, lr, full)) == len(full) for g, lr in groups)
    else (SWEEP_SEEDS, " (seeds 0-2)")
  )
  linear = finals(runs, "adam", game, 4 * eta, seeds)
  cells = []
  for what, base in (
    ("4 eta - eta", finals(runs, "adam", game, eta, seeds)),
    ("4 eta - 1 x 32", finals(runs, "adam_1x32", game, eta, seeds)),
  ):
    c = best.compare(linear, base)
    if c is not None:
      cells.append(("4e", f"{game.split('-')[0]} {what}{suffix}", "lower", c))
  return cells


def scaling(runs: Runs, curves: Curves, cells: list[Cell]) -> str:
  lines = [
    "| game | eta | seeds | 1 x 32 at eta | 4 x 32 at eta | 4 x 32 at 2 eta (sqrt) "
    "| 4 x 32 at 4 eta (linear) | linear - same rate (claim: lower) "
    "| linear - small batch (claim: lower) |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ]
  drops = [
    "| game | eta | 4 x 32 at eta | 4 x 32 at 4 eta | 1 x 32 at eta |",
    "| --- | --- | --- | --- | --- |",
  ]
  for game in GAMES:
    small_best = best.best_rate(runs, "adam_1x32", game)
    for kind, eta in _etas(small_best):
      lines += _scaling_rows(runs, game, kind, eta)
      if kind != "paper" or small_best == 1e-3 or small_best is None:
        cells += _scaling_cells(runs, game, eta)
      seeds = SWEEP_SEEDS + HELD_OUT
      drops.append(
        f"| {game} | {eta:g} | {drop(curves, 'adam', game, eta, seeds)} "
        f"| {drop(curves, 'adam', game, 4 * eta, seeds)} "
        f"| {drop(curves, 'adam_1x32', game, eta, seeds)} |"
      )
  return (
    "\n".join(lines) + "\n\nDrop from the peak of the running-mean training return to "
    "its end, per seed (a collapse shows as a large drop):\n\n" + "\n".join(drops) + "\n"
  )


def cell_rows(cells: list[Cell]) -> str:
  """The rows of docs/results.md's cells table."""
  out = []
  for id_, name, claim, c in cells:
    baseline = c.margin / rule.MARGIN_FRACTION
    out.append(
      f"| {id_} | {name} | {claim} | A - B | {baseline:.2f} | {c.estimate:+.2f} "
      f"| {c.low:+.2f} | {c.high:+.2f} | {c.margin:.2f} | {rule.label(c)} "
      f"| {rule.verdict(claim, c)} |"
    )
  return "\n".join(out) + "\n"


def log_ticks(values) -> list[float]:
  """1, 2, 5 x 10^k over the values' range: one readable label each, where the swept rates
  (RMSProp's 1.98e-3 x 2^k beside Adam's 1e-3 x 2^k) would print on top of each other."""
  lo, hi = min(values), max(values)
  decades = range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
  ticks = [m * 10.0**e for e in decades for m in (1, 2, 5)]
  return [float(f"{t:.1g}") for t in ticks if lo / 1.1 <= t <= hi * 1.1]


def _save(fig, path: str) -> None:
  import matplotlib.pyplot as plt

  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def plot(runs: Runs, path: str) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, axes = plt.subplots(1, len(GAMES), figsize=(11, 4), squeeze=False)
  for ax, game in zip(axes[0], GAMES):
    for group, color in (("adam", "C0"), ("rmsprop", "C3"), ("adam_1x32", "C2")):
      xs, ms, los, his = [], [], [], []
      for lr in best.rates(runs, group, game):
        x = finals(runs, group, game, lr)
        if len(x) == len(SWEEP_SEEDS):
          m, lo, hi = protocols.bootstrap_ci(x)
          xs.append(lr), ms.append(m), los.append(m - lo), his.append(hi - m)
          ax.scatter([lr] * len(x), x, color=color, s=8, alpha=0.5)
      if xs:
        ax.errorbar(xs, ms, yerr=[los, his], color=color, marker="o", capsize=3, label=NAMES[group])
      for lr in best.rates(runs, group, game):
        held = finals(runs, group, game, lr, HELD_OUT)
        if len(held):
          ax.scatter([lr] * len(held), held, color=color, marker="x", s=25)
    ax.set_xscale("log")
    ticks = log_ticks([lr for _, gm, lr in runs if gm == game])
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("learning rate, log scale (points: the swept rates; x: held-out seeds 3-5)")
    ax.set_ylabel("final training return (mean of seeds 0-2, 95% CI)")
    ax.set_title(game)
    ax.legend(fontsize=8)
  _save(fig, path)


def plot_curves(runs: Runs, curves: Curves, path: str) -> None:
  """Training curves (running mean over seeds 0-5 run) of the compared configurations."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, axes = plt.subplots(1, len(GAMES), figsize=(12, 4.2), squeeze=False)
  for ax, game in zip(axes[0], GAMES):
    eta = best.best_rate(runs, "adam_1x32", game)
    shown = [
      ("adam", best.best_rate(runs, "adam", game), "Adam 4x32, its best", "C0", "-"),
      ("rmsprop", best.best_rate(runs, "rmsprop", game), "RMSProp 4x32, its best", "C3", "-"),
    ]
    if eta is not None:
      shown += [
        ("adam_1x32", eta, "Adam 1x32 at eta", "C2", "--"),
        ("adam", eta, "Adam 4x32 at eta", "C1", "--"),
        ("adam", 4 * eta, "Adam 4x32 at 4 eta", "C4", ":"),
      ]
    for group, lr, name, color, style in shown:
      found = curves.get((group, game, _rate(curves, group, game, lr)), {}) if lr else {}
      for i, (steps, curve) in enumerate(found.values()):
        ax.plot(
          steps,
          curve,
          color=color,
          ls=style,
          lw=1,
          alpha=0.8,
          label=f"{name} ({lr:g})" if i == 0 else None,
        )
    ax.set_xlabel("env steps")
    ax.set_ylabel("running mean training return (each seed)")
    ax.set_title(game)
    ax.legend(fontsize=7)
  _save(fig, path)


def main(argv: Sequence[str] | None = None) -> str:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--runs", default="runs/ba3c_best", help="the runs root, or its runs.json")
  parser.add_argument("--out", default="")
  args = parser.parse_args(argv)
  if not os.path.exists(args.runs):
    parser.error(f"--runs={args.runs!r} does not exist.")
  runs, folders = best.load_runs(args.runs), os.path.isdir(args.runs)
  curves = read_curves(args.runs) if folders else {}
  cells: list[Cell] = []
  text = (
    "## The rate sweeps\n\n"
    + best.sweep_table(runs, ("rmsprop", "adam", "adam_1x32"), NAMES)
    + "\n## Best against best\n\n"
    + best_against_best(runs, cells)
    + "\n## Linear lr scaling for Adam\n\n"
    + scaling(runs, curves, cells)
    + "\n## Verdict cells (docs/results.md's format)\n\n"
    + cell_rows(cells)
  )
  if not folders and args.out:
    text = kept_drops(text, os.path.join(args.out, "pair.md"))
  print(text)
  if args.out:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "pair.md"), "w") as f:
      f.write(text)
    if folders:
      plot(runs, os.path.join(args.out, "pair.png"))
      plot_curves(runs, curves, os.path.join(args.out, "curves.png"))
      best.dump_runs(args.runs, os.path.join(args.out, "runs.json"))
  return text


if __name__ == "__main__":
  main()
