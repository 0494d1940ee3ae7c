"""Issue 56's verdicts, by the registration's rule (docs/results/atari_gala_hts/PREREGISTRATION.md).

  python -m experiments.atari_verdicts                # prints, and writes <out>/verdicts.md
  python -m experiments.atari_verdicts --out=docs/results/atari_gala_hts

Experiment A-code (the authors' RMSProp eps 1e-5): the final training return (the running
mean of the last 100 full games at the end of a finished run) of GALA-A2C minus all-reduce
A2C, a 95% Welch t-interval over seeds, margin 10% of the all-reduce mean; A1 "GALA beats
A2C" is read by the "higher" rule, A2 "gossip keeps A2C's sample efficiency" by "at least".
Experiment B: HTS-A2C / A2C, the ratio of mean agent steps to a running mean of 18 (B1,
"equal") and of mean minutes to it (B2, "lower", the 2-core regime only), Welch on the log
scale, margin 0.1 around 1; a finished run that did not reach 18 is censored at its cap
(its last row) and counted there, and a line says how many were. B-fast: the same claims
at pong_fast's settings (archnips; the runs bfast_hts_s and bfast_a2c_s). A verdict needs
MIN_SEEDS_FOR_CI finished runs in each arm; until then the line says how many there are,
and no interval is computed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from typing import Sequence

import numpy as np

from galax.results import verdict as rule
from galax.results.paper_protocols import MIN_SEEDS_FOR_CI, welch_ci

from . import atari_prereg as prereg
from .atari_prereg_report import first_row_at, metrics_rows

SEEDS = range(3)
TARGET = 18.0  # Pong, Experiment B


def finished(name: str) -> dict | None:
  """A run's result.json if it ran to its end (budget or target), else None."""
  path = os.path.join(prereg.run_folder(name), "result.json")
  if not os.path.exists(path):
    return None
  with open(path) as f:
    result = json.load(f)
  return result if result.get("stopped") in ("budget", "target return") else None


def to_target_or_censored(name: str) -> tuple[float, float, bool]:
  """A finished run's (agent steps, minutes, censored) at the first metrics row whose
  running mean reaches TARGET, else censored at its last row (the registered cap), as the
  registration reads it."""
  rows = metrics_rows(name)
  row = first_row_at(rows, TARGET)
  censored = row is None
  row = rows[-1] if censored else row
  return float(row["env_steps"]), float(row["wall_time_s"]) / 60, censored


def judge(
  claim: str, a: Sequence[float], b: Sequence[float], op: str, censored: tuple[int, int] = (0, 0)
) -> str:
  """The rule's verdict of A against B (op 'diff' or 'ratio'), or why there is none.

  `censored` counts the runs of A and of B counted at their cap (galax/results/verdict.py,
  `stands`: a verdict is read only where censoring cannot overturn it)."""
  if min(len(a), len(b)) < MIN_SEEDS_FOR_CI:
    return (
      f"no verdict: {len(a)} and {len(b)} finished runs (a verdict needs {MIN_SEEDS_FOR_CI} each)"
    )
  estimate, low, high = welch_ci(a, b, op)
  if op == "diff":
    comparison = rule.difference(estimate, low, high, sum(b) / len(b))
  else:
    comparison = rule.ratio(estimate, low, high)
  if not rule.stands(comparison, censored):
    return f"{rule.describe(comparison)}: no verdict (censored runs: only a bound)"
  return f"{rule.describe(comparison)}: {rule.verdict(claim, comparison, censored)}"


B1S_FACTOR = 2.7  # PREREGISTRATION.md, "Power addendum": B1s, within a factor F


def judge_within(a: Sequence[float], b: Sequence[float], censored: tuple[int, int]) -> str:
  """B1s: A / B's Welch CI inside [1/F, F] (`verdict.within_factor`), or why no verdict."""
  if min(len(a), len(b)) < MIN_SEEDS_FOR_CI:
    return (
      f"no verdict: {len(a)} and {len(b)} finished runs (a verdict needs {MIN_SEEDS_FOR_CI} each)"
    )
  comparison = rule.within_factor(*welch_ci(a, b, "ratio"), B1S_FACTOR)
  if not rule.stands(comparison, censored):
    return "no verdict (censored runs: only a bound)"
  return f"{rule.verdict('equal', comparison, censored)} (log-ratio CI {rule.describe(comparison)})"


def _metrics(folder: str) -> list[dict]:
  with open(os.path.join(folder, "metrics.csv")) as f:
    return list(csv.DictReader(f))


