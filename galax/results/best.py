"""Best against best: each group's best rate on the sweep's seeds, then the groups against
each other at those rates, on the seeds that did not pick them.

  python -m galax.results.best --runs=runs/ba3c_best --groups=adam,rmsprop --claim=higher
  python -m galax.results.best --runs=docs/results/ba3c_best/runs.json --groups=adam,rmsprop \\
      --label="adam=Adam(0.8, 0.75)" --label=rmsprop=RMSProp --claim=higher   # the kept runs
  python -m galax.results.best --runs=runs/gala_best --best  # each group's best rate, as JSON
  python -m galax.results.best --runs=runs/gala_best --groups=ring,a3c --out=DIR

`--runs` is a folder of `galax.results.sweep` outputs, one per group (any grid over the
learning rate, seeds as --sweep_seeds and more), or the runs.json this command writes
there with --out (every run's final return, game, rate, seed and galax commit). A folder
`<group>_ext` (more rates) or `<group>_s<digits>` (more seeds) counts as <group>.

The score is a run's final training return (the mean of its last 100 training episodes).
A group's best rate per game is the rate with the highest mean over the sweep's seeds,
among the rates where every one of them ran. Choosing on those seeds and comparing on them
biases the winner upward, so the comparison is made three times: on the seeds that chose
("chosen on"), on the other seeds run at the chosen rates ("held out", which took no part in
the choice), and on all of them. A difference of means has a 95% Welch t-interval
(`paper_protocols.welch_ci`, the Verdicts page's interval) labelled by `galax.results.verdict`
(margin: 10% of the second group's mean), and with --claim its verdict; each group's own
mean keeps a 95% percentile bootstrap CI (descriptive; no label reads it).
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import re
from typing import Iterator, Mapping, Sequence

import numpy as np

from galax.core.types import JsonDict
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule

SWEEP_SEEDS = (0, 1, 2)

# {(group, game, rate): {seed: final training return}}
Runs = dict[tuple[str, str, float], dict[int, float]]

_ROLE = re.compile(r"_(ext|s\d+)$")  # a group's extra rates or extra seeds


def group_of(folder: str) -> str:
  """'ring_ext', 'ring_s34', 'ring' -> 'ring'; 'adam_1x32_s35' -> 'adam_1x32'."""
  return _ROLE.sub("", folder)


def _galax_runs(root: str) -> Iterator[tuple[str, JsonDict]]:
  """(path under `root`, record) of each galax run's seed*.json under `root`, in path order."""
  for path in sorted(glob.glob(os.path.join(root, "**", "seed*.json"), recursive=True)):
    with open(path) as f:
      run = json.load(f)
    if run.get("kind") == "galax-run":
      yield os.path.relpath(path, root), run


def seed_records(root: str) -> Iterator[tuple[str, str, float, JsonDict]]:
  """(top folder, game, learning rate, record) of each finished run's seed*.json under
  <root>/<folder>/."""
  for rel, run in _galax_runs(root):
    if os.sep not in rel or run.get("train_mean_return") is None:
      continue
    lr = float(run["config"]["optimizer"]["learning_rate"])
    yield rel.split(os.sep)[0], run["env_id"].split("/")[-1], lr, run


def read_runs(root: str) -> Runs:
  runs: Runs = {}
  for folder, game, lr, run in seed_records(root):
    final = float(run["train_mean_return"])
    runs.setdefault((group_of(folder), game, lr), {})[int(run["seed"])] = final
  return runs


def runs_from_json(path: str) -> Runs:
  """The runs of a kept runs.json (`dump_runs`' rows), as `read_runs` reads them."""
  with open(path) as f:
    rows = json.load(f)
  runs: Runs = {}
  for row in rows:
    if row.get("train_mean_return") is None:
      continue
    key = (group_of(row["folder"].split("/")[0]), row["game"], float(row["lr"]))
    runs.setdefault(key, {})[int(row["seed"])] = float(row["train_mean_return"])
  return runs


def load_runs(path: str) -> Runs:
  """A runs folder or a kept runs.json."""
  return read_runs(path) if os.path.isdir(path) else runs_from_json(path)


def dump_runs(root: str, path: str) -> None:
  """Every run's (folder, game, rate, seed, final training return, galax commit) as JSON."""
  rows = []
  for rel, run in _galax_runs(root):
    folder = min((rel.split(f"/{key}")[0] for key in ("env.id=", "optimizer.")), key=len)
    git = run.get("git") or {}
    rows.append(
      dict(
        folder=folder,
        game=run["env_id"].split("/")[-1],
        lr=float(run["config"]["optimizer"]["learning_rate"]),
        seed=int(run["seed"]),
        train_mean_return=run.get("train_mean_return"),
        final_metric=run.get("final_metric"),
        commit=git.get("commit"),
        dirty=git.get("dirty"),
      )
    )
  with open(path, "w") as f:
    json.dump(rows, f, indent=0)


