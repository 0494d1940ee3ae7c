"""The papers' evaluation protocols as pure functions of evaluation series.

An evaluation series is what `galax.evaluate.periodic` records for one run: for evaluation
e = 0 .. E-1 (one policy each, in training order), the training wall time `times[e]`
(seconds, evaluations excluded) and the returns of its episodes `returns[e]` (10 in the
papers).

* final metric (Colas et al. 2018; Henderson et al. 2018; HTS-RL Sec. 5): the mean over
  the last 100 evaluation episodes = 10 episodes of each of the last 10 policies.
* final time metric (HTS-RL): the final metric of the evaluations done within a training
  time limit (HTS: the time the fastest method needs for its step budget).
* required time metric (HTS-RL): the training time at which the running average of the
  most recent 100 evaluation episodes (10 policies x 10) first reaches a target score;
  `math.inf` if it never does (the papers' '-').
* best-policy table (GALA Table 1): over seeds, the best final policy, evaluated on 10
  episodes, reported as mean +- standard error of those episodes.
* success rate (GALA Fig. 1a): the fraction of runs whose score beats a threshold (GALA:
  50% of the nominal 16-simulator A2C score).
* 95% bootstrap confidence intervals of the mean over seeds (HTS-RL Fig. 5: 10,000
  resamples), by `scipy.stats.bootstrap`; of a difference or ratio of two groups' means,
  each group's seeds resampled separately (`two_sample_ci`).
* Welch t-intervals of a difference or ratio of two groups' means (`welch_ci`): the verdicts'
  interval, which holds its 95% at 3-10 seeds where the percentile bootstrap does not; and
  Student's t-interval of one group's mean (`t_interval`): the report's and the sweep's.

Across games, rliable's metrics (IQM, performance profiles, probability of improvement):
galax/results/across_games.py, on this module's bootstrap (`statistic_ci`).

Windows are counted in policies (evaluations), and the episodes inside a window are
pooled, so an evaluation that lost an episode (`galax.evaluate.periodic` drops unfinished ones)
weighs a little less, as a single long list of episodes would.
"""

from __future__ import annotations

import inspect
import math
from typing import Callable, Sequence

import numpy as np
from scipy import stats

Returns = Sequence[Sequence[float]]  # returns[e] = episode returns of evaluation e
Interval = tuple[np.ndarray, np.ndarray, np.ndarray]  # (estimate, low, high)
# scipy 1.15 renamed bootstrap's `random_state` to `rng` (pyproject allows scipy >= 1.10).
_RNG_ARG = "rng" if "rng" in inspect.signature(stats.bootstrap).parameters else "random_state"
_BATCH_NUMBERS = 1 << 22  # resampled numbers held at once (32 MiB of float64)


def _check(times: Sequence[float] | None, returns: Returns) -> None:
  if times is not None and len(times) != len(returns):
    raise ValueError(f"{len(times)} times for {len(returns)} evaluations.")
  if times is not None and np.any(np.diff(np.asarray(times, float)) < 0):
    raise ValueError("evaluation times must be non-decreasing (training order).")


def _window_mean(returns: Returns, end: int, policies: int) -> float:
  """Mean of the pooled episodes of evaluations end - policies + 1 .. end (clipped at 0)."""
  pooled = [x for r in returns[max(0, end - policies + 1) : end + 1] for x in r]
  return float(np.mean(pooled)) if pooled else float("nan")


def final_metric(returns: Returns, policies: int = 10) -> float:
  """Mean over the episodes of the last `policies` evaluations (all, if fewer exist).

  >>> final_metric([[0, 0], [1, 3], [5, 7]], policies=2)
  4.0
  """
  if policies < 1:
    raise ValueError(f"policies must be >= 1, got {policies}.")
  if not len(returns):
    raise ValueError("final_metric needs at least one evaluation.")
  return _window_mean(returns, len(returns) - 1, policies)


def running_final_metric(returns: Returns, policies: int = 10) -> np.ndarray:
  """The final metric as it stood after each evaluation, [E]."""
  if policies < 1:
    raise ValueError(f"policies must be >= 1, got {policies}.")
  return np.array([_window_mean(returns, e, policies) for e in range(len(returns))])


