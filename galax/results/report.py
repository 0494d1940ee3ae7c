"""Results -> the papers' tables (markdown) and plots (PNG).

  python -m galax.report results --out docs/results
  python -m galax.report results --out report --time_limit 3600 --targets 10,18

Reads every run record and experiment summary under the results directory (written by
`galax.results.experiment`) and writes `<out>/report.md` with

  runs             per experiment: method, env, simulators, seeds, env steps, steps/s
  final metric     mean over the last 10 policies x 10 episodes, mean +- s.e. over seeds
                   and a 95% bootstrap CI (HTS-RL's evaluation protocol)
  final time       the final metric at a training-time limit (HTS-RL Table 1); default
                   limit per env: when the fastest experiment of that env finished
  required time    minutes until the running 100-episode mean reaches each target (HTS-RL
                   Table 2); '-' where a run never did; default targets per env: 40% and
                   80% of the best final metric of that env
  best policy      GALA Table 1: the best final policy over seeds, fresh episodes,
                   mean +- s.e.
  success rate     GALA Fig. 1a: fraction of seeds whose final metric beats `fraction` x
                   the reference score, per method and number of simulators
  across games     with 2+ games: IQM of the normalised final metrics with a stratified
                   bootstrap CI, and `performance_profile.png` (galax/results/aggregate.py)

and the plots `<env>_steps.png` / `<env>_time.png` (mean return over seeds against env
steps / training wall time, with 95% bootstrap confidence bands; evaluation returns where
runs have evaluations, else the training running mean) and `<env>_success.png`.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from typing import Sequence

import numpy as np

from galax.core.types import JsonDict
from galax.results import aggregate as report_aggregate
from galax.results import paper_protocols as protocols
from galax.results.experiment import RunRecord, load_results


def _fmt(x: float | None, digits: int = 1) -> str:
  if x is None or (isinstance(x, float) and math.isnan(x)):
    return "n/a"
  if math.isinf(x):
    return "-"
  return f"{x:.{digits}f}"


def _steps(n: float) -> str:
  for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
    if n >= size:
      return f"{n / size:.3g}{unit}"
  return str(int(n))


def _slug(text: str) -> str:
  return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def group_experiments(runs: Sequence[RunRecord]) -> Groups:
  """Run records grouped by experiment name, each group sorted by seed."""
  groups: Groups = {}
  for run in runs:
    groups.setdefault(run["name"], []).append(run)
  return {k: sorted(v, key=lambda r: r["seed"]) for k, v in sorted(groups.items())}


def eval_series(run: RunRecord) -> tuple[list[float], list[list[float]]]:
  evals = run.get("evaluations") or []
  return [e["train_time_s"] for e in evals], [e["returns"] for e in evals]


def curves(runs: Sequence[RunRecord], x_key: str
           ) -> tuple[list[np.ndarray], list[np.ndarray], str]:
  """Per run (x, mean return) curves: evaluations if all runs have them, else training."""
  if all(r.get("evaluations") for r in runs):
    xs = [np.array([e[x_key] for e in r["evaluations"]], float) for r in runs]
    ys = [np.array([np.mean(e["returns"]) for e in r["evaluations"]], float) for r in runs]
    return xs, ys, "evaluation return"
  xs = [np.array(r["train_curve"][x_key], float) for r in runs]
  ys = [np.array(r["train_curve"]["mean_return"], float) for r in runs]
  return xs, ys, "training return (last 100 episodes)"


def _mean_se(values: Sequence[float]) -> str:
  """'mean ± s.e.' over the finite values, with '(k/n runs)' if some were missing."""
  finite = [v for v in values if v is not None and math.isfinite(v)]
  if not finite:
    return "n/a"
  mean, se = protocols.mean_and_standard_error(finite)
  missing = f" ({len(finite)}/{len(values)} runs)" if len(finite) < len(values) else ""
  return f"{mean:.1f} ± {se:.1f}{missing}"


Groups = dict[str, list[RunRecord]]  # experiment name -> its run records
# env -> (reference score, method -> simulators -> (success rate, runs))
Sweep = dict[str, tuple[float, dict[str, dict[int, tuple[float, int]]]]]


def build_report(runs: Sequence[RunRecord], summaries: Sequence[JsonDict],
                 out_dir: str, time_limit: float | None = None,
                 targets: Sequence[float] | None = None, success_fraction: float = 0.5,
                 references: dict[str, float] | None = None, resamples: int = 10_000,
                 plots: bool = True, randoms: dict[str, float] | None = None) -> str:
  """Writes report.md (and PNGs) to `out_dir`; returns the markdown. `references` and
  `randoms`: per env, the success reference and the across-games normalisation's high,
  and that normalisation's low."""
  os.makedirs(out_dir, exist_ok=True)
  groups = group_experiments(runs)
  lines = ["# Results", ""]
  if not groups:
    lines.append("No run records found.")
    return _write_markdown(out_dir, lines)
  by_env: dict[str, list[str]] = {}
  for name, group in groups.items():
    by_env.setdefault(group[0]["env_id"], []).append(name)
  lines += _runs_table(groups) + _energy_table(groups)
  # The evaluation-based tables need every seed of an experiment evaluated.
  evaluated = {n: g for n, g in groups.items() if all(r.get("evaluations") for r in g)}
  if evaluated:
    # The time tables leave out envs without an evaluated experiment.
    per_env = {env: [n for n in names if n in evaluated] for env, names in by_env.items()}
    evaluated_by_env = {env: names for env, names in per_env.items() if names}
    lines += _final_metric_table(evaluated, resamples)
    lines += _final_time_table(evaluated, evaluated_by_env, time_limit)
    lines += _required_time_table(evaluated, evaluated_by_env, targets)
  lines += _best_policy_table(summaries, groups)
  sweep = success_sweep(evaluated, success_fraction, references or {})
  lines += _success_rate_tables(sweep, success_fraction)
  games = report_aggregate.game_scores(evaluated, references or {}, randoms or {})
  lines += report_aggregate.section(games, resamples)
  if plots:
    figures = plot_all(groups, by_env, sweep, out_dir, resamples)
    figures += report_aggregate.plot_profile(games, out_dir, resamples)
    if figures:
      lines += ["", "## Plots", ""] + [f"![{f}]({f})" for f in figures]
  return _write_markdown(out_dir, lines)


