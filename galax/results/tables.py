"""The report's markdown tables, from run records grouped by experiment.

  runs             per experiment: method, env, simulators, seeds, env steps, steps/s
  energy           GALA Fig. 3: frames per kJ, power and energy (runs that measured it)
  final metric     HTS-RL's evaluation protocol, with a 95% t-interval from 3 seeds up
  final time       HTS-RL Table 1: the final metric within a training-time limit
  required time    HTS-RL Table 2: minutes until the running evaluation mean reaches a target
  best policy      GALA Table 1: the best final policy over seeds, on fresh episodes
  success rate     GALA Fig. 1a: per env, success rate by method and number of simulators

`galax.results.report` assembles them (with the section across games and the plots) into
report.md; experiments/ reads run records through `group_experiments` and `eval_series`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from galax.core.types import JsonDict
from galax.results import paper_protocols as protocols
from galax.results.seed_runs import RunRecord

Groups = dict[str, list[RunRecord]]  # experiment name -> its run records
# env -> (reference score, method -> simulators -> (success rate, runs))
Sweep = dict[str, tuple[float, dict[str, dict[int, tuple[float, int]]]]]


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


def group_experiments(runs: Sequence[RunRecord]) -> Groups:
  """Run records grouped by experiment name, each group sorted by seed."""
  groups: Groups = {}
  for run in runs:
    groups.setdefault(run["name"], []).append(run)
  return {k: sorted(v, key=lambda r: r["seed"]) for k, v in sorted(groups.items())}


def eval_series(run: RunRecord) -> tuple[list[float], list[list[float]]]:
  evals = run.get("evaluations") or []
  return [e["train_time_s"] for e in evals], [e["returns"] for e in evals]


def _mean_se(values: Sequence[float]) -> str:
  """'mean ± s.e.' over the finite values, with '(k/n runs)' if some were missing."""
  finite = [v for v in values if v is not None and math.isfinite(v)]
  if not finite:
    return "n/a"
  mean, se = protocols.mean_and_standard_error(finite)
  missing = f" ({len(finite)}/{len(values)} runs)" if len(finite) < len(values) else ""
  return f"{mean:.1f} ± {se:.1f}{missing}"


def runs_table(groups: Groups) -> list[str]:
  """What ran: per experiment its method, env, seeds, budget, speed, device and commit."""
  lines = [
    "## Runs",
    "",
    "| experiment | method | env | simulators | seeds | seed mode | env steps "
    "| steps/s | train time (min) | device | commit |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
  ]
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
      f"| {r0['device']['kind']} x{r0['device']['count']} | {commit} |"
    )
  if any(r.get("seed_mode") == "learners" for group in groups.values() for r in group):
    lines += [
      "",
      "Seeds run as learners of one program share its wall time: their time "
      "metrics describe the joint run.",
    ]
  return lines


def energy_table(groups: Groups) -> list[str]:
  """GALA Fig. 3, for the experiments whose runs measured energy (none: no table)."""
  if not any(r.get("energy") for group in groups.values() for r in group):
    return []
  lines = [
    "",
    "## Energy (GALA Fig. 3)",
    "",
    "| experiment | frames/kJ | mean power (W) | energy (kJ) |",
    "| --- | --- | --- | --- |",
  ]
  for name, g in groups.items():
    es = [r["energy"] for r in g if r.get("energy")]
    if es:
      lines.append(
        f"| {name} | {np.mean([e['frames_per_kj'] for e in es]):.0f} "
        f"| {np.mean([e['mean_power_w'] for e in es]):.0f} "
        f"| {np.mean([e['energy_kj'] for e in es]):.1f} |"
      )
  return lines


# What a table gives below MIN_SEEDS_FOR_CI seeds, and why (the report and sweep.md alike).
NO_INTERVAL = "no interval below {least} seeds"


def final_metric_table(evaluated: Groups) -> list[str]:
  """HTS-RL's evaluation protocol: per run, the mean return of its last 10 policies."""
  least = protocols.MIN_SEEDS_FOR_CI
  lines = [
    "",
    "## Final metric",
    "",
    "Mean return of the last 10 policies x their evaluation episodes, per run; "
    "mean ± standard error over seeds, and the 95% Student t-interval of that mean "
    f"(`paper_protocols.t_interval`) from {least} seeds up: with fewer, the spread of 1 or 2 "
    "seeds gives no interval worth the name (a bootstrap's would be their min and max).",
    "",
    "| experiment | env | env steps | final metric | 95% t-interval | per seed |",
    "| --- | --- | --- | --- | --- | --- |",
  ]
  for name, g in evaluated.items():
    finals = [protocols.final_metric(eval_series(r)[1]) for r in g]
    ci = f"n={len(finals)}, {NO_INTERVAL.format(least=least)}"
    if len(finals) >= least:
      _, lo, hi = protocols.t_interval(finals)
      ci = f"[{lo:.1f}, {hi:.1f}]"
    lines.append(
      f"| {name} | {g[0]['env_id']} | {_steps(g[0]['env_steps'])} "
      f"| {_mean_se(finals)} | {ci} "
      f"| {', '.join(_fmt(f) for f in finals)} |"
    )
  return lines


