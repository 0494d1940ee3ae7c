"""GALA best against best (issue 35, item 3): ring GALA-A2C, all-reduce A2C and A3C, each at
its own best base learning rate, from `galax.results.sweep` output.

  python -m experiments.gala_best --root=<runs root> --out=docs/results/gala_best
  python -m experiments.gala_best --root=<runs root> --best     # best rates as JSON
  python -m experiments.gala_best --runs_json=docs/results/gala_best/runs.json \
      --out=docs/results/gala_best                              # again, from the stored runs
  python -m experiments.gala_best --root=<root> --pair=ba3c_paper/adam,ba3c_paper/rmsprop \
      --labels=Adam,RMSProp --out=<dir>                         # two configs per game

`<root>` holds one folder per method and role (each a `galax.results.sweep --out`, any grid):

  ring, allreduce, a3c             the rate sweep, seeds 0-2, 4 learners x 16 envs
  <method>_ext                     the same at rates past the grid's edge (seeds 0-2)
  <method>_s34                     seeds 3 and 4 at the method's best rate
  <method>_s59                     seeds 5-9 at the method's best rate (fresh seeds)
  ring_noscale                     the ring with optimizer.lr_scaling=none (5 seeds)
  table2_<method>                  GALA Table 2's own optimisation (RMSProp eps 0.01,
                                   t_max 5, n-step returns) on the MLP

The score is each run's final training return (mean of the last 100 training episodes).
A method's best rate per game is the rate with the highest mean over seeds 0-2 (the sweep's
seeds), among all rates swept; best against best then uses every seed run at that rate
(seeds 0-4, and 5-9 where run). Differences are the difference of the means with a 95%
Welch t-interval (`paper_protocols.welch_ci`, via experiments.verdicts.welch_two_groups: the
interval of the Verdicts page, docs/results.md), labelled "different" (bold), "equivalent" or
"inconclusive" by `galax.results.verdict` (margin: 10% of the second group's mean). Each
group's own mean keeps its 95% percentile bootstrap CI (descriptive; no label reads it).

This file makes the tables, figures and pages; experiments/gala_best_runs.py reads the
runs and picks the best rates.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Sequence

import numpy as np

from experiments.gala_best_runs import (
  METHODS,
  SWEEP_SEEDS,
  Runs,
  best_rate,
  best_rates,
  dump_runs,
  games,
  rates,
  read_folder,
  read_runs,
  runs_from_json,
  values,
)
from experiments.verdicts import welch_two_groups
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule

LABELS = dict(
  ring="GALA-A2C ring",
  allreduce="all-reduce A2C",
  a3c="A3C",
  ring_noscale="ring, lr_scaling none",
  table2_ring="ring (Table 2 opt.)",
  table2_allreduce="all-reduce (Table 2 opt.)",
  table2_a3c="A3C (Table 2 opt.)",
)


def cell(x: np.ndarray) -> str:
  if not len(x):
    return "-"
  mean, lo, hi = protocols.bootstrap_ci(x)
  return f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={len(x)})"


def diff_cell(a: np.ndarray, b: np.ndarray, claim: str | None = None) -> str:
  """a - b [95% CI] and its label; with a claim about a against b, its verdict."""
  if not len(a) or not len(b):
    return "-"
  c = rule.difference(*welch_two_groups(a, b, "diff"), baseline=float(np.mean(b)))
  text = f"{c.estimate:+.2f} [{c.low:+.2f}, {c.high:+.2f}]"
  text = f"**{text}**" if rule.label(c) == "different" else text
  return f"{text} {rule.label(c)}" + (f" ({claim}: {rule.verdict(claim, c)})" if claim else "")


def sweep_table(runs: Runs) -> str:
  """Each method's rate sweep: seeds 0-2 at every rate, the best marked."""
  all_rates = sorted({lr for g, _, lr in runs if g in METHODS})
  lines = [
    "| game | method | " + " | ".join(f"{lr:g}" for lr in all_rates) + " | best |",
    "| --- | --- | " + " | ".join("---" for _ in all_rates) + " | --- |",
  ]
  for game in games(runs):
    for m in METHODS:
      best = best_rate(runs, m, game)
      cells = []
      for lr in all_rates:
        seeds = runs.get((m, game, lr), {})
        x = np.array([seeds[s] for s in SWEEP_SEEDS if s in seeds])
        text = cell(x)
        cells.append(f"**{text}**" if lr == best else text)
      tail = f" | {best:g} |" if best else " | - |"
      lines.append(f"| {game} | {LABELS[m]} | " + " | ".join(cells) + tail)
  return "\n".join(lines) + "\n"


