"""GALA best against best (issue 35, item 3): ring GALA-A2C, all-reduce A2C and A3C, each at
its own best base learning rate; the page gala_best.md and its figure.

  python docs/results/gala_best/scripts/gala_best.py --runs=docs/results/gala_best/runs.json \
      --out=docs/results/gala_best                  # the page again, from the kept runs
  python docs/results/gala_best/scripts/gala_best.py --runs=<runs root> --out=<dir>
  python docs/results/gala_best/scripts/gala_best.py --runs=<root> \
      --pair=ba3c_paper/adam,ba3c_paper/rmsprop --labels=Adam,RMSProp --out=<dir>
  python docs/results/gala_best/scripts/gala_best.py \
      --fig1a=docs/results/gala_sweep_spaceinvaders_best/runs.json   # returns.md

`<root>` holds one folder per method and role (each a `galax.results.sweep --out`; the
scripts beside this one made them):

  ring, allreduce, a3c             the rate sweep, seeds 0-2, 4 learners x 16 envs
  <method>_ext                     the same at rates past the grid's edge (seeds 0-2)
  <method>_s34, <method>_s59       seeds 3-4 and 5-9 at the method's best rate
  ring_noscale                     the ring with optimizer.lr_scaling=none (5 seeds)
  table2_<method>                  GALA Table 2's own optimisation (RMSProp eps 0.01,
                                   t_max 5, n-step returns) on the MLP

The rate sweeps and best against best are `python -m galax.results.best`'s tables
(galax/results/best.py says how a best rate is picked and compared); this script adds the
comparison at one shared rate, the ring without lr scaling and Table 2's optimisation.
It needs galax installed (pip install -e .).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Sequence

import numpy as np

from galax.results import best
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule
from galax.results.best import Runs, cell, diff_cell, games, values

METHODS = ("ring", "allreduce", "a3c")
LABELS = dict(
  ring="GALA-A2C ring",
  allreduce="all-reduce A2C",
  a3c="A3C",
)
SWEEP = best.SWEEP_SEEDS


def _head(*columns: str) -> list[str]:
  """A markdown table's header and rule."""
  return ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]


def rate_diff_table(runs: Runs) -> str:
  """At one shared base rate (seeds 0-2): the comparison the old verdicts made, per rate."""
  lines = _head("game", "base rate", "ring - all-reduce", "ring - A3C")
  for game in games(runs):
    for lr in sorted({lr for g, gm, lr in runs if g in METHODS and gm == game}):
      x = {m: values(runs, m, game, lr, SWEEP) for m in METHODS}
      lines.append(
        f"| {game} | {lr:g} | {diff_cell(x['ring'], x['allreduce'])} | "
        f"{diff_cell(x['ring'], x['a3c'])} |"
      )
  return "\n".join(lines) + "\n"


def noscale_table(runs: Runs) -> str:
  """The ring at its best base rate without the sqrt(learners) rule."""
  lines = _head(
    "game", "base rate", "ring, lr x sqrt(4)", "ring, lr_scaling none", "none - sqrt",
    "all-reduce at its best", "none - all-reduce",
  )  # fmt: skip
  for game in games(runs):
    if best.best_rate(runs, "ring", game) is None:
      continue
    best_ar = best.best_rate(runs, "allreduce", game)
    for lr in best.rates(runs, "ring_noscale", game):
      sq, no = values(runs, "ring", game, lr), values(runs, "ring_noscale", game, lr)
      ar = values(runs, "allreduce", game, best_ar) if best_ar else np.array([])
      lines.append(
        f"| {game} | {lr:g} | {cell(sq)} | {cell(no)} | {diff_cell(no, sq)} | "
        f"{cell(ar)} | {diff_cell(no, ar)} |"
      )
  return "\n".join(lines) + "\n"