def games(runs: Runs) -> list[str]:
  return sorted({game for _, game, _ in runs})


def rates(runs: Runs, group: str, game: str) -> list[float]:
  return sorted(lr for g, gm, lr in runs if g == group and gm == game)


def values(
  runs: Runs, group: str, game: str, lr: float, seeds: Sequence[int] | None = None
) -> np.ndarray:
  """The final returns at `lr` in seed order: of `seeds` where they ran, else of every seed."""
  found = runs.get((group, game, lr), {})
  chosen = sorted(found) if seeds is None else [s for s in seeds if s in found]
  return np.array([found[s] for s in chosen])


def best_rate(
  runs: Runs, group: str, game: str, sweep_seeds: Sequence[int] = SWEEP_SEEDS
) -> float | None:
  """The rate whose mean over `sweep_seeds` is highest, among those where all of them ran."""
  scored = [
    (float(x.mean()), lr)
    for lr in rates(runs, group, game)
    if len(x := values(runs, group, game, lr, sweep_seeds)) == len(sweep_seeds)
  ]
  return max(scored)[1] if scored else None


def best_rates(
  runs: Runs, groups: Sequence[str], sweep_seeds: Sequence[int] = SWEEP_SEEDS
) -> dict[str, dict[str, float | None]]:
  return {g: {game: best_rate(runs, g, game, sweep_seeds) for game in games(runs)} for g in groups}


def cell(x: np.ndarray) -> str:
  """A group's mean [95% bootstrap CI] (n)."""
  if not len(x):
    return "-"
  mean, lo, hi = protocols.bootstrap_ci(x)
  return f"{mean:.2f} [{lo:.2f}, {hi:.2f}] (n={len(x)})"


def compare(a: np.ndarray, b: np.ndarray) -> rule.Comparison | None:
  """mean(a) - mean(b) with its Welch interval; None below 2 runs a side."""
  if len(a) < 2 or len(b) < 2:
    return None
  est, lo, hi = protocols.welch_ci(a, b, "diff")
  return rule.difference(est, lo, hi, baseline=float(np.mean(b)))


def diff_cell(a: np.ndarray, b: np.ndarray, claim: str | None = None) -> str:
  """a - b [95% CI] and its label (bold where different); with a claim, its verdict."""
  c = compare(a, b)
  if c is None:
    return "-"
  text = f"{c.estimate:+.2f} [{c.low:+.2f}, {c.high:+.2f}]"
  text = f"**{text}**" if rule.label(c) == "different" else text
  return f"{text} {rule.label(c)}" + (f" ({claim}: {rule.verdict(claim, c)})" if claim else "")


def seed_label(seeds: Sequence[int]) -> str:
  """0,1,2 -> '0-2'; 3 -> '3'; 0,2 -> '0,2'."""
  s = sorted(seeds)
  if len(s) > 1 and s == list(range(s[0], s[-1] + 1)):
    return f"{s[0]}-{s[-1]}"
  return ",".join(str(x) for x in s)


def sweep_table(
  runs: Runs,
  groups: Sequence[str],
  labels: Mapping[str, str] | None = None,
  sweep_seeds: Sequence[int] = SWEEP_SEEDS,
) -> str:
  """Per group, its rate sweep on the sweep's seeds, game by rate, the best rate in bold."""
  labels, lines = labels or {}, []
  for group in groups:
    all_rates = sorted({lr for g, _, lr in runs if g == group})
    if not all_rates:
      continue
    lines += [
      f"{labels.get(group, group)} (seeds {seed_label(sweep_seeds)}; the best rate in bold):",
      "",
      "| game | " + " | ".join(f"{lr:g}" for lr in all_rates) + " |",
      "| --- | " + " | ".join("---" for _ in all_rates) + " |",
    ]
    for game in games(runs):
      best = best_rate(runs, group, game, sweep_seeds)
      cells = [cell(values(runs, group, game, lr, sweep_seeds)) for lr in all_rates]
      cells = [f"**{c}**" if lr == best else c for lr, c in zip(all_rates, cells)]
      lines.append(f"| {game} | " + " | ".join(cells) + " |")
    lines.append("")
  return "\n".join(lines)


