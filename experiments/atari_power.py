"""The power of issue 56's registered claims at their seeds and margins, from the kept runs'
spread (PREREGISTRATION.md, "Power addendum"; galax/results/power.py simulates the rule).

  python -m experiments.atari_power        # prints the addendum's table

A: A-code's final training returns (3 runs an arm) give each arm's sd; the true effect
under test is stated in each row. B: B has one run an arm, so A2C's run-to-run spread in
agent steps and minutes to 18 is read from B-fast's three A2C runs (pong_fast: archnips,
the same hyper-parameters), as a coefficient of variation, and applied to both arms at B's
A2C seed-0 figures. Every row: 20,000 simulated experiments, generator seed 0.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from galax.results import power

from . import atari_verdicts as verdicts

PAPER_GAIN = 690 / 495  # GALA Table 1, Breakout at 40M: GALA-A2C / A2C
PAPER_TIME = 17.7 / 21.7  # HTS-RL Table A8, minutes to 40% of A2C's reward: HTS / A2C
SEED_COUNTS = (3, 5, 10, 20, 50)


def _arms() -> dict[str, list[float]]:
  finals = {}
  for arm in ("gala", "allreduce"):
    runs = [verdicts.finished(f"codeeps_{arm}_{s}") for s in verdicts.SEEDS]
    finals[arm] = [r["mean_return"] for r in runs if r]
  reached = [verdicts.to_target_or_censored(f"bfast_a2c_{s}") for s in verdicts.SEEDS]
  finals["bfast_steps"] = [r[0] for r in reached]
  finals["bfast_minutes"] = [r[1] for r in reached]
  b0 = {arm: verdicts.to_target_or_censored(f"{arm}_0") for arm in ("a2c", "hts")}
  finals["b_a2c0"] = list(b0["a2c"][:2])
  return finals


def _row(name: str, claim: str, op: str, args: tuple, seeds: int, fraction: float = 0.1) -> str:
  rates = power.outcome_rates(claim, op, *args, seeds=(seeds, seeds), fraction=fraction)
  return f"| {name} | {seeds} | {fraction:g} | {power.describe(rates)} |"


def table() -> list[str]:
  kept = _arms()
  gala_mean, gala_sd = power.spread(kept["gala"])
  ar_mean, ar_sd = power.spread(kept["allreduce"])
  steps_mean, steps_sd = power.spread(kept["bfast_steps"])
  minutes_mean, minutes_sd = power.spread(kept["bfast_minutes"])
  steps_cv, minutes_cv = steps_sd / steps_mean, minutes_sd / minutes_mean
  b_steps, b_minutes = kept["b_a2c0"]
  lines = [
    f"- A-code final returns: GALA {gala_mean:.2f} sd {gala_sd:.2f}, all-reduce"
    f" {ar_mean:.2f} sd {ar_sd:.2f} (3 runs each)",
    f"- A2C's spread to 18 (B-fast, 3 runs): agent steps cv {steps_cv:.3f}, minutes cv"
    f" {minutes_cv:.3f}; applied at B's A2C seed 0 ({b_steps:.0f} agent steps,"
    f" {b_minutes:.1f} min)",
    "",
    "| claim, true effect | seeds an arm | margin | P(verdict) |",
    "| --- | --- | --- | --- |",
  ]
  paper = (ar_mean * PAPER_GAIN, gala_sd, ar_mean, ar_sd)
  null = (ar_mean, gala_sd, ar_mean, ar_sd)
  for n in (3, 5):
    lines.append(_row(f"A1 higher, the paper's gain x{PAPER_GAIN:.3f}", "higher", "diff", paper, n))
    lines.append(_row("A1 higher, no difference", "higher", "diff", null, n))
    lines.append(_row("A2 at least, no difference", "at least", "diff", null, n))
  steps = (b_steps, b_steps * steps_cv, b_steps, b_steps * steps_cv)
  minutes_paper = (b_minutes * PAPER_TIME, b_minutes * PAPER_TIME * minutes_cv)
  minutes = (*minutes_paper, b_minutes, b_minutes * minutes_cv)
  for n in SEED_COUNTS:
    lines.append(_row("B1 equal, ratio 1", "equal", "ratio", steps, n))
  lines.append(_row(f"B2 lower, the paper's ratio {PAPER_TIME:.3f}", "lower", "ratio", minutes, 3))
  needed = power.smallest_seeds(
    "equal", "ratio", *steps, counts=(100, 125, 150, 175, 200, 300), draws=4000
  )
  lines.append("")
  lines.append(
    "- B1 as registered (margin 0.1): 80% power needs "
    + (f"{needed[0]} seeds an arm (P = {needed[1]:.2f}, 4,000 draws)" if needed else "over 500")
  )
  found = power.smallest_factor("equal", *steps, seeds=(3, 3))
  if found is None:
    lines.append("- B1s: no factor up to 4 gives 80% power at 3 seeds an arm")
    return lines
  factor = found[0]
  lines.append(
    f"- B1s: the smallest factor (steps of 0.05) within which 3 seeds an arm read"
    f" 'reproduced' with probability >= 0.8 when the arms are equal: {factor:g}"
  )
  lines += [
    "",
    "| B1s, true ratio | seeds an arm | factor | P(verdict) |",
    "| --- | --- | --- | --- |",
  ]
  for true_ratio in (1.0, 1.5, 2.0, 3.0):
    args = (b_steps * true_ratio, b_steps * true_ratio * steps_cv, b_steps, b_steps * steps_cv)
    rates = power.outcome_rates("equal", "ratio", *args, seeds=(3, 3), factor=factor)
    lines.append(f"| {true_ratio:g} | 3 | {factor:g} | {power.describe(rates)} |")
  return lines


def main(argv: Sequence[str] | None = None) -> None:
  argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args(argv)
  print("\n".join(table()))


if __name__ == "__main__":
  main()