def table2_table(runs: Runs) -> str:
  """The three at GALA Table 2's optimisation."""
  lines = _head("game", "rate", *(LABELS[m] for m in METHODS), "ring - all-reduce", "ring - A3C")
  for game in games(runs):
    for lr in sorted({lr for g, gm, lr in runs if g.startswith("table2_") and gm == game}):
      x = {m: values(runs, f"table2_{m}", game, lr) for m in METHODS}
      cells = [cell(x[m]) for m in METHODS]
      cells += [diff_cell(x["ring"], x["allreduce"]), diff_cell(x["ring"], x["a3c"])]
      lines.append(f"| {game} | {lr:g} | " + " | ".join(cells) + " |")
  return "\n".join(lines) + "\n"


def page(runs: Runs) -> str:
  """gala_best.md: galax.results.best's sweeps and best against best, one shared rate, and
  where they ran, the ring without lr scaling and Table 2's optimisation."""
  text = "## The rate sweeps\n\n" + best.sweep_table(runs, METHODS, LABELS)
  text += "\n## Best against best\n\n" + best.best_table(runs, METHODS, LABELS)
  text += "\n## At one shared base rate (seeds 0-2)\n\n" + rate_diff_table(runs)
  if any(g == "ring_noscale" for g, _, _ in runs):
    text += "\n## Ring without the sqrt(learners) rule\n\n" + noscale_table(runs)
  if any(g.startswith("table2_") for g, _, _ in runs):
    table2 = [f"table2_{m}" for m in METHODS]
    text += (
      "\n## GALA Table 2's optimisation (RMSProp eps 0.01, t_max 5, n-step)\n\n"
      + table2_table(runs)
      + "\n### Each at its best of those rates\n\n"
      + best.best_table(runs, table2, {f"table2_{m}": LABELS[m] for m in METHODS})
    )
  return text


def _bars(ax, groups: Sequence[tuple[np.ndarray | None, str]]) -> None:
  """One bar per group: its mean and 95% bootstrap CI, each seed a dot."""
  for j, (x, color) in enumerate(groups):
    if x is None or not len(x):
      continue
    mean, lo, hi = protocols.bootstrap_ci(x)
    ax.bar(j, mean, yerr=[[mean - lo], [hi - mean]], capsize=4, color=color)
    ax.scatter(np.full(len(x), j), x, color="k", s=10, zorder=3)


def plot(runs: Runs, path: str) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  names = games(runs)
  fig, grid = plt.subplots(len(names), 2, figsize=(11, 4 * len(names)), squeeze=False)
  colors = dict(ring="C0", allreduce="C1", a3c="C2")
  for (ax, bars), game in zip(grid, names):
    for m in METHODS:
      lrs = best.rates(runs, m, game)
      stats = np.array([protocols.bootstrap_ci(values(runs, m, game, lr, SWEEP)) for lr in lrs])
      err = [stats[:, 0] - stats[:, 1], stats[:, 2] - stats[:, 0]]
      ax.errorbar(lrs, stats[:, 0], yerr=err, marker="o", capsize=3, label=LABELS[m], c=colors[m])
    ax.set_xscale("log")
    ax.set_xlabel("base learning rate (Adam, per 16-env learner)")
    ax.set_ylabel("final training return, seeds 0-2 (95% CI)")
    ax.set_title(f"{game}: rate sweep")
    ax.legend()
    chosen = {m: best.best_rate(runs, m, game) for m in METHODS}
    at_best = {m: values(runs, m, game, lr) if lr else None for m, lr in chosen.items()}
    _bars(bars, [(at_best[m], colors[m]) for m in METHODS])
    bars.set_xticks(range(len(METHODS)), [LABELS[m] for m in METHODS])
    bars.set_title(f"{game}: best against best")
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def read_folder(folder: str) -> dict[str, np.ndarray]:
  """{game: final training returns per seed} of every run under `folder`."""
  found: dict[str, dict[int, float]] = {}
  root, name = os.path.split(folder.rstrip("/"))
  for top, game, _, run in best.seed_records(root):
    if top == name:
      found.setdefault(game, {})[int(run["seed"])] = float(run["train_mean_return"])
  return {g: np.array([v[s] for s in sorted(v)]) for g, v in found.items()}