def _median(rows: list[dict], key: str) -> float:
  return float(np.median([float(r[key]) for r in rows]))


def control_c1(hts: str, a2c: str, steps: int = 1_600_000) -> str:
  """C1 as registered: HTS-A2C at half the rate tracks A2C at half the rate when the returns
  at 1.6M differ by at most 3 points and both medians lie within a factor 1.5 of A2C's."""
  if not os.path.exists(os.path.join(a2c, "result.json")):
    return "- C1 (A2C at lr 3.5e-4, B-fast's settings, seed 0): not finished"
  runs = {
    k: [r for r in _metrics(f) if int(r["env_steps"]) <= steps]
    for k, f in (("hts", hts), ("a2c", a2c))
  }
  ret = {k: float(rows[-1]["mean_return"]) for k, rows in runs.items()}
  grad = {k: _median(rows, "grad_norm") for k, rows in runs.items()}
  value = {k: _median(rows, "loss/value") for k, rows in runs.items()}
  within = all(1 / 1.5 <= m["hts"] / m["a2c"] <= 1.5 for m in (grad, value))
  tracks = abs(ret["hts"] - ret["a2c"]) <= 3 and within
  return (
    f"- C1 (lr 3.5e-4, seed 0, to {steps:,}): return HTS-A2C {ret['hts']:.2f},"
    f" A2C {ret['a2c']:.2f};"
    f" median gradient norm {grad['hts']:.3f} vs {grad['a2c']:.3f}, value loss"
    f" {value['hts']:.4f} vs {value['a2c']:.4f}: HTS-A2C at half the rate"
    f" {'tracks' if tracks else 'does not track'} A2C at half the rate (one seed, no verdict)"
  )


def control_c2(folder: str, steps: int = 1_360_000) -> str:
  """C2 as registered: all-reduce A2C at eps 0.01 stalls as GALA did when its running mean at
  1.36M is at most 2.0 and its entropy at least 1.34; learns above 5.0; else neither."""
  if not os.path.exists(os.path.join(folder, "result.json")):
    return "- C2 (all-reduce A2C at Table 2's eps 0.01, seed 0): not finished"
  row = [r for r in _metrics(folder) if int(r["env_steps"]) <= steps][-1]
  mean, entropy = float(row["mean_return"]), float(row["loss/entropy"])
  reading = (
    "stalls as GALA did"
    if mean <= 2.0 and entropy >= 1.34
    else "learns"
    if mean > 5.0
    else "neither stalls nor learns by the registered reading"
  )
  return (
    f"- C2 (all-reduce A2C at eps 0.01, seed 0, at {int(row['env_steps']):,} agent steps):"
    f" running mean {mean:.2f}, entropy {entropy:.3f}: {reading}"
  )


def experiment_a() -> list[str]:
  arms = {arm: [finished(f"codeeps_{arm}_{s}") for s in SEEDS] for arm in ("gala", "allreduce")}
  finals = {arm: [r["mean_return"] for r in runs if r] for arm, runs in arms.items()}
  gala, allreduce = finals["gala"], finals["allreduce"]
  a1, a2 = (judge(claim, gala, allreduce, "diff") for claim in ("higher", "at least"))
  return [
    f"- A-code final training returns: GALA {gala}, all-reduce {allreduce}",
    f"- A1 GALA-A2C beats A2C (higher), GALA - all-reduce: {a1}",
    f"- A2 gossip keeps A2C's return (at least), GALA - all-reduce: {a2}",
    consensus_claim(),
    success_counts(),
  ]


def consensus_claim(name: str = "codeeps_gala_0") -> str:
  """A3 on the GALA seed run with gossip metrics: distance <= Prop. 1 bound at every logged
  update. A logged value is the mean over the learners and over the updates of the last
  call before the log, so the check is of those means, not of each update and learner."""
  rows = [r for r in metrics_rows(name) if r.get("gossip/prop1_bound")]
  if not finished(name) or not rows:
    return f"- A3 consensus within the Prop. 1 bound ({name}): no verdict: no finished run"
  ratios = [float(r["gossip/consensus_distance"]) / float(r["gossip/prop1_bound"]) for r in rows]
  above = sum(x > 1 for x in ratios)
  label = "reproduced" if not above else "not reproduced"
  return (
    f"- A3 consensus within the Prop. 1 bound ({name}, {len(rows)} logged updates, learner"
    f" means): {label}: {above} above the bound; distance / bound at most {max(ratios):.3f}"
  )


