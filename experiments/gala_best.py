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
"""

from __future__ import annotations

import argparse
import glob
import json
import os
from typing import Sequence

import numpy as np

from experiments.verdicts import welch_two_groups
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule

METHODS = ("ring", "allreduce", "a3c")
LABELS = dict(
  ring="GALA-A2C ring",
  allreduce="all-reduce A2C",
  a3c="A3C",
  ring_noscale="ring, lr_scaling none",
  table2_ring="ring (Table 2 opt.)",
  table2_allreduce="all-reduce (Table 2 opt.)",
  table2_a3c="A3C (Table 2 opt.)",
)
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


def read_runs(root: str) -> Runs:
  runs: Runs = {}
  for path in glob.glob(os.path.join(root, "*", "**", "seed*.json"), recursive=True):
    folder = os.path.relpath(path, root).split(os.sep)[0]
    with open(path) as f:
      run = json.load(f)
    if run.get("kind") != "galax-run" or run.get("train_mean_return") is None:
      continue
    game = run["env_id"].split("/")[-1]
    lr = float(run["config"]["optimizer"]["learning_rate"])
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


def main(argv: Sequence[str] | None = None) -> str:
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
  args = parser.parse_args(argv)
  if args.fig1a:
    text = fig1a_table(args.fig1a)
    if args.out:
      os.makedirs(args.out, exist_ok=True)
      with open(os.path.join(args.out, "returns.md"), "w") as f:
        f.write(text)
    print(text)
    return text
  if args.pair:
    a_dir, b_dir = (os.path.join(args.root, d) for d in args.pair.split(","))
    a_label, b_label = args.labels.split(",")
    text = pair_table(a_dir, b_dir, a_label, b_label)
    if args.out:
      os.makedirs(args.out, exist_ok=True)
      with open(os.path.join(args.out, "pair.md"), "w") as f:
        f.write(text)
      pair_plot(a_dir, b_dir, a_label, b_label, os.path.join(args.out, "pair.png"))
      dump_runs(os.path.dirname(a_dir), os.path.join(args.out, "runs.json"))
    print(text)
    return text
  if bool(args.root) == bool(args.runs_json):
    parser.error("give one of --root and --runs_json")
  runs = runs_from_json(args.runs_json) if args.runs_json else read_runs(args.root)
  if args.best:
    text = json.dumps(best_rates(runs))
    print(text)
    return text
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
  if args.out:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gala_best.md"), "w") as f:
      f.write(text)
    plot(runs, os.path.join(args.out, "gala_best.png"))
    if args.root:
      dump_runs(args.root, os.path.join(args.out, "runs.json"))
  print(text)
  return text


if __name__ == "__main__":
  main()
