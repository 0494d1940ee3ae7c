"""Each claim's numbers and verdict, from the run records of `galax.results.experiment`.

Per game, every variant gets its final metric (mean of the last 10 evaluations x 10
episodes per seed; mean and 95% bootstrap CI over seeds) and its required time to the
game's target (HTS-RL's required time metric, in seconds of training after the first,
compiling, call: with budgets of minutes a compile of 20-30 s would otherwise dominate). The target
is halfway from the untrained policy's return (the mean first evaluation over all runs of the game)
to the weakest variant's mean final metric,

    target = R_0 + (min_v F_v - R_0) / 2,

so that every variant whose mean learning curve ends at F_v is expected to reach it and
the time to reach it compares speeds rather than whether a variant learns at all.

A variant A against a baseline B over independent seeds: the difference of the final
metrics' means and the ratio of the required times' means (only where every seed of both
reached the target), each with a 95% Welch t-interval (`paper_protocols.welch_ci`: the
percentile bootstrap covers about 80% at 3 seeds, tests/results/test_interval_coverage.py),
and the probability that a seed of A
beats a seed of B (`across_games.probability_of_improvement`). Each CI is labelled
"different", "equivalent" or "inconclusive", and each claim's verdict follows, by the rule
of `galax.results.verdict` (margin: 10% of B's mean, or of 1 for a ratio).
"""

from __future__ import annotations

import csv
import math
import os
from typing import Any, Sequence

import numpy as np

from galax.results import across_games
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule
from galax.results.tables import eval_series, group_experiments

Run = dict[str, Any]
CONSENSUS_TOLERANCE = 1e-5  # float rounding of an exact average (the full graph's bound is 0)


def by_game(runs: Sequence[Run]) -> dict[str, dict[str, list[Run]]]:
  """game -> variant -> runs (experiment names are '<game>_<variant>')."""
  games: dict[str, dict[str, list[Run]]] = {}
  for name, group in group_experiments([r for r in runs if r.get("evaluations")]).items():
    game, _, variant = name.partition("_")
    games.setdefault(game, {})[variant] = group
  return games


def finals(group: Sequence[Run]) -> np.ndarray:
  return np.array([protocols.final_metric(eval_series(r)[1]) for r in group], float)


def game_target(variants: dict[str, list[Run]]) -> float:
  """Halfway from the untrained policy's return to the weakest variant's final metric."""
  first = [np.mean(r["evaluations"][0]["returns"]) for g in variants.values() for r in g]
  start = float(np.mean(first))
  weakest = min(float(np.mean(finals(g))) for g in variants.values())
  return start + 0.5 * (weakest - start)


def required_times(
  group: Sequence[Run], target: float, times: Sequence[Sequence[float]] | None = None
) -> np.ndarray:
  """Per seed: seconds of training after the first (compiling) call to reach `target`, or
  the given `times` per evaluation."""
  out = []
  for i, run in enumerate(group):
    run_times, returns = eval_series(run)
    run_times = [max(0.0, t - run["compile_time_s"]) for t in run_times]
    out.append(protocols.required_time(times[i] if times else run_times, returns, target))
  return np.array(out, float)