def final_time_metric(
  times: Sequence[float], returns: Returns, time_limit: float, policies: int = 10
) -> float:
  """The final metric of a run stopped at `time_limit`: over evaluations with time <= limit.

  NaN if no evaluation happened within the limit.
  """
  _check(times, returns)
  within = int(np.searchsorted(np.asarray(times, float), time_limit, side="right"))
  if within == 0:
    return float("nan")
  return final_metric(returns[:within], policies)


def required_time(
  times: Sequence[float], returns: Returns, target: float, policies: int = 10, min_policies: int = 1
) -> float:
  """Training time at which the running final metric first reaches `target`.

  The running metric after evaluation e pools the last `policies` evaluations; it counts
  only once at least `min_policies` evaluations exist (min_policies = policies demands a
  full window of 100 episodes). Returns `math.inf` when the target is never reached.
  """
  _check(times, returns)
  if not 1 <= min_policies:
    raise ValueError(f"min_policies must be >= 1, got {min_policies}.")
  running = running_final_metric(returns, policies)
  for e in range(min_policies - 1, len(returns)):
    if running[e] >= target:
      return float(times[e])
  return math.inf


def mean_and_standard_error(values: Sequence[float]) -> tuple[float, float]:
  """Mean and standard error of the mean, std (ddof=1) / sqrt(n); SE 0 for one value."""
  x = np.asarray(values, float)
  if x.size == 0:
    raise ValueError("mean_and_standard_error needs at least one value.")
  se = float(np.std(x, ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0
  return float(np.mean(x)), se


def best_policy(final_returns: Returns) -> int:
  """Index of the run whose final policy scored the highest mean return (GALA Table 1)."""
  if not len(final_returns):
    raise ValueError("best_policy needs at least one run.")
  means = [np.mean(r) if len(r) else -np.inf for r in final_returns]
  return int(np.argmax(means))


def success_rate(scores: Sequence[float], threshold: float) -> float:
  """Fraction of runs with score > threshold (GALA: 0.5 x the 16-simulator A2C score)."""
  x = np.asarray(scores, float)
  if x.size == 0:
    return float("nan")
  return float(np.mean(x > threshold))


def _check_bootstrap(confidence: float, resamples: int) -> None:
  if not 0.0 < confidence < 1.0:
    raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
  if resamples < 1:
    raise ValueError(f"resamples must be >= 1, got {resamples}.")


def _batch(resamples: int, numbers_per_resample: int) -> int:
  """Resamples per batch so that one batch holds at most _BATCH_NUMBERS numbers."""
  return max(1, min(resamples, _BATCH_NUMBERS // max(1, numbers_per_resample)))


# Below this many seeds a bootstrap "CI" is the mean itself (1 seed) or about [min, max]
# (2 seeds): tables and plots give none.
MIN_SEEDS_FOR_CI = 3


def bootstrap_ci(
  samples: np.ndarray,
  confidence: float = 0.95,
  resamples: int = 10_000,
  seed: int = 0,
  pivotal: bool = False,
) -> Interval:
  """Mean over runs and its bootstrap confidence interval, per point.

  samples: [runs, points] (or [runs]). `scipy.stats.bootstrap` resamples the runs with
  replacement `resamples` times (the same resampled runs for every point; `seed` makes it
  reproducible) and gives the percentile interval, the alpha/2 and 1 - alpha/2 quantiles
  of the resampled means m*, alpha = 1 - confidence. `pivotal=True` gives its 'basic'
  interval [2 m - q(1 - alpha/2), 2 m - q(alpha/2)] (the default of
  facebookincubator/bootstrapped, used by HTS-RL). Where the runs do not vary (one run, or
  equal values) the interval is the mean itself. Returns (mean, low, high).
  """
  _check_bootstrap(confidence, resamples)
  x = np.asarray(samples, float)
  squeeze = x.ndim == 1
  if squeeze:
    x = x[:, None]
  if x.ndim != 2 or x.shape[0] == 0:
    raise ValueError(
      f"bootstrap_ci needs [runs] or [runs, points] with at least one run, "
      f"got shape {np.shape(samples)}."
    )
  mean = x.mean(axis=0)
  low, high = mean.copy(), mean.copy()
  # scipy needs two runs, and its intervals of constant data are rounding (or NaN for BCa).
  spread = np.ptp(x, axis=0) > 0  # False for NaN: the NaN mean stands
  if x.shape[0] > 1 and spread.any():
    varying = x[:, spread]
    result = stats.bootstrap(
      (varying,),
      np.mean,
      n_resamples=resamples,
      axis=0,
      confidence_level=confidence,
      method="basic" if pivotal else "percentile",
      batch=_batch(resamples, varying.size),
      **{_RNG_ARG: np.random.default_rng(seed)},
    )
    low[spread], high[spread] = result.confidence_interval
  if squeeze:
    return mean[0], low[0], high[0]
  return mean, low, high


def statistic_ci(
  samples: list[np.ndarray],
  statistic: Callable[[list[np.ndarray]], np.ndarray],
  confidence: float,
  resamples: int,
  seed: int,
  numbers: int = 0,
) -> Interval:
  """statistic(samples) and its percentile bootstrap CI, each sample's runs (its last axis)
  resampled with replacement on their own (scipy resamples each sample of `data`
  independently). A sample of one run stays as it is; where no sample varies, the interval
  is the estimate itself.

  samples[i]: [..., runs_i]; statistic: the list, each [..., (batch,) runs_i] -> [...].
  numbers: the numbers the statistic holds per resample, if more than the samples'.
  """
  _check_bootstrap(confidence, resamples)
  estimate = np.asarray(statistic(samples), float)
  moving = [i for i, s in enumerate(samples) if s.shape[-1] > 1]
  if not any(np.ptp(samples[i], axis=-1).any() for i in moving):
    return estimate, estimate.copy(), estimate.copy()

  def resampled_statistic(*resampled: np.ndarray, axis: int = -1) -> np.ndarray:
    del axis  # always the last: scipy moves the runs there
    lead = resampled[0].shape[:-1]  # [..., resamples in this batch]
    full = []
    for i, s in enumerate(samples):
      if i in moving:
        full.append(resampled[moving.index(i)])
      else:
        shape = s.shape[:-1] + (1,) * (len(lead) - s.ndim + 1) + s.shape[-1:]
        full.append(np.broadcast_to(s.reshape(shape), lead + s.shape[-1:]))
    return statistic(full)

  numbers = max(numbers, sum(s.size for s in samples))
  result = stats.bootstrap(
    [samples[i] for i in moving],
    resampled_statistic,
    n_resamples=resamples,
    axis=-1,
    confidence_level=confidence,
    method="percentile",
    batch=_batch(resamples, numbers),
    vectorized=True,
    **{_RNG_ARG: np.random.default_rng(seed)},
  )
  low, high = (np.asarray(v, float) for v in result.confidence_interval)
  return estimate, low, high


def two_sample_ci(
  a: Sequence[float],
  b: Sequence[float],
  op: str = "diff",
  confidence: float = 0.95,
  resamples: int = 10_000,
  seed: int = 0,
) -> tuple[float, float, float]:
  """mean(a) - mean(b) (op 'diff') or mean(a) / mean(b) ('ratio') over independent seeds,
  and its percentile bootstrap CI with a's and b's seeds resampled separately.
  Returns (estimate, low, high).
  """
  fn = {"diff": np.subtract, "ratio": np.divide}.get(op)
  if fn is None:
    raise ValueError(f"op must be 'diff' or 'ratio', got {op!r}.")
  x, y = np.asarray(a, float), np.asarray(b, float)
  if x.ndim != 1 or y.ndim != 1 or not x.size or not y.size:
    raise ValueError("two_sample_ci needs two non-empty lists of run scores.")
  est, lo, hi = statistic_ci(
    [x, y], lambda s: fn(s[0].mean(-1), s[1].mean(-1)), confidence, resamples, seed
  )
  return float(est), float(lo), float(hi)


def welch_ci(
  a: Sequence[float] | np.ndarray,
  b: Sequence[float] | np.ndarray,
  op: str = "diff",
  confidence: float = 0.95,
) -> Interval:
  """mean(a) - mean(b) (op 'diff') or mean(a) / mean(b) ('ratio') over independent seeds,
  with a Welch t-interval: fit for the 3-10 seeds a run here has, where the percentile
  bootstrap is too narrow (at 3 seeds a side it covers about 80% where it claims 95%;
  tests/results/test_interval_coverage.py measures both).

  diff: d +- t(df) sqrt(va/na + vb/nb), df by Welch-Satterthwaite. ratio: the same on the
  log of the ratio by the delta method (relative variances va/(na ma^2), exponentiated
  back), defined where both means are positive. Runs are the last axis (leading axes
  broadcast). Where neither group varies the interval is the estimate itself; a group of
  one run, or a ratio of non-positive means, has no interval (NaN ends). Returns
  (estimate, low, high).
  """
  if op not in ("diff", "ratio"):
    raise ValueError(f"op must be 'diff' or 'ratio', got {op!r}.")
  if not 0.0 < confidence < 1.0:
    raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
  x, y = np.asarray(a, float), np.asarray(b, float)
  if x.ndim < 1 or y.ndim < 1 or not x.shape[-1] or not y.shape[-1]:
    raise ValueError("welch_ci needs two non-empty lists of run scores.")
  na, nb = x.shape[-1], y.shape[-1]
  ma, mb = x.mean(-1), y.mean(-1)
  with np.errstate(divide="ignore", invalid="ignore"):
    va = x.var(-1, ddof=1) / na if na > 1 else np.full_like(ma, np.nan)
    vb = y.var(-1, ddof=1) / nb if nb > 1 else np.full_like(mb, np.nan)
    if op == "ratio":
      positive = (ma > 0) & (mb > 0)
      va, vb = np.where(positive, va / ma**2, np.nan), np.where(positive, vb / mb**2, np.nan)
    var = va + vb
    df = var**2 / (va**2 / max(na - 1, 1) + vb**2 / max(nb - 1, 1))
    half = stats.t.ppf(0.5 + confidence / 2, df) * np.sqrt(var)
  half = np.where(var == 0, 0.0, half)  # neither group varies: the estimate itself
  if op == "diff":
    est = ma - mb
    low, high = est - half, est + half
  else:
    with np.errstate(divide="ignore", invalid="ignore"):
      est = ma / mb
      low, high = est * np.exp(-half), est * np.exp(half)
  if np.ndim(est) == 0:
    return float(est), float(low), float(high)
  return est, low, high


def t_interval(samples: Sequence[float] | np.ndarray, confidence: float = 0.95) -> Interval:
  """Mean over runs and its Student t-interval, m +- t(n - 1) s / sqrt(n), per point.

  samples: [runs] or [runs, points], as `bootstrap_ci` takes them. At the 3-10 seeds a run
  here has, the percentile bootstrap's "95%" is about the runs' [min, max] and covers about
  80% (tests/results/test_interval_coverage.py measures both); the t-interval holds 95% for
  normal returns and about 92% for skewed ones. Where the runs do not vary the interval is
  the mean itself; one run has none (NaN ends). Returns (mean, low, high).
  """
  if not 0.0 < confidence < 1.0:
    raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
  x = np.asarray(samples, float)
  if x.ndim not in (1, 2) or x.shape[0] == 0:
    raise ValueError(
      f"t_interval needs [runs] or [runs, points] with at least one run, got shape {x.shape}."
    )
  runs = x.shape[0]
  mean = x.mean(axis=0)
  if runs < 2:
    nan = np.full_like(mean, np.nan)
    return (float(mean), math.nan, math.nan) if x.ndim == 1 else (mean, nan, nan.copy())
  se = x.std(axis=0, ddof=1) / math.sqrt(runs)
  half = stats.t.ppf(0.5 + confidence / 2, runs - 1) * se
  if x.ndim == 1:
    return float(mean), float(mean - half), float(mean + half)
  return mean, mean - half, mean + half


def align_curves(
  xs: Sequence[Sequence[float]], ys: Sequence[Sequence[float]], points: int = 100
) -> tuple[np.ndarray, np.ndarray]:
  """Several runs' curves on one grid, by linear interpolation.

  Returns (grid [points], values [runs, points]). The grid runs from the latest first x
  (every run has started) to the latest last x; a run that ended earlier keeps its last
  value (its final policy stands), e.g. a faster run on a wall-time axis. Curves that
  share their x's exactly are returned as they are.
  """
  xs = [np.asarray(x, float) for x in xs]
  ys = [np.asarray(y, float) for y in ys]
  if not xs or any(len(x) == 0 or len(x) != len(y) for x, y in zip(xs, ys)):
    raise ValueError("align_curves needs non-empty curves with as many x's as y's.")
  if all(len(x) == len(xs[0]) and np.array_equal(x, xs[0]) for x in xs):
    return xs[0], np.stack(ys)
  grid = np.linspace(max(x[0] for x in xs), max(x[-1] for x in xs), points)
  return grid, np.stack([np.interp(grid, x, y) for x, y in zip(xs, ys)])