def pair_table(a: dict[str, np.ndarray], b: dict[str, np.ndarray], labels: Sequence[str]) -> str:
  """Two configs per game (`read_folder`'s) and their difference, e.g. BA3C's Adam vs RMSProp."""
  a_label, b_label = labels
  lines = [f"| game | {a_label} | {b_label} | {a_label} - {b_label} |", "| --- | --- | --- | --- |"]
  for game in sorted(set(a) | set(b)):
    x, y = a.get(game, np.array([])), b.get(game, np.array([]))
    lines.append(f"| {game} | {cell(x)} | {cell(y)} | {diff_cell(x, y)} |")
  return "\n".join(lines) + "\n"


def pair_plot(a: dict[str, np.ndarray], b: dict[str, np.ndarray], labels, path: str) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  names = sorted(set(a) | set(b))
  fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.5), squeeze=False)
  for ax, game in zip(axes[0], names):
    _bars(ax, [(a.get(game), "C0"), (b.get(game), "C3")])
    ax.set_xticks([0, 1], list(labels))
    ax.set_ylabel("final training return (95% CI)")
    ax.set_title(game)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def fig1a_table(runs_json: str) -> str:
  """experiments/gala_sweep.py's runs.json: GALA-A2C - A2C mean final return per simulator
  count, with CIs (the success rates are in that sweep's sweep.md)."""
  from galax.experiments import gala_sweep

  with open(runs_json) as f:
    runs = json.load(f)
  sims = sorted({int(k.split("|")[1]) for k in runs})
  table = gala_sweep.collect(runs, sims, same_rate=False)
  lines = ["| simulators | A2C | GALA-A2C | GALA - A2C (claim: higher) |", "| --- " * 4 + "|"]
  verdicts = {}
  for n in sims:
    a, g = np.array(table["A2C"].get(n, [])), np.array(table["GALA-A2C"].get(n, []))
    lines.append(f"| {n} | {cell(a)} | {cell(g)} | {diff_cell(g, a, 'higher')} |")
    if (c := best.compare(g, a)) is not None:
      verdicts[str(n)] = rule.verdict("higher", c)
  lines += ["", f"GALA-A2C above A2C, by simulators: {rule.overall(verdicts)}"]
  return "\n".join(lines) + "\n"


def _write(out: str, name: str, text: str) -> None:
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, name), "w") as f:
    f.write(text)


def main(argv: Sequence[str] | None = None) -> str:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--runs", default="", help="the runs root, or a runs.json kept from it")
  parser.add_argument("--out", default="")
  parser.add_argument("--pair", default="", help="A,B: two folders under --runs, per game")
  parser.add_argument("--labels", default="A,B", help="the pair's labels")
  parser.add_argument("--fig1a", default="", help="a gala_sweep runs.json: GALA - A2C, by sims")
  args = parser.parse_args(argv)
  if args.out:
    os.makedirs(args.out, exist_ok=True)
  if args.fig1a:
    text, name = fig1a_table(args.fig1a), "returns.md"
  elif not os.path.exists(args.runs):
    parser.error(f"--runs={args.runs!r} does not exist.")
  elif args.pair:
    dirs = [os.path.join(args.runs, d) for d in args.pair.split(",")]
    a, b = (read_folder(d) for d in dirs)
    text, name = pair_table(a, b, args.labels.split(",")), "pair.md"
    if args.out:
      pair_plot(a, b, args.labels.split(","), os.path.join(args.out, "pair.png"))
      best.dump_runs(os.path.dirname(dirs[0]), os.path.join(args.out, "runs.json"))
  else:
    runs = best.load_runs(args.runs)
    text, name = page(runs), "gala_best.md"
    if args.out:
      plot(runs, os.path.join(args.out, "gala_best.png"))
    if args.out and os.path.isdir(args.runs):
      best.dump_runs(args.runs, os.path.join(args.out, "runs.json"))
  if args.out:
    _write(args.out, name, text)
  print(text)
  return text


if __name__ == "__main__":
  main()