def rate_diff_table(runs: Runs) -> str:
  """At one shared base rate (seeds 0-2): the comparison the old verdicts made, per rate."""
  lines = ["| game | base rate | ring - all-reduce | ring - A3C |", "| --- | --- | --- | --- |"]
  for game in games(runs):
    for lr in sorted({lr for g, gm, lr in runs if g in METHODS and gm == game}):
      x = {
        m: np.array(
          [runs.get((m, game, lr), {})[s] for s in SWEEP_SEEDS if s in runs.get((m, game, lr), {})]
        )
        for m in METHODS
      }
      lines.append(
        f"| {game} | {lr:g} | {diff_cell(x['ring'], x['allreduce'])} | "
        f"{diff_cell(x['ring'], x['a3c'])} |"
      )
  return "\n".join(lines) + "\n"


def best_table(runs: Runs, held_out: bool = False, prefix: str = "") -> str:
  """Best against best, every seed at each method's best rate (`held_out`: only the seeds
  after the sweep's, which played no part in picking the rate). `prefix`: the groups
  `<prefix><method>` instead, e.g. "table2_"."""
  lines = [
    "| game | GALA-A2C ring | all-reduce A2C | A3C | ring - all-reduce | ring - A3C "
    "| all-reduce - A3C |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ]
  for game in games(runs):
    best = {m: best_rate(runs, prefix + m, game) for m in METHODS}
    x = {
      m: values(runs, prefix + m, game, best[m], held_out) if best[m] else np.array([])
      for m in METHODS
    }
    cells = [f"{cell(x[m])} at {best[m]:g}" if best[m] else "-" for m in METHODS]
    cells += [
      diff_cell(x["ring"], x["allreduce"]),
      diff_cell(x["ring"], x["a3c"]),
      diff_cell(x["allreduce"], x["a3c"]),
    ]
    lines.append(f"| {game} | " + " | ".join(cells) + " |")
  return "\n".join(lines) + "\n"


def noscale_table(runs: Runs) -> str:
  """The ring at its best base rate without the sqrt(learners) rule."""
  lines = [
    "| game | base rate | ring, lr x sqrt(4) | ring, lr_scaling none | none - sqrt "
    "| all-reduce at its best | none - all-reduce |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ]
  for game in games(runs):
    best, best_ar = best_rate(runs, "ring", game), best_rate(runs, "allreduce", game)
    if best is None:
      continue
    for lr in rates(runs, "ring_noscale", game):
      sq, no = values(runs, "ring", game, lr), values(runs, "ring_noscale", game, lr)
      ar = values(runs, "allreduce", game, best_ar) if best_ar else np.array([])
      lines.append(
        f"| {game} | {lr:g} | {cell(sq)} | {cell(no)} | {diff_cell(no, sq)} | "
        f"{cell(ar)} | {diff_cell(no, ar)} |"
      )
  return "\n".join(lines) + "\n"


def table2_table(runs: Runs) -> str:
  """The three at GALA Table 2's optimisation."""
  lines = [
    "| game | rate | GALA-A2C ring | all-reduce A2C | A3C | ring - all-reduce | ring - A3C |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ]
  for game in games(runs):
    for lr in sorted({lr for g, gm, lr in runs if g.startswith("table2_") and gm == game}):
      x = {m: values(runs, f"table2_{m}", game, lr) for m in METHODS}
      lines.append(
        f"| {game} | {lr:g} | "
        + " | ".join(cell(x[m]) for m in METHODS)
        + " | "
        + diff_cell(x["ring"], x["allreduce"])
        + " | "
        + diff_cell(x["ring"], x["a3c"])
        + " |"
      )
  return "\n".join(lines) + "\n"


def pair_table(a_dir: str, b_dir: str, a_label: str, b_label: str) -> str:
  """Two configs per game and their difference (a - b), e.g. BA3C's Adam vs RMSProp."""
  a, b = read_folder(a_dir), read_folder(b_dir)
  lines = [f"| game | {a_label} | {b_label} | {a_label} - {b_label} |", "| --- | --- | --- | --- |"]
  for game in sorted(set(a) | set(b)):
    x, y = a.get(game, np.array([])), b.get(game, np.array([]))
    lines.append(f"| {game} | {cell(x)} | {cell(y)} | {diff_cell(x, y)} |")
  return "\n".join(lines) + "\n"


def pair_plot(a_dir: str, b_dir: str, a_label: str, b_label: str, path: str) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  a, b = read_folder(a_dir), read_folder(b_dir)
  names = sorted(set(a) | set(b))
  fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.5), squeeze=False)
  for ax, game in zip(axes[0], names):
    for j, (x, color) in enumerate(((a.get(game), "C0"), (b.get(game), "C3"))):
      if x is None or not len(x):
        continue
      mean, lo, hi = protocols.bootstrap_ci(x)
      ax.bar(j, mean, yerr=[[mean - lo], [hi - mean]], capsize=4, color=color)
      ax.scatter(np.full(len(x), j), x, color="k", s=10, zorder=3)
    ax.set_xticks([0, 1], [a_label, b_label])
    ax.set_ylabel("final training return (95% CI)")
    ax.set_title(game)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def fig1a_table(runs_json: str) -> str:
  """experiments/gala_sweep.py's runs.json: GALA-A2C - A2C mean final return per simulator
  count, with CIs (the success rates are in that sweep's sweep.md)."""
  from experiments import gala_sweep

  with open(runs_json) as f:
    runs = json.load(f)
  sims = sorted({int(k.split("|")[1]) for k in runs})
  table = gala_sweep.collect(runs, sims, same_rate=False)
  lines = [
    "| simulators | A2C | GALA-A2C | GALA - A2C (claim: higher) |",
    "| --- | --- | --- | --- |",
  ]
  verdicts = {}
  for n in sims:
    a = np.array(table["A2C"].get(n, []))
    g = np.array(table["GALA-A2C"].get(n, []))
    lines.append(f"| {n} | {cell(a)} | {cell(g)} | {diff_cell(g, a, 'higher')} |")
    if len(a) and len(g):
      verdicts[str(n)] = rule.verdict(
        "higher", rule.difference(*welch_two_groups(g, a, "diff"), baseline=float(np.mean(a)))
      )
  lines += ["", f"GALA-A2C above A2C, by simulators: {rule.overall(verdicts)}"]
  return "\n".join(lines) + "\n"


def plot(runs: Runs, path: str) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  names = games(runs)
  fig, grid = plt.subplots(len(names), 2, figsize=(11, 4 * len(names)), squeeze=False)
  axes = grid.reshape(-1)
  colors = dict(ring="C0", allreduce="C1", a3c="C2")
  for i, game in enumerate(names):
    ax = axes[2 * i]
    for m in METHODS:
      lrs = rates(runs, m, game)
      stats = [
        protocols.bootstrap_ci(
          np.array([runs[(m, game, lr)][s] for s in SWEEP_SEEDS if s in runs[(m, game, lr)]])
        )
        for lr in lrs
      ]
      mean = np.array([s[0] for s in stats])
      err = np.array([[s[0] - s[1] for s in stats], [s[2] - s[0] for s in stats]])
      ax.errorbar(lrs, mean, yerr=err, marker="o", capsize=3, label=LABELS[m], color=colors[m])
    ax.set_xscale("log")
    ax.set_xlabel("base learning rate (Adam, per 16-env learner)")
    ax.set_ylabel("final training return, seeds 0-2 (95% CI)")
    ax.set_title(f"{game}: rate sweep")
    ax.legend()
    ax = axes[2 * i + 1]
    for j, m in enumerate(METHODS):
      lr = best_rate(runs, m, game)
      if lr is None:
        continue
      x = values(runs, m, game, lr)
      mean, lo, hi = protocols.bootstrap_ci(x)
      ax.bar(j, mean, yerr=[[mean - lo], [hi - mean]], capsize=4, color=colors[m])
      ax.scatter(np.full(len(x), j), x, color="k", s=10, zorder=3)
      ax.text(j, 0, f"lr {lr:g}\nn={len(x)}", ha="center", va="bottom", fontsize=8, color="w")
    ax.set_xticks(range(len(METHODS)), [LABELS[m] for m in METHODS])
    ax.set_title(f"{game}: best against best")
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def page(runs: Runs) -> str:
  """gala_best.md: the rate sweep, one shared rate, best against best (all seeds and the
  held-out ones), and where they ran, the ring without lr scaling and Table 2's optimisation."""
  text = (
    "## Rate sweep (seeds 0-2; best in bold)\n\n"
    + sweep_table(runs)
    + "\n## At one shared base rate (seeds 0-2)\n\n"
    + rate_diff_table(runs)
    + "\n## Best against best (every seed at each method's best rate)\n\n"
    + best_table(runs)
    + "\n## Best against best on the held-out seeds (3 and up)\n\n"
    + best_table(runs, held_out=True)
  )
  if any(g == "ring_noscale" for g, _, _ in runs):
    text += "\n## Ring without the sqrt(learners) rule\n\n" + noscale_table(runs)
  if any(g.startswith("table2_") for g, _, _ in runs):
    text += (
      "\n## GALA Table 2's optimisation (RMSProp eps 0.01, t_max 5, n-step)\n\n"
      + table2_table(runs)
      + "\n### Each at its best of those rates (seeds 0-2)\n\n"
      + best_table(runs, prefix="table2_")
    )
  return text


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--root", default="", help="the runs root (one folder per method and role)")
  parser.add_argument(
    "--runs_json",
    default="",
    help="a runs.json this script wrote: the tables and figure from it instead of --root",
  )
  parser.add_argument("--out", default="")
  parser.add_argument("--best", action="store_true", help="print the best rates as JSON")
  parser.add_argument(
    "--pair", default="", help="A,B: two folders (under --root) compared per game instead"
  )
  parser.add_argument("--labels", default="A,B", help="the pair's labels")
  parser.add_argument(
    "--fig1a", default="", help="a gala_sweep runs.json: GALA - A2C per simulator count instead"
  )
  return parser


def _write(out: str, name: str, text: str) -> None:
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, name), "w") as f:
    f.write(text)


