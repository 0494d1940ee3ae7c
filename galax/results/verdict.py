"""Verdict labels from confidence intervals: one rule, in code, for every comparison.

A comparison of a variant A with a baseline B is a statistic and its 95% CI: a difference
of means (null 0), a ratio of means (null 1) or a probability of improvement (null 0.5).
Its label:

  different      the CI excludes the null;
  equivalent     the CI includes the null and lies strictly inside null +- margin;
  inconclusive   otherwise: the CI includes the null and reaches past the margin.

"different" is read first: a CI that excludes the null is never called equal, however
small the difference. The margin is fixed before any result is read (MARGIN_FRACTION):
10% of the baseline's mean score for a difference (so a baseline scoring 0 has no
equivalence), 10% around 1 for a ratio, 0.1 around 0.5 for a probability. With the one
95% CI, "equivalent" is a two one-sided test (TOST) at 2.5% on each side.

A claim's verdict follows from the label and the side of the null the CI lies on:

  claim      different, above   different, below   CI includes the null
  equal      not reproduced     not reproduced     equivalent: reproduced, else inconclusive
  higher     reproduced         not reproduced     equivalent: not reproduced, else inconclusive
  lower      not reproduced     reproduced         equivalent: not reproduced, else inconclusive
  at least   reproduced         not reproduced     low end above null - margin (no worse by
                                                   more than the margin): reproduced, else
                                                   inconclusive

A claim judged in several cells (games, rates, simulator counts) has one verdict only
where every cell has it; otherwise it is "mixed" and names the cells (`overall`).
"""

from __future__ import annotations

import math
from typing import Mapping, NamedTuple

MARGIN_FRACTION = 0.10  # the equivalence margin, relative to the baseline
PROBABILITY_MARGIN = 0.10  # around P(A > B) = 0.5
LABELS = ("equivalent", "different", "inconclusive")
CLAIMS = ("equal", "higher", "lower", "at least")
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


def probability(
  estimate: float, low: float, high: float, margin: float = PROBABILITY_MARGIN
) -> Comparison:
  """P(A > B) [low, high] (`across_games.probability_of_improvement`)."""
  return Comparison(float(estimate), float(low), float(high), 0.5, margin)


def _finite(c: Comparison) -> bool:
  return all(math.isfinite(x) for x in (c.low, c.high, c.margin))


def label(c: Comparison) -> str:
  """'different', 'equivalent' or 'inconclusive' (the module's rule)."""
  if not _finite(c):
    return "inconclusive"  # no interval: nothing follows
  if c.low > c.null or c.high < c.null:
    return "different"
  if c.null - c.margin < c.low and c.high < c.null + c.margin:
    return "equivalent"
  return "inconclusive"


def verdict(claim: str, c: Comparison) -> str:
  """A claim about A against B ('equal', 'higher', 'lower', 'at least'), from its CI."""
  if claim not in CLAIMS:
    raise ValueError(f"claim must be one of {CLAIMS}, got {claim!r}.")
  kind = label(c)
  if kind == "different":
    above = c.low > c.null
    if claim == "equal":
      return NOT_REPRODUCED
    return REPRODUCED if above == (claim in ("higher", "at least")) else NOT_REPRODUCED
  if claim == "at least":
    return REPRODUCED if _finite(c) and c.low > c.null - c.margin else INCONCLUSIVE
  if kind == "equivalent":
    return REPRODUCED if claim == "equal" else NOT_REPRODUCED
  return INCONCLUSIVE


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
  """'+0.14 [+0.02, +0.27], different (margin +-0.58)'."""
  f = f"{{:{'+' if signed else ''}.{digits}f}}".format
  return f"{f(c.estimate)} [{f(c.low)}, {f(c.high)}], {label(c)} (margin +-{c.margin:.{digits}f})"
