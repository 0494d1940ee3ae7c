"""Metrics across games (Agarwal et al. 2021, "Deep RL at the edge of the statistical
precipice", as its rliable library defines them), on scores normalised per game g,

    s' = (s - low_g) / (high_g - low_g)        (low, high: e.g. random and reference scores),

* interquartile mean (IQM): the mean of the middle 50% of all runs x games normalised
  scores, with a stratified bootstrap CI (each game's runs resampled on their own);
* performance profile: the fraction of runs x games with normalised score > tau, over a
  grid of tau, with the same bootstrap's pointwise CIs;
* probability of improvement P(X > Y): the chance that a run of X beats a run of Y on a
  game, averaged over games, with the same stratified bootstrap (`probability_of_improvement`).

rliable's definitions, computed with scipy (rliable itself would add arch, pandas and
seaborn to galax's dependencies). `galax.results.verdict` labels the comparisons.

`galax.results.aggregate` puts them in a report; each bootstrap is
`paper_protocols.statistic_ci`'s, stratified by game.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from scipy import stats

from galax.results.paper_protocols import Interval, statistic_ci

GameScores = Sequence[Sequence[float]]  # scores[g] = the runs' scores on game g


def normalize_scores(
  scores: GameScores, low: Sequence[float], high: Sequence[float]
) -> list[np.ndarray]:
  """Per game g, its runs' scores as (s - low[g]) / (high[g] - low[g]).

  0 is a score of `low` (e.g. a random policy's), 1 one of `high` (e.g. a reference or
  human score). scores[g]: the runs of game g (games may have different numbers of runs).
  """
  if not len(scores):
    raise ValueError("normalize_scores needs at least one game.")
  lo, hi = np.asarray(low, float), np.asarray(high, float)
  if lo.shape != (len(scores),) or hi.shape != (len(scores),):
    raise ValueError(f"{lo.size} low and {hi.size} high scores for {len(scores)} games.")
  if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
    raise ValueError("low and high scores must be finite.")
  out = []
  for g, game in enumerate(scores):
    x = np.asarray(game, float)
    if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
      raise ValueError(f"game {g}: scores must be a non-empty list of finite run scores.")
    if hi[g] == lo[g]:
      raise ValueError(f"game {g}: high == low == {lo[g]:g}; normalising needs high != low.")
    out.append((x - lo[g]) / (hi[g] - lo[g]))
  return out


def interquartile_mean(values: np.ndarray) -> float:
  """IQM: the mean of the middle 50% of all values (every axis pooled), rliable's
  trim_mean(x, 0.25): of n sorted values, floor(n / 4) are dropped at each end (none for
  n < 4).

  >>> interquartile_mean([[0, 100], [1, 2], [3, 4], [5, 7]])
  3.5
  """
  x = np.asarray(values, float)
  if x.size == 0:
    raise ValueError("interquartile_mean needs at least one value.")
  return float(stats.trim_mean(x, 0.25, axis=None))


def _stratified_bootstrap(
  games: list[np.ndarray],
  pooled: Callable[[np.ndarray], np.ndarray],
  confidence: float,
  resamples: int,
  seed: int,
) -> Interval:
  """pooled(all runs x games) and its CI, each game's runs resampled on their own.

  games[g]: [..., runs_g]; pooled: [..., N] -> [...].
  """
  return statistic_ci(
    games, lambda gs: pooled(np.concatenate(gs, axis=-1)), confidence, resamples, seed
  )


def probability_of_improvement(
  x: GameScores, y: GameScores, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
  """P(X > Y) as rliable defines it: per game g the Mann-Whitney probability that a run of
  X beats a run of Y (a tie counts half),

      P_g = (1 / (N_g M_g)) sum_i sum_j [1(x_gi > y_gj) + 0.5 * 1(x_gi = y_gj)],

  averaged over games, with a stratified bootstrap CI (each game's runs of X and of Y
  resampled on their own). x[g], y[g]: the runs' scores on game g. Returns (p, low, high).
  """
  if not len(x) or len(x) != len(y):
    raise ValueError(f"{len(x)} games of X for {len(y)} games of Y (need the same, >= 1).")
  samples = [np.asarray(s, float) for pair in zip(x, y) for s in pair]
  if any(s.ndim != 1 or not s.size for s in samples):
    raise ValueError("every game needs a non-empty list of run scores for X and for Y.")

  def statistic(s: list[np.ndarray]) -> np.ndarray:
    per_game = []
    for xs, ys in zip(s[::2], s[1::2]):
      a, b = xs[..., :, None], ys[..., None, :]
      per_game.append(((a > b) + 0.5 * (a == b)).mean(axis=(-2, -1)))
    return np.mean(per_game, axis=0)

  pairs = sum(a.size * b.size for a, b in zip(samples[::2], samples[1::2]))
  p, lo, hi = statistic_ci(samples, statistic, confidence, resamples, seed, numbers=2 * pairs)
  return float(p), float(lo), float(hi)


def aggregate_iqm(
  scores: GameScores,
  low: Sequence[float],
  high: Sequence[float],
  confidence: float = 0.95,
  resamples: int = 10_000,
  seed: int = 0,
) -> tuple[float, float, float]:
  """IQM of all runs x games normalised scores (`normalize_scores`), and its stratified
  bootstrap confidence interval (percentile; runs resampled within each game).

  Games with more runs weigh more, as in the pooled IQM. Returns (iqm, low, high).
  """
  games = normalize_scores(scores, low, high)
  pooled = lambda x: stats.trim_mean(x, 0.25, axis=-1)
  iqm, lo, hi = _stratified_bootstrap(games, pooled, confidence, resamples, seed)
  return float(iqm), float(lo), float(hi)


def performance_profile(
  scores: GameScores,
  low: Sequence[float],
  high: Sequence[float],
  taus: Sequence[float],
  confidence: float = 0.95,
  resamples: int = 10_000,
  seed: int = 0,
) -> Interval:
  """The run-score distribution: for each tau, the fraction of runs x games whose
  normalised score (`normalize_scores`) is > tau,

      P(tau) = (1 / N) sum_g sum_r 1[s'_{g,r} > tau],

  with pointwise stratified bootstrap CIs (the same resamples for every tau). Returns
  (fractions, low, high), each [len(taus)].
  """
  tau = np.asarray(taus, float)
  if tau.ndim != 1 or tau.size == 0 or not np.all(np.isfinite(tau)):
    raise ValueError("taus must be a non-empty list of finite thresholds.")
  games = [
    (g[None, :] > tau[:, None]).astype(float)  # [taus, runs_g]
    for g in normalize_scores(scores, low, high)
  ]
  return _stratified_bootstrap(games, lambda x: x.mean(axis=-1), confidence, resamples, seed)
