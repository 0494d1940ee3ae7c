"""The papers' evaluation metrics against hand-computed series."""

import math

import numpy as np
import pytest

from galax import protocols

# 12 evaluations of 2 episodes each; evaluation e scores e and e + 2 (mean e + 1).
RETURNS = [[e, e + 2] for e in range(12)]
TIMES = [10.0 * (e + 1) for e in range(12)]  # 10 s, 20 s, ..., 120 s


def test_final_metric_is_the_mean_of_the_last_ten_policies():
  # Last 10 evaluations: e = 2..11, means 3..12 -> 7.5.
  assert protocols.final_metric(RETURNS) == pytest.approx(7.5)
  assert protocols.final_metric(RETURNS, policies=2) == pytest.approx(11.5)  # e = 10, 11
  # Fewer evaluations than the window: all of them.
  assert protocols.final_metric(RETURNS[:3]) == pytest.approx(2.0)
  # Episodes are pooled: an evaluation with fewer episodes weighs less.
  assert protocols.final_metric([[0.0], [3.0, 3.0, 3.0]]) == pytest.approx(2.25)


def test_final_metric_of_the_paper_layout():
  # 10 episodes x 12 policies; policy p scores p on every episode.
  returns = [[float(p)] * 10 for p in range(12)]
  assert protocols.final_metric(returns) == pytest.approx(np.mean(range(2, 12)))


def test_running_final_metric():
  running = protocols.running_final_metric(RETURNS, policies=3)
  # After e: mean of evaluations max(0, e-2)..e -> e + 1 - min(e, 2) / 2.
  np.testing.assert_allclose(running, [1, 1.5] + [e for e in range(2, 12)])


def test_final_time_metric():
  # Limit 65 s: evaluations at 10..60 s (e = 0..5); last 10 = all six -> mean of 1..6 = 3.5.
  assert protocols.final_time_metric(TIMES, RETURNS, 65.0) == pytest.approx(3.5)
  # Limit exactly at an evaluation includes it: e = 0..9 -> mean of 1..10.
  assert protocols.final_time_metric(TIMES, RETURNS, 100.0) == pytest.approx(5.5)
  assert protocols.final_time_metric(TIMES, RETURNS, 1e9) == pytest.approx(7.5)
  assert math.isnan(protocols.final_time_metric(TIMES, RETURNS, 5.0))  # nothing evaluated yet


def test_required_time_metric():
  # Running (10-policy) means after e = 0..11: (e + 2) / 2 up to e = 9 (1, 1.5, ..., 5.5),
  # then 6.5 and 7.5. Target 3: reached at e = 4 -> 50 s.
  assert protocols.required_time(TIMES, RETURNS, 3.0) == 50.0
  assert protocols.required_time(TIMES, RETURNS, 1.0) == 10.0  # the first evaluation
  # Target 7: e = 10 has mean 6.5, e = 11 has 7.5 -> 120 s.
  assert protocols.required_time(TIMES, RETURNS, 7.0) == 120.0
  # Never reached: inf (the papers' '-').
  assert protocols.required_time(TIMES, RETURNS, 8.0) == math.inf
  assert protocols.required_time([], [], 0.0) == math.inf
  # A full window demanded: the first eligible evaluation is e = 9 (mean 5.5).
  assert protocols.required_time(TIMES, RETURNS, 1.0, min_policies=10) == 100.0


def test_required_time_uses_the_running_mean_not_a_single_lucky_policy():
  returns = [[0.0] * 10, [100.0] * 10, [0.0] * 10, [0.0] * 10]
  times = [1.0, 2.0, 3.0, 4.0]
  # One policy scoring 100 lifts the 10-policy running mean to 50, not 100.
  assert protocols.required_time(times, returns, 60.0) == math.inf
  assert protocols.required_time(times, returns, 50.0) == 2.0
  assert protocols.required_time(times, returns, 60.0, policies=1) == 2.0


def test_series_checks():
  with pytest.raises(ValueError, match="2 times for 3 evaluations"):
    protocols.required_time([1.0, 2.0], [[1], [2], [3]], 0.0)
  with pytest.raises(ValueError, match="non-decreasing"):
    protocols.final_time_metric([2.0, 1.0], [[1], [2]], 5.0)
  with pytest.raises(ValueError, match="at least one evaluation"):
    protocols.final_metric([])


def test_mean_and_standard_error():
  # [1, 2, 3, 4]: mean 2.5, sample std sqrt(5/3), s.e. sqrt(5/3) / 2.
  mean, se = protocols.mean_and_standard_error([1, 2, 3, 4])
  assert mean == 2.5 and se == pytest.approx(math.sqrt(5 / 3) / 2)
  assert protocols.mean_and_standard_error([7.0]) == (7.0, 0.0)


def test_best_policy_and_success_rate():
  finals = [[1, 1, 1], [5, 0, 4], [2, 2, 2]]  # means 1, 3, 2
  assert protocols.best_policy(finals) == 1
  # GALA: success if the score beats half of the nominal score (here 10 -> 5).
  assert protocols.success_rate([4.0, 5.0, 6.0, 12.0], 0.5 * 10) == 0.5
  assert math.isnan(protocols.success_rate([], 1.0))


def test_bootstrap_ci():
  # Identical runs: no uncertainty.
  mean, lo, hi = protocols.bootstrap_ci(np.full((5, 3), 2.0), resamples=200)
  np.testing.assert_allclose([mean, lo, hi], 2.0)
  # Two runs 0 and 10: resampled means are 0, 5 or 10 (prob. 1/4, 1/2, 1/4), so the 95%
  # percentile interval is [0, 10] and the mean 5.
  mean, lo, hi = protocols.bootstrap_ci(np.array([0.0, 10.0]), resamples=4000)
  assert (mean, lo, hi) == (5.0, 0.0, 10.0)
  # The interval narrows with more runs and holds the mean; the pivotal one mirrors it.
  x = np.random.default_rng(0).normal(3.0, 1.0, size=(40, 1))
  m, lo, hi = protocols.bootstrap_ci(x, resamples=2000)
  assert lo[0] < m[0] < hi[0] and hi[0] - lo[0] < 1.0
  _, plo, phi = protocols.bootstrap_ci(x, resamples=2000, pivotal=True)
  np.testing.assert_allclose([plo[0], phi[0]], [2 * m[0] - hi[0], 2 * m[0] - lo[0]])


def test_align_curves():
  grid, values = protocols.align_curves([[0, 1, 2], [0, 1, 2]], [[1, 2, 3], [3, 4, 5]])
  np.testing.assert_array_equal(grid, [0, 1, 2])
  np.testing.assert_array_equal(values, [[1, 2, 3], [3, 4, 5]])
  # The second run ended at x = 2: it keeps its last value up to x = 4.
  grid, values = protocols.align_curves([[0, 4], [1, 2]], [[0, 4], [10, 20]], points=4)
  np.testing.assert_allclose(grid, [1, 2, 3, 4])
  np.testing.assert_allclose(values, [[1, 2, 3, 4], [10, 20, 20, 20]])