def _seed_sets(
  runs: Runs, chosen: Mapping[str, float], game: str, sweep_seeds: Sequence[int]
) -> list[tuple[str, tuple[int, ...]]]:
  """(row name, seeds): the sweep's, then, where any ran, the held-out ones and all."""
  held = sorted(
    {s for g, lr in chosen.items() for s in runs.get((g, game, lr), {}) if s not in sweep_seeds}
  )
  sets = [(f"{seed_label(sweep_seeds)} (chosen on)", tuple(sweep_seeds))]
  if held:
    every = tuple(sorted(set(sweep_seeds) | set(held)))
    sets += [(f"{seed_label(held)} (held out)", tuple(held)), (seed_label(every), every)]
  return sets


def best_table(
  runs: Runs,
  groups: Sequence[str],
  labels: Mapping[str, str] | None = None,
  claim: str | None = None,
  sweep_seeds: Sequence[int] = SWEEP_SEEDS,
) -> str:
  """Each group at its best rate, and every pair's difference (the first group of a pair
  against the second; `claim` about each pair), on the chosen-on, held-out and all seeds."""
  labels = labels or {}
  name = lambda g: labels.get(g, g)
  pairs = list(itertools.combinations(groups, 2))
  head = [f"{name(g)} at its best" for g in groups] + [f"{name(a)} - {name(b)}" for a, b in pairs]
  lines = [
    "| game | seeds | " + " | ".join(head) + " |",
    "| --- | --- | " + " | ".join("---" for _ in head) + " |",
  ]
  for game in games(runs):
    best = {g: best_rate(runs, g, game, sweep_seeds) for g in groups}
    if any(lr is None for lr in best.values()):
      continue
    chosen = {g: lr for g, lr in best.items() if lr is not None}
    for row, seeds in _seed_sets(runs, chosen, game, sweep_seeds):
      x = {g: values(runs, g, game, chosen[g], seeds) for g in groups}
      cells = [f"{chosen[g]:g}: {cell(x[g])}" for g in groups]
      cells += [diff_cell(x[a], x[b], claim) for a, b in pairs]
      lines.append(f"| {game} | {row} | " + " | ".join(cells) + " |")
  return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
    prog="python -m galax.results.best",
    description=__doc__,
    formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  parser.add_argument("--runs", required=True, help="a folder of sweeps, or a kept runs.json")
  parser.add_argument("--groups", default="", help="A,B,...: the groups compared (default: all)")
  parser.add_argument(
    "--label", action="append", default=[], help="GROUP=NAME: a group's name in the tables"
  )
  parser.add_argument("--claim", default="", help=f"A's claim against B: {', '.join(rule.CLAIMS)}")
  parser.add_argument("--sweep_seeds", default="0-2", help="the seeds that pick each best rate")
  parser.add_argument("--best", action="store_true", help="print the best rates as JSON")
  parser.add_argument("--out", default="", help="write best.md here (from a folder: runs.json)")
  return parser


def _seeds(text: str) -> tuple[int, ...]:
  """'0-2' -> (0, 1, 2); '0,3' -> (0, 3)."""
  out: list[int] = []
  for part in text.split(","):
    lo, _, hi = part.partition("-")
    out += range(int(lo), int(hi or lo) + 1)
  return tuple(out)


def main(argv: Sequence[str] | None = None) -> str:
  parser = _parser()
  args = parser.parse_args(argv)
  if not os.path.exists(args.runs):
    parser.error(f"{args.runs!r} does not exist.")
  try:
    sweep_seeds = _seeds(args.sweep_seeds)
  except ValueError:
    parser.error(f"--sweep_seeds={args.sweep_seeds!r}: seeds as 0-2 or 0,1,2.")
  if args.claim and args.claim not in rule.CLAIMS:
    parser.error(f"--claim={args.claim!r}: one of {', '.join(rule.CLAIMS)}.")
  runs = load_runs(args.runs)
  known = sorted({g for g, _, _ in runs})
  if not runs:
    parser.error(f"no finished galax runs in {args.runs!r}.")
  groups = args.groups.split(",") if args.groups else known
  if missing := [g for g in groups if g not in known]:
    parser.error(f"no runs of group {missing[0]!r} in {args.runs!r}; there are {', '.join(known)}.")
  labels = dict(item.partition("=")[::2] for item in args.label)
  if args.best:
    text = json.dumps(best_rates(runs, groups, sweep_seeds))
  else:
    text = (
      "## The rate sweeps\n\n"
      + sweep_table(runs, groups, labels, sweep_seeds)
      + "\n## Best against best\n\n"
      + best_table(runs, groups, labels, args.claim or None, sweep_seeds)
    )
  if args.out:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "best.json" if args.best else "best.md"), "w") as f:
      f.write(text)
    if os.path.isdir(args.runs):
      dump_runs(args.runs, os.path.join(args.out, "runs.json"))
  print(text)
  return text


if __name__ == "__main__":
  main()
