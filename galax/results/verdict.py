"""Verdict labels from confidence intervals: one rule, in code, for every comparison.

A comparison of a variant A with a baseline B is a statistic and its 95% CI: a difference
of means (null 0), a ratio of means (null 1) or a probability of improvement (null 0.5).
The verdicts' CIs over seeds are Welch t-intervals (`paper_protocols.welch_ci`), which
hold their coverage at 3-10 seeds (tests/results/test_interval_coverage.py).
Its label, read in this order:

  1. equivalent    the CI lies strictly inside null +- margin;
  2. different     the CI excludes the null (and so reaches past the margin);
  3. inconclusive  otherwise: the CI includes the null and reaches past the margin.

"equivalent" is read first. With the one 95% CI it is a two one-sided test (TOST) at 2.5%
on each side: a CI inside the margin is equivalent even where it excludes the null, since
the difference it shows is smaller than the margin. The margin is fixed before any result
is read (MARGIN_FRACTION): 10% of the baseline's mean score for a difference (so a
baseline scoring 0 has no equivalence), 10% around 1 for a ratio, 0.1 around 0.5 for a
probability.

A claim's verdict follows from the label and, for "different", the side of the null:

  claim    equivalent       different, above   different, below   inconclusive
  equal    reproduced       not reproduced     not reproduced     inconclusive
  higher   not reproduced   reproduced         not reproduced     inconclusive
  lower    not reproduced   not reproduced     reproduced         inconclusive

"at least" is non-inferiority: A is no worse than B by more than the margin. Its verdict
reads only where the CI sits against null - margin, not the label:

  at least   reproduced where the low end is above null - margin; not reproduced where
             the high end is below null - margin; otherwise (the CI straddles it)
             inconclusive.
  at most    the mirror: reproduced where the high end is below null + margin; not
             reproduced where the low end is above null + margin; otherwise inconclusive.

Worked examples (differences, null 0; the CIs are issue 58's, from the percentile
bootstrap the page used before its Welch t-intervals, which give 2a Breakout (a)
[-0.03, +0.30], equivalent, and 1e Breakout 7e-4 [-1.12, +0.09], inconclusive):

  +0.14 [+0.02, +0.27], margin 0.58 (HTS-PPO - PPO, 2a Breakout (a)): inside +-0.58, so
      equivalent although it excludes 0. equal: reproduced; higher: not reproduced.
  +0.53 [+0.13, +0.94], margin 0.58: excludes 0 and passes +0.58: different, above.
      equal: not reproduced; higher: reproduced.
  [-0.50, -0.18] and [-0.50, +0.01], margin 0.53: both lie inside +-0.53, so both are
      equivalent, and both low ends are above -0.53: at least, reproduced for both.
      Whether the CI covers 0 does not count; only the low end's side of -margin does.
  -0.52 [-0.79, -0.18], margin 0.53 (1e Breakout 7e-4): different, below; at least:
      inconclusive (the CI straddles -0.53), equal: not reproduced.
  [-8.06, -6.86], margin 1.96: at least: not reproduced (the high end is below -1.96).

Censored runs: a time-to-event run stopped at its cap before the event counts at the cap,
so its arm's mean is only a lower bound. The statistic (A - B or A / B) can then only be
higher where only A has such runs, only lower where only B has, and either where both
have. A verdict is read only where the whole CI lies past the margin on the side the bound
can only push it further to (`stands`); otherwise the claim is inconclusive.

A CI with a non-finite end (no interval) is inconclusive, whatever the claim. A claim
judged in several cells (games, rates, simulator counts) has one verdict only where every
cell has it; otherwise it is "mixed" and names the cells (`overall`).
"""

from __future__ import annotations

import math
from typing import Mapping, NamedTuple

MARGIN_FRACTION = 0.10  # the equivalence margin, relative to the baseline
PROBABILITY_MARGIN = 0.10  # around P(A > B) = 0.5
LABELS = ("equivalent", "different", "inconclusive")
CLAIMS = ("equal", "higher", "lower", "at least", "at most")
REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"


class Comparison(NamedTuple):
  """A statistic of A against B, its 95% CI, the null and the equivalence margin."""

  estimate: float
  low: float
  high: float
  null: float
  margin: float


def difference(
  estimate: float, low: float, high: float, baseline: float, fraction: float = MARGIN_FRACTION
) -> Comparison:
  """mean(A) - mean(B) [low, high]; margin: `fraction` of |mean(B)| (`baseline`)."""
  return Comparison(float(estimate), float(low), float(high), 0.0, fraction * abs(float(baseline)))