def final_time_table(
  evaluated: Groups, evaluated_by_env: dict[str, list[str]], time_limit: float | None
) -> list[str]:
  """HTS-RL Table 1: the final metric within a training-time limit."""
  lines = [
    "",
    "## Final time metric (HTS-RL)",
    "",
    "Final metric of the evaluations within a training-time limit (evaluation "
    "time excluded)."
    + ("" if time_limit else " Limit per env: the mean training time of its fastest experiment."),
    "",
    "| env | limit (min) | experiment | final time metric |",
    "| --- | --- | --- | --- |",
  ]
  for env, names in evaluated_by_env.items():
    limit = time_limit or min(np.mean([r["train_time_s"] for r in evaluated[n]]) for n in names)
    for n in names:
      values = [protocols.final_time_metric(*eval_series(r), limit) for r in evaluated[n]]
      lines.append(f"| {env} | {limit / 60:.2f} | {n} | {_mean_se(values)} |")
  return lines


def required_time_table(
  evaluated: Groups, evaluated_by_env: dict[str, list[str]], targets: Sequence[float] | None
) -> list[str]:
  """HTS-RL Table 2: minutes until the running evaluation mean reaches each target."""
  lines = [
    "",
    "## Required time metric (HTS-RL)",
    "",
    "Minutes of training until the running mean of the last 100 evaluation "
    "episodes (10 policies) reaches the target; mean over the seeds that reached "
    "it, with how many did; '-' where none did.",
    "",
  ]
  rows = []
  for env, names in evaluated_by_env.items():
    env_targets = targets
    if targets:
      lines.append(f"Targets on {env}: {_targets(targets)}, as given (--targets).")
    else:  # 40% and 80% of the env's best mean final metric
      finals = {
        n: np.mean([protocols.final_metric(eval_series(r)[1]) for r in evaluated[n]]) for n in names
      }
      best = max(finals, key=finals.get)
      env_targets = [0.4 * finals[best], 0.8 * finals[best]]
      lines.append(
        f"Targets on {env}: {_targets(env_targets)}, 40% and 80% of the best mean final metric "
        f"there ({finals[best]:.1f}, {best}); --targets sets others."
      )
    for target in env_targets:
      for n in names:
        times = [protocols.required_time(*eval_series(r), target) for r in evaluated[n]]
        reached = [t / 60 for t in times if math.isfinite(t)]
        cell = f"{np.mean(reached):.2f}" if reached else "-"
        rows.append(f"| {env} | {target:.3g} | {n} | {cell} | {len(reached)}/{len(times)} |")
  header = [
    "| env | target | experiment | required time (min) | runs reaching it |",
    "| --- | --- | --- | --- | --- |",
  ]
  return lines + [""] + header + rows


def _targets(values: Sequence[float]) -> str:
  return " and ".join(f"{v:.3g}" for v in values)


def best_policy_table(summaries: Sequence[JsonDict], groups: Groups) -> list[str]:
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
    table.setdefault(row, {})[s["env_id"]] = (
      f"{_fmt(b['mean'], 0)} ± {_fmt(b['se'], 0)}" if b["mean"] is not None else "n/a"
    )
  lines = [
    "",
    "## Best policy (GALA Table 1)",
    "",
    "The best final policy over seeds, evaluated on fresh episodes "
    "(greedy actions unless the config samples; up to 30 no-op starts on Atari): "
    "mean ± standard error over those episodes.",
    "",
    "| method | " + " | ".join(envs) + " |",
    "| --- |" + " --- |" * len(envs),
  ]
  for row, cells in table.items():
    lines.append(f"| {row} | " + " | ".join(cells.get(e, "") for e in envs) + " |")
  return lines


def success_rate_tables(sweep: Sweep, success_fraction: float) -> list[str]:
  """GALA Fig. 1a as tables: per env, success rate by method and number of simulators."""
  if not sweep:
    return []
  lines = [
    "",
    "## Success rate over simulators (GALA Fig. 1a)",
    "",
    f"A run succeeds if its final metric beats {success_fraction:g} x the "
    "reference score (default: the mean final metric of the 16-simulator A2C "
    "experiment of that env).",
    "",
  ]
  for env, (reference, table) in sweep.items():
    sims = sorted({s for rows in table.values() for s in rows})
    lines += [
      f"{env} (reference {reference:.1f}):",
      "",
      "| method | " + " | ".join(str(s) for s in sims) + " |",
      "| --- |" + " --- |" * len(sims),
    ]
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
      r0["simulators"], []
    ).extend(finals)
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
    table = {
      m: {
        s: (protocols.success_rate(v, fraction * reference), len(v))
        for s, v in sorted(sims.items())
      }
      for m, sims in methods.items()
    }
    out[env] = (reference, table)
  return out
