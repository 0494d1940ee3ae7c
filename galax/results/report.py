"""Results -> the papers' tables (markdown) and plots (PNG).

  python -m galax.results.report results --out docs/results
  python -m galax.results.report results --out report --time_limit 3600 --targets 10,18

Reads every run record and experiment summary under the results directory (written by
`galax.results.experiment`) and writes `<out>/report.md` with

  runs             per experiment: method, env, simulators, seeds, env steps, steps/s
  final metric     mean over the last 10 policies x 10 episodes, mean +- s.e. over seeds
                   and a 95% Student t-interval from 3 seeds up (HTS-RL's evaluation
                   protocol; `paper_protocols.t_interval`, its coverage tested)
  final time       the final metric at a training-time limit (HTS-RL Table 1); default
                   limit per env: when the fastest experiment of that env finished
  required time    minutes until the running 100-episode mean reaches each target (HTS-RL
                   Table 2); '-' where a run never did; default targets per env: 40% and
                   80% of the best final metric of that env (the report says which)
  best policy      GALA Table 1: the best final policy over seeds, fresh episodes,
                   mean +- s.e.
  success rate     GALA Fig. 1a: fraction of seeds whose final metric beats `fraction` x
                   the reference score, per method and number of simulators
  across games     with 2+ games: IQM of the normalised final metrics with a stratified
                   bootstrap CI, and `performance_profile.png` (galax/results/aggregate.py)

and the plots `<env>_steps.png` / `<env>_time.png` (mean return over seeds against env
steps / training wall time, with 95% t-interval bands from 3 seeds up and none below;
evaluation returns where runs have evaluations, else the training running mean) and
`<env>_success.png`.

The tables are galax/results/tables.py's; the section across games galax/results/aggregate.py's.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Sequence

import numpy as np

from galax.core.types import JsonDict
from galax.results import aggregate as report_aggregate
from galax.results import paper_protocols as protocols
from galax.results import tables
from galax.results.experiment import load_results
from galax.results.seed_runs import RunRecord
from galax.results.tables import Groups, Sweep


def _slug(text: str) -> str:
  return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def curves(runs: Sequence[RunRecord], x_key: str) -> tuple[list[np.ndarray], list[np.ndarray], str]:
  """Per run (x, mean return) curves: evaluations if all runs have them, else training."""
  if all(r.get("evaluations") for r in runs):
    xs = [np.array([e[x_key] for e in r["evaluations"]], float) for r in runs]
    ys = [np.array([np.mean(e["returns"]) for e in r["evaluations"]], float) for r in runs]
    return xs, ys, "evaluation return"
  xs = [np.array(r["train_curve"][x_key], float) for r in runs]
  ys = [np.array(r["train_curve"]["mean_return"], float) for r in runs]
  return xs, ys, "training return (last 100 episodes)"


def build_report(
  runs: Sequence[RunRecord],
  summaries: Sequence[JsonDict],
  out_dir: str,
  time_limit: float | None = None,
  targets: Sequence[float] | None = None,
  success_fraction: float = 0.5,
  references: dict[str, float] | None = None,
  resamples: int = 10_000,
  plots: bool = True,
  randoms: dict[str, float] | None = None,
) -> str:
  """Writes report.md (and PNGs) to `out_dir`; returns the markdown. `references` and
  `randoms`: per env, the success reference and the across-games normalisation's high,
  and that normalisation's low."""
  os.makedirs(out_dir, exist_ok=True)
  groups = tables.group_experiments(runs)
  lines = ["# Results", ""]
  if not groups:
    lines.append("No run records found.")
    return _write_markdown(out_dir, lines)
  by_env: dict[str, list[str]] = {}
  for name, group in groups.items():
    by_env.setdefault(group[0]["env_id"], []).append(name)
  lines += tables.runs_table(groups) + tables.energy_table(groups)
  # The evaluation-based tables need every seed of an experiment evaluated.
  evaluated = {n: g for n, g in groups.items() if all(r.get("evaluations") for r in g)}
  if evaluated:
    # The time tables leave out envs without an evaluated experiment.
    per_env = {env: [n for n in names if n in evaluated] for env, names in by_env.items()}
    evaluated_by_env = {env: names for env, names in per_env.items() if names}
    lines += tables.final_metric_table(evaluated)
    lines += tables.final_time_table(evaluated, evaluated_by_env, time_limit)
    lines += tables.required_time_table(evaluated, evaluated_by_env, targets)
  lines += tables.best_policy_table(summaries, groups)
  sweep = tables.success_sweep(evaluated, success_fraction, references or {})
  lines += tables.success_rate_tables(sweep, success_fraction)
  games = report_aggregate.game_scores(evaluated, references or {}, randoms or {})
  lines += report_aggregate.section(games, resamples)
  if plots:
    figures = plot_all(groups, by_env, sweep, out_dir)
    figures += report_aggregate.plot_profile(games, out_dir, resamples)
    if figures:
      lines += ["", "## Plots", ""] + [f"![{f}]({f})" for f in figures]
  return _write_markdown(out_dir, lines)