def ratio(
  estimate: float, low: float, high: float, fraction: float = MARGIN_FRACTION
) -> Comparison:
  """mean(A) / mean(B) [low, high]; margin: `fraction` around 1."""
  return Comparison(float(estimate), float(low), float(high), 1.0, fraction)


def within_factor(estimate: float, low: float, high: float, factor: float) -> Comparison:
  """mean(A) / mean(B) [low, high] read on the log scale: equal within a factor `factor`
  where the CI lies inside [1 / factor, factor] (a margin symmetric for A faster and B
  faster, where 1 +- fraction is not once the margin is large)."""
  if not factor > 1:
    raise ValueError(f"factor must be above 1, got {factor}.")
  with_logs = [math.log(x) if x > 0 else math.nan for x in (estimate, low, high)]
  return Comparison(*with_logs, 0.0, math.log(factor))


def probability(
  estimate: float, low: float, high: float, margin: float = PROBABILITY_MARGIN
) -> Comparison:
  """P(A > B) [low, high] (`across_games.probability_of_improvement`)."""
  return Comparison(float(estimate), float(low), float(high), 0.5, margin)


def _finite(c: Comparison) -> bool:
  return all(math.isfinite(x) for x in (c.low, c.high, c.margin))


def label(c: Comparison) -> str:
  """'equivalent', 'different' or 'inconclusive', read in that order (the module's rule)."""
  if not _finite(c):
    return "inconclusive"  # no interval: nothing follows
  if c.null - c.margin < c.low and c.high < c.null + c.margin:
    return "equivalent"  # TOST first: a CI inside the margin is never "different"
  if c.low > c.null or c.high < c.null:
    return "different"
  return "inconclusive"


def _bound(c: Comparison, claim: str) -> str:
  """'at least' (non-inferiority) against null - margin, or 'at most' against null + margin."""
  if claim == "at least":
    edge = c.null - c.margin
    shown, refuted = c.low > edge, c.high < edge
  else:
    edge = c.null + c.margin
    shown, refuted = c.high < edge, c.low > edge
  return REPRODUCED if shown else NOT_REPRODUCED if refuted else INCONCLUSIVE


def stands(c: Comparison, censored: tuple[int, int] = (0, 0)) -> bool:
  """Whether a verdict can be read from `c` where `censored` = (A's, B's) runs count at
  their cap, a lower bound of their time (the module's rule)."""
  a, b = censored[0] > 0, censored[1] > 0
  if a and b:
    return False
  if a:
    return c.low > c.null + c.margin
  if b:
    return c.high < c.null - c.margin
  return True


def verdict(claim: str, c: Comparison, censored: tuple[int, int] = (0, 0)) -> str:
  """A claim about A against B (one of CLAIMS), from its CI by the module's rule;
  `censored`: (A's, B's) runs counted at their cap (`stands`)."""
  if claim not in CLAIMS:
    raise ValueError(f"claim must be one of {CLAIMS}, got {claim!r}.")
  if not _finite(c) or not stands(c, censored):
    return INCONCLUSIVE
  if claim in ("at least", "at most"):
    return _bound(c, claim)
  kind = label(c)
  if kind == "equivalent":
    return REPRODUCED if claim == "equal" else NOT_REPRODUCED
  if kind == "inconclusive":
    return INCONCLUSIVE
  above = c.low > c.null
  if claim == "equal":
    return NOT_REPRODUCED
  return REPRODUCED if above == (claim == "higher") else NOT_REPRODUCED


def overall(cells: Mapping[str, str]) -> str:
  """One verdict where every cell has it; else 'mixed: <verdict> at <cells>; ...'."""
  if not cells:
    return INCONCLUSIVE
  found: dict[str, list[str]] = {}
  for cell, v in cells.items():
    found.setdefault(v, []).append(cell)
  if len(found) == 1:
    return next(iter(found))
  return "mixed: " + "; ".join(f"{v} at {', '.join(names)}" for v, names in found.items())


def describe(c: Comparison, digits: int = 2, signed: bool = True) -> str:
  """'+0.14 [+0.02, +0.27], equivalent (margin +-0.58)'."""
  f = f"{{:{'+' if signed else ''}.{digits}f}}".format
  return f"{f(c.estimate)} [{f(c.low)}, {f(c.high)}], {label(c)} (margin +-{c.margin:.{digits}f})"