def bootstrap_two_groups(
  a: np.ndarray, b: np.ndarray, op: str, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
  """(op(mean a, mean b), lo, hi): 95% percentile CI with a and b resampled separately."""
  return protocols.two_sample_ci(a, b, op, resamples=resamples, seed=seed)


def welch_two_groups(a: np.ndarray, b: np.ndarray, op: str) -> tuple[float, float, float]:
  """(op(mean a, mean b), lo, hi): the 95% Welch t-interval the verdicts use."""
  est, lo, hi = protocols.welch_ci(a, b, op)
  return float(est), float(lo), float(hi)


def _ci(a: np.ndarray, resamples: int) -> str:
  mean, lo, hi = protocols.bootstrap_ci(a, resamples=resamples)
  return f"{float(mean):.2f} [{float(lo):.2f}, {float(hi):.2f}]"


def _time_cell(t: np.ndarray) -> str:
  reached = t[np.isfinite(t)]
  if not len(reached):
    return f"- (0/{len(t)})"
  return f"{reached.mean():.0f} ({len(reached)}/{len(t)})"


Claims = tuple[str | None, str | None]  # (final metric, required time): a rule.CLAIMS or None


def compare(
  a: Sequence[Run],
  b: Sequence[Run],
  target: float,
  resamples: int,
  times: tuple[Any, Any] = (None, None),
  claims: Claims = (None, None),
) -> dict[str, Any]:
  """Variant a vs baseline b: final-metric difference and required-time ratio with CIs, their
  labels, P(a > b) on the final metric, and the verdicts of `claims` (None: no claim)."""
  fa, fb = finals(a), finals(b)
  diff = welch_two_groups(fa, fb, "diff")
  final = rule.difference(*diff, baseline=float(fb.mean()))
  ta, tb = required_times(a, target, times[0]), required_times(b, target, times[1])
  ratio = (
    welch_two_groups(ta, tb, "ratio")
    if np.all(np.isfinite(ta)) and np.all(np.isfinite(tb))
    else None
  )
  time = rule.ratio(*ratio) if ratio else None
  out = dict(
    final_diff=diff,
    final_label=rule.label(final),
    final_margin=final.margin,
    probability_of_improvement=across_games.probability_of_improvement(
      [fa], [fb], resamples=resamples
    ),
    time_ratio=ratio,
    time_label=rule.label(time) if time else "inconclusive",
    reached=(int(np.isfinite(ta).sum()), int(np.isfinite(tb).sum())),
    seeds=(len(a), len(b)),
  )
  if claims[0]:
    out["final_verdict"] = rule.verdict(claims[0], final)
  if claims[1]:
    out["time_verdict"] = rule.verdict(claims[1], time) if time else rule.INCONCLUSIVE
  return out


def format_compare(label: str, c: dict[str, Any]) -> str:
  d, lo, hi = c["final_diff"]
  claimed = f", {c['final_verdict']}" if "final_verdict" in c else ""
  p, plo, phi = c["probability_of_improvement"]
  text = (
    f"- {label}: final metric difference {d:+.2f} [{lo:+.2f}, {hi:+.2f}], "
    f"{c['final_label']} (margin +-{c['final_margin']:.2f}){claimed}; "
    f"P(A > B) {p:.2f} [{plo:.2f}, {phi:.2f}]"
  )
  timed = f", {c['time_verdict']}" if "time_verdict" in c else ""
  if c["time_ratio"]:
    r, rlo, rhi = c["time_ratio"]
    text += (
      f"; required-time ratio {r:.2f} [{rlo:.2f}, {rhi:.2f}], {c['time_label']} "
      f"(margin +-{rule.MARGIN_FRACTION:.2f}){timed}"
    )
  else:
    text += (
      f"; required-time ratio n/a (target reached by {c['reached'][0]}/{c['seeds'][0]}"
      f" vs {c['reached'][1]}/{c['seeds'][1]} seeds){timed}"
    )
  return text


def variant_table(variants: dict[str, list[Run]], target: float, resamples: int) -> list[str]:
  lines = [
    "| variant | method | seeds | env steps | steps/s | final metric [95% CI] "
    f"| required time to {target:.2f} (s, seeds reaching it) |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ]
  for name, g in variants.items():
    sps = np.mean([r["steps_per_second"] or np.nan for r in g])
    lines.append(
      f"| {name} | {g[0]['method']} | {len(g)} | {g[0]['env_steps']} | {sps:.0f} "
      f"| {_ci(finals(g), resamples)} | {_time_cell(required_times(g, target))} |"
    )
  return lines


def consensus_check(group: Sequence[Run]) -> dict[str, Any]:
  """GALA Prop. 1: logged consensus distance vs the bound, over every logged row.

  Rows hold each call's mean over its updates and learners of ||x_i - x_bar|| and of the
  bound, so this checks the bound on those means (not update by update). The full graph's
  bound is 0 (one exact average); float rounding leaves distances of ~1e-7 there, hence
  the tolerance.
  """
  rows = within = 0
  worst = 0.0
  for run in group:
    path = os.path.join(run.get("workdir", ""), "metrics.csv")
    if not os.path.exists(path):
      continue
    with open(path, newline="") as f:
      for row in csv.DictReader(f):
        dist, bound = row.get("gossip/consensus_distance"), row.get("gossip/prop1_bound")
        if not dist or not bound:
          continue
        dist, bound = float(dist), float(bound)
        rows += 1
        within += dist <= bound + CONSENSUS_TOLERANCE
        if bound > 0:
          worst = max(worst, dist / bound)
  return dict(rows=rows, within=within, worst_ratio=worst)


def json_finite(x: Any) -> Any:
  """JSON has no NaN or inf: None stands for them (tuples become lists)."""
  if isinstance(x, dict):
    return {k: json_finite(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [json_finite(v) for v in x]
  if isinstance(x, (float, np.floating)):
    return float(x) if math.isfinite(x) else None
  if isinstance(x, np.integer):
    return int(x)
  if isinstance(x, np.bool_):
    return bool(x)
  return x