def _write_markdown(out_dir: str, lines: list[str]) -> str:
  text = "\n".join(lines) + "\n"
  with open(os.path.join(out_dir, "report.md"), "w") as f:
    f.write(text)
  return text


def _runs_table(groups: Groups) -> list[str]:
  """What ran: per experiment its method, env, seeds, budget, speed, device and commit."""
  lines = ["## Runs", "",
           "| experiment | method | env | simulators | seeds | seed mode | env steps "
           "| steps/s | train time (min) | device | commit |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
  for name, group in groups.items():
    r0 = group[0]
    sps = [r["steps_per_second"] for r in group if r.get("steps_per_second")]
    git = r0.get("git") or {}
    commit = (git.get("commit") or "?")[:8] + ("+" if git.get("dirty") else "")
    sps_cell = f"{np.mean(sps):.0f}" if sps else "n/a"
    lines.append(
        f"| {name} | {r0['method']} | {r0['env_id']} | {r0['simulators']} | {len(group)} "
        f"| {r0.get('seed_mode', '?')} | {_steps(np.mean([r['env_steps'] for r in group]))} "
        f"| {sps_cell} | {np.mean([r['train_time_s'] for r in group]) / 60:.2f} "
        f"| {r0['device']['kind']} x{r0['device']['count']} | {commit} |")
  if any(r.get("seed_mode") == "learners" for group in groups.values() for r in group):
    lines += ["", "Seeds run as learners of one program share its wall time: their time "
              "metrics describe the joint run."]
  return lines


def _energy_table(groups: Groups) -> list[str]:
  """GALA Fig. 3, for the experiments whose runs measured energy (none: no table)."""
  if not any(r.get("energy") for group in groups.values() for r in group):
    return []
  lines = ["", "## Energy (GALA Fig. 3)", "", "| experiment | frames/kJ | mean power (W) "
           "| energy (kJ) |", "| --- | --- | --- | --- |"]
  for name, g in groups.items():
    es = [r["energy"] for r in g if r.get("energy")]
    if es:
      lines.append(f"| {name} | {np.mean([e['frames_per_kj'] for e in es]):.0f} "
                   f"| {np.mean([e['mean_power_w'] for e in es]):.0f} "
                   f"| {np.mean([e['energy_kj'] for e in es]):.1f} |")
  return lines


def _final_metric_table(evaluated: Groups, resamples: int) -> list[str]:
  """HTS-RL's evaluation protocol: per run, the mean return of its last 10 policies."""
  lines = ["", "## Final metric", "",
           "Mean return of the last 10 policies x their evaluation episodes, per run; "
           "mean ± standard error over seeds, and the 95% bootstrap CI of that mean.", "",
           "| experiment | env | env steps | final metric | 95% CI | per seed |",
           "| --- | --- | --- | --- | --- | --- |"]
  for name, g in evaluated.items():
    finals = [protocols.final_metric(eval_series(r)[1]) for r in g]
    _, lo, hi = protocols.bootstrap_ci(np.array(finals), resamples=resamples)
    lines.append(f"| {name} | {g[0]['env_id']} | {_steps(g[0]['env_steps'])} "
                 f"| {_mean_se(finals)} | [{lo:.1f}, {hi:.1f}] "
                 f"| {', '.join(_fmt(f) for f in finals)} |")
  return lines


def _final_time_table(evaluated: Groups, evaluated_by_env: dict[str, list[str]],
                      time_limit: float | None) -> list[str]:
  """HTS-RL Table 1: the final metric within a training-time limit."""
  lines = ["", "## Final time metric (HTS-RL)", "",
           "Final metric of the evaluations within a training-time limit (evaluation "
           "time excluded)." + ("" if time_limit else " Limit per env: the mean training "
                                "time of its fastest experiment."), "",
           "| env | limit (min) | experiment | final time metric |", "| --- | --- | --- | --- |"]
  for env, names in evaluated_by_env.items():
    limit = time_limit or min(np.mean([r["train_time_s"] for r in evaluated[n]])
                              for n in names)
    for n in names:
      values = [protocols.final_time_metric(*eval_series(r), limit) for r in evaluated[n]]
      lines.append(f"| {env} | {limit / 60:.2f} | {n} | {_mean_se(values)} |")
  return lines


def _required_time_table(evaluated: Groups, evaluated_by_env: dict[str, list[str]],
                         targets: Sequence[float] | None) -> list[str]:
  """HTS-RL Table 2: minutes until the running evaluation mean reaches each target."""
  lines = ["", "## Required time metric (HTS-RL)", "",
           "Minutes of training until the running mean of the last 100 evaluation "
           "episodes (10 policies) reaches the target; mean over the seeds that reached "
           "it, with how many did; '-' where none did.", "",
           "| env | target | experiment | required time (min) | runs reaching it |",
           "| --- | --- | --- | --- | --- |"]
  for env, names in evaluated_by_env.items():
    env_targets = targets
    if not env_targets:  # default: 40% and 80% of the env's best mean final metric
      best = max(np.mean([protocols.final_metric(eval_series(r)[1]) for r in evaluated[n]])
                 for n in names)
      env_targets = [0.4 * best, 0.8 * best]
    for target in env_targets:
      for n in names:
        times = [protocols.required_time(*eval_series(r), target) for r in evaluated[n]]
        reached = [t / 60 for t in times if math.isfinite(t)]
        cell = f"{np.mean(reached):.2f}" if reached else "-"
        lines.append(f"| {env} | {target:.3g} | {n} | {cell} | {len(reached)}/{len(times)} |")
  return lines


def _best_policy_table(summaries: Sequence[JsonDict], groups: Groups) -> list[str]:
  """GALA Table 1: a row per method and budget, a column per env (none: no table)."""
  best_rows = [s for s in summaries if s.get("best_policy")]
  if not best_rows:
    return []
  envs = sorted({s["env_id"] for s in best_rows})
  table: dict[str, dict[str, str]] = {}
  for s in best_rows:
    group = groups.get(s["name"], [])
    steps = _steps(group[0]["env_steps"]) if group else "?"
    row = f"{s['method']} {steps}"
    if s["env_id"] in table.get(row, {}):  # a second experiment of that method and budget
      row = f"{row} ({s['name']})"
    b = s["best_policy"]
    table.setdefault(row, {})[s["env_id"]] = (f"{_fmt(b['mean'], 0)} ± {_fmt(b['se'], 0)}"
                                              if b["mean"] is not None else "n/a")
  lines = ["", "## Best policy (GALA Table 1)", "",
           "The best final policy over seeds, evaluated on fresh episodes "
           "(greedy actions unless the config samples; up to 30 no-op starts on Atari): "
           "mean ± standard error over those episodes.", "",
           "| method | " + " | ".join(envs) + " |", "| --- |" + " --- |" * len(envs)]
  for row, cells in table.items():
    lines.append(f"| {row} | " + " | ".join(cells.get(e, "") for e in envs) + " |")
  return lines


def _success_rate_tables(sweep: Sweep, success_fraction: float) -> list[str]:
  """GALA Fig. 1a as tables: per env, success rate by method and number of simulators."""
  if not sweep:
    return []
  lines = ["", "## Success rate over simulators (GALA Fig. 1a)", "",
           f"A run succeeds if its final metric beats {success_fraction:g} x the "
           "reference score (default: the mean final metric of the 16-simulator A2C "
           "experiment of that env).", ""]
  for env, (reference, table) in sweep.items():
    sims = sorted({s for rows in table.values() for s in rows})
    lines += [f"{env} (reference {reference:.1f}):", "",
              "| method | " + " | ".join(str(s) for s in sims) + " |",
              "| --- |" + " --- |" * len(sims)]
    for method, rows in table.items():
      cells = [f"{rows[s][0] * 100:.0f}% ({rows[s][1]})" if s in rows else "" for s in sims]
      lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines.append("")
  return lines


def success_sweep(evaluated: Groups, fraction: float, references: dict[str, float]) -> Sweep:
  """env -> (reference, method -> simulators -> (success rate, runs))."""
  per_env: dict[str, dict[str, dict[int, list[float]]]] = {}
  for g in evaluated.values():
    r0 = g[0]
    finals = [protocols.final_metric(eval_series(r)[1]) for r in g]
    per_env.setdefault(r0["env_id"], {}).setdefault(r0["method"], {}).setdefault(
        r0["simulators"], []).extend(finals)
  out = {}
  for env, methods in per_env.items():
    if sum(len(v) for v in methods.values()) < 2:
      continue  # a sweep needs more than one number of simulators
    reference = references.get(env)
    if reference is None:
      nominal = methods.get("A2C", {}).get(16)
      if not nominal:
        continue
      reference = float(np.mean(nominal))
    table = {m: {s: (protocols.success_rate(v, fraction * reference), len(v))
                 for s, v in sorted(sims.items())} for m, sims in methods.items()}
    out[env] = (reference, table)
  return out


def plot_all(groups: Groups, by_env: dict[str, list[str]],
             sweep: Sweep, out_dir: str, resamples: int) -> list[str]:
  import matplotlib  # pylint: disable=g-import-not-at-top

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top

  files = []
  for env, names in by_env.items():
    for x_key, x_label, suffix, scale in (("env_steps", "env steps", "steps", 1.0),
                                          ("train_time_s", "training time (min)", "time", 60.0)):
      fig, ax = plt.subplots(figsize=(5.5, 3.6), dpi=100)
      y_label = "return"
      for name in names:
        xs, ys, y_label = curves(groups[name], x_key)
        if not all(len(x) for x in xs):
          continue
        grid, values = protocols.align_curves(xs, ys)
        mean, lo, hi = protocols.bootstrap_ci(values, resamples=resamples)
        line, = ax.plot(grid / scale, mean, label=f"{name} (n={len(ys)})")
        ax.fill_between(grid / scale, lo, hi, color=line.get_color(), alpha=0.25, lw=0)
      ax.set_xlabel(x_label)
      ax.set_ylabel(y_label)
      files.append(report_aggregate.save_plot(
          fig, ax, f"{env}: mean and 95% bootstrap CI over seeds", out_dir,
          f"{_slug(env)}_{suffix}.png"))
  for env, (reference, table) in sweep.items():
    fig, ax = plt.subplots(figsize=(4.5, 3.2), dpi=100)
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
    files.append(report_aggregate.save_plot(
        fig, ax, f"{env}: success rate (reference {reference:.1f})", out_dir,
        f"{_slug(env)}_success.png"))
  return files


def _floats(text: str | None) -> list[float] | None:
  return [float(x) for x in text.split(",") if x.strip()] if text else None


def main(argv: Sequence[str] | None = None) -> str:
  parser = argparse.ArgumentParser(prog="python -m galax.report", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("results", help="results directory (or one results JSON file)")
  parser.add_argument("--out", default="report", help="output directory")
  parser.add_argument("--time_limit", type=float, default=None,
                      help="final time metric limit in seconds (default: per env)")
  parser.add_argument("--targets", default=None,
                      help="required time metric targets, comma-separated (default: per env)")
  parser.add_argument("--success_fraction", type=float, default=0.5)
  parser.add_argument("--reference", action="append", default=[],
                      help="ENV=SCORE reference for the success rate and the across-games "
                      "normalisation's high (repeatable)")
  parser.add_argument("--random", action="append", default=[],
                      help="ENV=SCORE the across-games normalisation's low (repeatable)")
  parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
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
  text = build_report(runs, summaries, args.out, args.time_limit, _floats(args.targets),
                      args.success_fraction, references, args.resamples, not args.no_plots,
                      randoms)
  print(f"wrote {os.path.join(args.out, 'report.md')} ({len(runs)} runs)")
  return text


if __name__ == "__main__":
  main()