def _pair(args: argparse.Namespace) -> str:
  """--pair: two folders per game; with --out, pair.md, pair.png and the runs' runs.json."""
  a_dir, b_dir = (os.path.join(args.root, d) for d in args.pair.split(","))
  a_label, b_label = args.labels.split(",")
  text = pair_table(a_dir, b_dir, a_label, b_label)
  if args.out:
    _write(args.out, "pair.md", text)
    pair_plot(a_dir, b_dir, a_label, b_label, os.path.join(args.out, "pair.png"))
    dump_runs(os.path.dirname(a_dir), os.path.join(args.out, "runs.json"))
  return text


def _best_against_best(args: argparse.Namespace, runs: Runs) -> str:
  """The page (or with --best the best rates as JSON); with --out, gala_best.md, its figure
  and, from --root, runs.json."""
  if args.best:
    return json.dumps(best_rates(runs))
  text = page(runs)
  if args.out:
    _write(args.out, "gala_best.md", text)
    plot(runs, os.path.join(args.out, "gala_best.png"))
    if args.root:
      dump_runs(args.root, os.path.join(args.out, "runs.json"))
  return text


def main(argv: Sequence[str] | None = None) -> str:
  parser = _parser()
  args = parser.parse_args(argv)
  if args.fig1a:
    text = fig1a_table(args.fig1a)
    if args.out:
      _write(args.out, "returns.md", text)
  elif args.pair:
    text = _pair(args)
  else:
    if bool(args.root) == bool(args.runs_json):
      parser.error("give one of --root and --runs_json")
    runs = runs_from_json(args.runs_json) if args.runs_json else read_runs(args.root)
    text = _best_against_best(args, runs)
  print(text)
  return text


if __name__ == "__main__":
  main()