def success_counts() -> str:
  """A4: runs whose final return exceeds half the nominal 16-env A2C run's (GALA's success)."""
  nominal = finished("codeeps_a2c16_0")
  if not nominal:
    return "- A4 successes (> 50% of nominal 16-env A2C): no count: codeeps_a2c16_0 not finished"
  half = nominal["mean_return"] / 2
  counts = {
    arm: sum(bool(r) and r["mean_return"] > half for r in map(finished, names))
    for arm, names in (
      ("GALA", [f"codeeps_gala_{s}" for s in SEEDS]),
      ("all-reduce", [f"codeeps_allreduce_{s}" for s in SEEDS]),
    )
  }
  gala, allreduce = counts["GALA"], counts["all-reduce"]
  return f"- A4 successes (> {half:.1f}): GALA {gala} of 3, all-reduce {allreduce} of 3"


def experiment_b(
  prefix: str = "",
  label: str = "B",
  cap: str = "6M",
  suffix: str = "",
  a2c_prefix: str | None = None,
) -> list[str]:
  """B's claims B1{suffix}, B2{suffix} on the runs `{prefix}hts_s` and `{a2c_prefix}a2c_s`
  (`a2c_prefix` defaults to `prefix`; B-fast: prefix 'bfast_', suffix 'f'; B-current:
  prefix 'bcur_', suffix 'c', B-fast's A2C arm)."""
  prefixes = dict(hts=prefix, a2c=prefix if a2c_prefix is None else a2c_prefix)
  reached = {
    arm: [
      to_target_or_censored(f"{first}{arm}_{s}") for s in SEEDS if finished(f"{first}{arm}_{s}")
    ]
    for arm, first in prefixes.items()
  }
  steps = {arm: [r[0] for r in runs] for arm, runs in reached.items()}
  minutes = {arm: [r[1] for r in runs] for arm, runs in reached.items()}
  censored = {arm: sum(r[2] for r in runs) for arm, runs in reached.items()}
  counts = (censored["hts"], censored["a2c"])
  b1 = judge("equal", steps["hts"], steps["a2c"], "ratio", counts)
  b1s = judge_within(steps["hts"], steps["a2c"], counts)
  b2 = judge("lower", minutes["hts"], minutes["a2c"], "ratio", counts)
  lines = [
    f"- {label} agent steps to 18: HTS-A2C {steps['hts']}, A2C {steps['a2c']}",
    f"- B1{suffix} HTS-A2C learns as A2C per agent step (equal), HTS / A2C agent steps: {b1}",
    f"- B2{suffix} HTS-A2C reaches 18 sooner (lower, 2 cores), HTS / A2C minutes: {b2}",
  ]
  if not suffix:  # B1s, registered with the power addendum for B alone
    lines.append(f"- B1s (secondary) within a factor {B1S_FACTOR} in agent steps: {b1s}")
  if any(censored.values()):
    marked = f"HTS-A2C {censored['hts']}, A2C {censored['a2c']}"
    why = "counted at their last row, so such an arm's mean is a lower bound"
    lines.insert(1, f"- {label} censored (did not reach 18 by {cap}; {why}): {marked}")
  return lines


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--out", default=prereg.KEPT)
  args = parser.parse_args(argv)
  lines = [
    "# Issue 56's verdicts so far",
    "",
    "Written by `python -m experiments.atari_verdicts` from the finished runs (in runs/prereg,",
    "else their copies kept here), by the registration's rule (PREREGISTRATION.md;",
    "galax/results/verdict.py, Welch t 95%).",
    "",
    *experiment_a(),
    *experiment_b(),
    *experiment_b("bfast_", "B-fast", "10M", "f"),
    *experiment_b("bcur_", "B-current", "10M", "c", a2c_prefix="bfast_"),
    "",
    "Controls (issue 75, registered with the power addendum; one seed each, no verdict):",
    "",
    control_c1(
      os.path.join(prereg.KEPT, "diagnostic_Bfast_hts_seed0_lr3.5e-4"),
      os.path.join(prereg.KEPT, "diagnostic_Bfast_a2c_seed0_lr3.5e-4"),
    ),
    control_c2(os.path.join(prereg.KEPT, "A_allreduce_eps0.01_seed0")),
  ]
  os.makedirs(args.out, exist_ok=True)
  with open(os.path.join(args.out, "verdicts.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


if __name__ == "__main__":
  main()
