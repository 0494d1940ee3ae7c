"""The papers' evaluation protocols as pure functions of evaluation series.

An evaluation series is what `galax.evaluation` records for one run: for evaluation
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
  resamples).

Windows are counted in policies (evaluations), and the episodes inside a window are
pooled, so an evaluation that lost an episode (`galax.evaluation` drops unfinished ones)
weighs a little less, as a single long list of episodes would.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

Returns = Sequence[Sequence[float]]  # returns[e] = episode returns of evaluation e


def _check(times: Sequence[float] | None, returns: Returns) -> None:
  if times is not None and len(times) != len(returns):
    raise ValueError(f"{len(times)} times for {len(returns)} evaluations.")
  if times is not None and np.any(np.diff(np.asarray(times, float)) < 0):
    raise ValueError("evaluation times must be non-decreasing (training order).")


def _window_mean(returns: Returns, end: int, policies: int) -> float:
  """Mean of the pooled episodes of evaluations end - policies + 1 .. end (clipped at 0)."""
  pooled = [x for r in returns[max(0, end - policies + 1):end + 1] for x in r]
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


def final_time_metric(times: Sequence[float], returns: Returns, time_limit: float,
                      policies: int = 10) -> float:
  """The final metric of a run stopped at `time_limit`: over evaluations with time <= limit.

  NaN if no evaluation happened within the limit.
  """
  _check(times, returns)
  within = int(np.searchsorted(np.asarray(times, float), time_limit, side="right"))
  if within == 0:
    return float("nan")
  return final_metric(returns[:within], policies)


def required_time(times: Sequence[float], returns: Returns, target: float,
                  policies: int = 10, min_policies: int = 1) -> float:
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


def bootstrap_ci(samples: np.ndarray, confidence: float = 0.95, resamples: int = 10_000,
                 seed: int = 0, pivotal: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Mean over runs and its bootstrap confidence interval, per point.

  samples: [runs, points] (or [runs]). Runs are resampled with replacement `resamples`
  times. Percentile interval by default; `pivotal=True` gives 2 * mean - percentiles (the
  default of facebookincubator/bootstrapped, used by HTS-RL). Returns (mean, low, high).
  """
  x = np.asarray(samples, float)
  squeeze = x.ndim == 1
  if squeeze:
    x = x[:, None]
  if x.shape[0] == 0:
    raise ValueError("bootstrap_ci needs at least one run.")
  rng = np.random.default_rng(seed)
  idx = rng.integers(0, x.shape[0], size=(resamples, x.shape[0]))
  means = x[idx].mean(axis=1)  # [resamples, points]
  mean = x.mean(axis=0)
  tail = (1.0 - confidence) / 2 * 100
  low, high = np.percentile(means, [tail, 100 - tail], axis=0)
  if pivotal:
    low, high = 2 * mean - high, 2 * mean - low
  if squeeze:
    return mean[0], low[0], high[0]
  return mean, low, high


def align_curves(xs: Sequence[Sequence[float]], ys: Sequence[Sequence[float]],
                 points: int = 100) -> tuple[np.ndarray, np.ndarray]:
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