def _write_markdown(out_dir: str, lines: list[str]) -> str:
  text = "\n".join(lines) + "\n"
  with open(os.path.join(out_dir, "report.md"), "w") as f:
    f.write(text)
  return text


def plot_all(groups: Groups, by_env: dict[str, list[str]], sweep: Sweep, out_dir: str) -> list[str]:
  files = []
  for env, names in by_env.items():
    for x_key, x_label, suffix, scale in (
      ("env_steps", "env steps", "steps", 1.0),
      ("train_time_s", "training time (min)", "time", 60.0),
    ):
      fig, ax = report_aggregate.new_plot(figsize=(5.5, 3.6))
      y_label, banded = _plot_curves(ax, groups, names, x_key, scale)
      ax.set_xlabel(x_label)
      ax.set_ylabel(y_label)
      least = protocols.MIN_SEEDS_FOR_CI
      title = f"{env}: mean over seeds" + (
        f", 95% t-interval band ({least}+ seeds)"
        if banded
        else f"; {tables.NO_INTERVAL.format(least=least)}"
      )
      files.append(
        report_aggregate.save_plot(fig, ax, title, out_dir, f"{_slug(env)}_{suffix}.png")
      )
  for env, (reference, table) in sweep.items():
    fig, ax = report_aggregate.new_plot(figsize=(4.5, 3.2))
    for method, rows in table.items():
      sims = sorted(rows)
      ax.plot(sims, [rows[s][0] * 100 for s in sims], marker="o", label=method)
    ax.set_xscale("log", base=2)
    ticks = sorted({s for rows in table.values() for s in rows})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set_xlabel("simulators")
    ax.set_ylabel("successful runs (%)")
    ax.set_ylim(-5, 105)
    files.append(
      report_aggregate.save_plot(
        fig,
        ax,
        f"{env}: success rate (reference {reference:.1f})",
        out_dir,
        f"{_slug(env)}_success.png",
      )
    )
  return files


def _plot_curves(ax, groups: Groups, names: Sequence[str], x_key: str, scale: float):
  """Each experiment's mean curve, with its t-interval band from MIN_SEEDS_FOR_CI seeds up
  (fewer: none, and its label says so). Returns (the y label, whether any band was drawn)."""
  y_label, banded = "return", False
  least = protocols.MIN_SEEDS_FOR_CI
  for name in names:
    xs, ys, y_label = curves(groups[name], x_key)
    if not all(len(x) for x in xs):
      continue
    grid, values = protocols.align_curves(xs, ys)
    mean, lo, hi = protocols.t_interval(values)
    few = len(ys) < least
    label = f"{name} (n={len(ys)}{', ' + tables.NO_INTERVAL.format(least=least) if few else ''})"
    (line,) = ax.plot(grid / scale, mean, label=label, marker=".")
    if not few:
      ax.fill_between(grid / scale, lo, hi, color=line.get_color(), alpha=0.25, lw=0)
      banded = True
  return y_label, banded


def _floats(text: str | None) -> list[float] | None:
  return [float(x) for x in text.split(",") if x.strip()] if text else None


def main(argv: Sequence[str] | None = None) -> str:
  parser = argparse.ArgumentParser(
    prog="python -m galax.results.report",
    description=__doc__,
    formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  parser.add_argument("results", help="results directory (or one results JSON file)")
  parser.add_argument("--out", default="report", help="output directory")
  parser.add_argument(
    "--time_limit",
    type=float,
    default=None,
    help="final time metric limit in seconds (default: per env)",
  )
  parser.add_argument(
    "--targets",
    default=None,
    help="required time metric targets, comma-separated (default: per env)",
  )
  parser.add_argument("--success_fraction", type=float, default=0.5)
  parser.add_argument(
    "--reference",
    action="append",
    default=[],
    help="ENV=SCORE reference for the success rate and the across-games "
    "normalisation's high (repeatable)",
  )
  parser.add_argument(
    "--random",
    action="append",
    default=[],
    help="ENV=SCORE the across-games normalisation's low (repeatable)",
  )
  parser.add_argument("--resamples", type=int, default=10_000, help="across-games bootstrap")
  parser.add_argument("--no_plots", action="store_true")
  args = parser.parse_args(argv)
  if not os.path.exists(args.results):
    parser.error(f"{args.results!r} does not exist.")
  try:
    references = report_aggregate.env_scores("--reference", args.reference)
    randoms = report_aggregate.env_scores("--random", args.random)
  except ValueError as e:
    parser.error(str(e))
  runs, summaries = load_results(args.results)
  if not runs:
    parser.error(f"no galax run records under {args.results!r}.")
  text = build_report(
    runs,
    summaries,
    args.out,
    args.time_limit,
    _floats(args.targets),
    args.success_fraction,
    references,
    args.resamples,
    not args.no_plots,
    randoms,
  )
  print(f"wrote {os.path.join(args.out, 'report.md')} ({len(runs)} runs)")
  return text


if __name__ == "__main__":
  main()
