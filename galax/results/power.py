"""The power of a registered claim: how often its rule reads each verdict at its seeds.

A registration fixes the claim (galax/results/verdict.py's CLAIMS), the statistic (a
difference or a ratio of means over seeds, `paper_protocols.welch_ci`), the margin and the
number of seeds an arm. Its power is the probability that the rule reads "reproduced"
when a stated true effect holds; its mirror is the probability of "not reproduced" when
the claim is false. Neither has a closed form here (Welch's df, TOST, the "at least"
bound), so both are simulated through the very functions the verdicts use:

  for each of `draws` experiments:  a_i ~ F(mean_a, sd_a), i < n_a;  b_j ~ F(mean_b, sd_b)
      c = welch_ci(a, b, op);  outcome = verdict(claim, c)
  P(outcome) = count / draws

F is normal for a difference (final returns) and log-normal with the stated mean and
standard deviation for a ratio (times to an event: positive and right-skewed, and the
ratio's CI is Welch's on the log scale). The margin is the registration's: `fraction` of
each draw's |mean(b)| for a difference, `fraction` around 1 for a ratio. The spread is
read from kept runs, so a power is only as good as a 3-seed standard deviation; the
Monte-Carlo error of a probability p is sqrt(p (1 - p) / draws), at most 0.004 at 20,000.
Draws come from a seeded numpy Generator: the same arguments give the same figures.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from galax.results import verdict as rule
from galax.results.paper_protocols import welch_ci

DRAWS = 20_000


def _draws(
  rng: np.random.Generator, mean: float, sd: float, n: int, draws: int, op: str
) -> np.ndarray:
  """[draws, n] run scores: normal for 'diff', log-normal with this mean and sd for 'ratio'."""
  if op == "diff":
    return rng.normal(mean, sd, size=(draws, n))
  if mean <= 0:
    raise ValueError(f"a ratio's runs need a positive mean, got {mean}.")
  sigma2 = np.log1p((sd / mean) ** 2)  # log-normal moments: E = exp(mu + s2/2)
  return rng.lognormal(np.log(mean) - sigma2 / 2, np.sqrt(sigma2), size=(draws, n))


def outcome_rates(
  claim: str,
  op: str,
  mean_a: float,
  sd_a: float,
  mean_b: float,
  sd_b: float,
  seeds: tuple[int, int] = (3, 3),
  fraction: float = rule.MARGIN_FRACTION,
  draws: int = DRAWS,
  seed: int = 0,
  factor: float | None = None,
) -> dict[str, float]:
  """P(verdict) of `claim` about A against B (op 'diff' or 'ratio') where A's runs score
  mean_a +- sd_a and B's mean_b +- sd_b, at `seeds` = (n_a, n_b) runs an arm, by the
  registered rule with margin `fraction` (the module's docstring); a ratio with `factor`
  is read within that factor instead (`verdict.within_factor`)."""
  if op not in ("diff", "ratio"):
    raise ValueError(f"op must be 'diff' or 'ratio', got {op!r}.")
  if factor is not None and op != "ratio":
    raise ValueError("a margin by factor is for a ratio (op 'ratio').")
  if min(seeds) < 2:
    raise ValueError(f"a Welch interval needs 2 or more runs an arm, got {seeds}.")
  rng = np.random.default_rng(seed)
  a = _draws(rng, mean_a, sd_a, seeds[0], draws, op)
  b = _draws(rng, mean_b, sd_b, seeds[1], draws, op)
  estimates, lows, highs = welch_ci(a, b, op)
  counts = dict.fromkeys((rule.REPRODUCED, rule.NOT_REPRODUCED, rule.INCONCLUSIVE), 0)
  for i in range(draws):
    if op == "diff":
      c = rule.difference(estimates[i], lows[i], highs[i], b[i].mean(), fraction)
    elif factor is not None:
      c = rule.within_factor(estimates[i], lows[i], highs[i], factor)
    else:
      c = rule.ratio(estimates[i], lows[i], highs[i], fraction)
    counts[rule.verdict(claim, c)] += 1
  return {k: v / draws for k, v in counts.items()}


def power(claim: str, op: str, *args, **kwargs) -> float:
  """P("reproduced"): `outcome_rates`'s first figure."""
  return outcome_rates(claim, op, *args, **kwargs)[rule.REPRODUCED]


def smallest_factor(
  claim: str,
  mean_a: float,
  sd_a: float,
  mean_b: float,
  sd_b: float,
  seeds: tuple[int, int],
  target: float = 0.8,
  factors: Sequence[float] = tuple(np.round(np.arange(1.1, 4.001, 0.05), 2)),
  draws: int = DRAWS,
  seed: int = 0,
) -> tuple[float, float] | None:
  """The first factor of `factors` (ascending) within which `claim` about a ratio reads
  "reproduced" with probability >= `target`, and that probability; None where none does."""
  for factor in factors:
    rates = outcome_rates(
      claim, "ratio", mean_a, sd_a, mean_b, sd_b, seeds, draws=draws, seed=seed, factor=factor
    )
    if rates[rule.REPRODUCED] >= target:
      return float(factor), rates[rule.REPRODUCED]
  return None


def smallest_seeds(
  claim: str, op: str, *args, target: float = 0.8, counts: Sequence[int] = (3, 5, 10), **kwargs
) -> tuple[int, float] | None:
  """The first seed count of `counts` (ascending, the same an arm) at which `claim` reads
  "reproduced" with probability >= `target`, and that probability; None where none does."""
  for n in counts:
    p = power(claim, op, *args, seeds=(n, n), **kwargs)
    if p >= target:
      return n, p
  return None


def spread(values: Sequence[float]) -> tuple[float, float]:
  """(mean, sample sd) of kept runs' figures."""
  x = np.asarray(values, float)
  if x.size < 2:
    raise ValueError(f"a spread needs 2 or more runs, got {x.size}.")
  return float(x.mean()), float(x.std(ddof=1))


def describe(rates: Mapping[str, float]) -> str:
  """'reproduced 0.12, not reproduced 0.01, inconclusive 0.87'."""
  return ", ".join(f"{k} {v:.2f}" for k, v in rates.items())
