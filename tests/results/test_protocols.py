"""The papers' evaluation metrics against hand-computed series."""

import math

import numpy as np
import pytest

from galax.results import across_games
from galax.results import paper_protocols as protocols

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


def _one_line_error(fn, match):
  with pytest.raises(ValueError, match=match) as error:
    fn()
  assert "\n" not in str(error.value)


def test_bootstrap_ci_edge_cases_and_seed():
  # One run: nothing to resample, the interval is the run itself.
  assert protocols.bootstrap_ci(np.array([3.5])) == (3.5, 3.5, 3.5)
  # A point where all runs agree is exact; the others get an interval around their mean.
  x = np.array([[1.0, 0.0], [1.0, 4.0], [1.0, 2.0], [1.0, 7.0]])
  mean, lo, hi = protocols.bootstrap_ci(x, resamples=1000)
  assert (mean[0], lo[0], hi[0]) == (1.0, 1.0, 1.0)
  assert lo[1] < mean[1] == 3.25 < hi[1]
  # A seed reproduces the interval; another seed draws other resamples.
  y = np.random.default_rng(0).normal(size=(6, 3))
  first = np.stack(protocols.bootstrap_ci(y, resamples=200, seed=3))
  np.testing.assert_array_equal(np.stack(protocols.bootstrap_ci(y, resamples=200, seed=3)), first)
  assert np.all(np.stack(protocols.bootstrap_ci(y, resamples=200, seed=4))[1:] != first[1:])
  _one_line_error(lambda: protocols.bootstrap_ci(np.zeros(0)), "at least one run")
  _one_line_error(lambda: protocols.bootstrap_ci(np.zeros((2, 2, 2))), "shape")
  _one_line_error(lambda: protocols.bootstrap_ci([1.0, 2.0], confidence=95), "confidence")


def test_normalize_scores():
  # Game 0: low 0, high 10; game 1: low -21 (Pong's random), high 21 (a perfect game).
  out = across_games.normalize_scores([[0.0, 5.0, 10.0], [-21.0, 0.0]], [0.0, -21.0], [10.0, 21.0])
  np.testing.assert_allclose(out[0], [0.0, 0.5, 1.0])
  np.testing.assert_allclose(out[1], [0.0, 0.5])


def test_aggregate_statistics_reject_bad_input():
  iqm = across_games.aggregate_iqm
  _one_line_error(lambda: iqm([], [], []), "at least one game")
  _one_line_error(lambda: iqm([[1.0], []], [0, 0], [1, 1]), "game 1: scores must be")
  _one_line_error(lambda: iqm([[1.0], [2.0]], [0.0], [1.0, 1.0]), "1 low and 2 high scores for 2")
  _one_line_error(lambda: iqm([[1.0], [2.0]], [0, 3.0], [1, 3.0]), "game 1: high == low == 3")
  _one_line_error(lambda: iqm([[1.0, np.nan]], [0], [1]), "finite run scores")
  _one_line_error(lambda: iqm([[[1.0, 2.0]]], [0], [1]), "game 0: scores must be")
  _one_line_error(lambda: across_games.interquartile_mean([]), "at least one value")
  profile = lambda taus: across_games.performance_profile([[1.0]], [0], [1], taus)
  _one_line_error(lambda: profile([]), "taus must be")
  _one_line_error(lambda: profile([[0.5]]), "taus must be")


def test_interquartile_mean_hand_computed():
  # 8 values 0, 1, 2, 3, 4, 5, 7, 100: drop 2 at each end -> mean(2, 3, 4, 5) = 3.5 (the
  # mean is 15.25, the median 3.5 too: the next case tells them apart).
  assert across_games.interquartile_mean([[0, 100], [1, 2], [3, 4], [5, 7]]) == 3.5
  # 5 values: floor(5 / 4) = 1 dropped at each end -> mean(2, 3, 10) = 5 (median 3).
  assert across_games.interquartile_mean([1, 2, 3, 10, 100]) == 5.0
  # Fewer than 4 values: nothing dropped.
  assert across_games.interquartile_mean([1, 2, 9]) == 4.0


def test_aggregate_iqm_hand_computed():
  # Normalised: game 0 (low 0, high 4) 0.25, 0.5, 0.75, 1; game 1 (low 0, high 30)
  # 1/3, 2/3, 1; game 2 (low 0, high 10) 0.5. Pooled and sorted: 0.25, 1/3, 0.5, 0.5, 2/3,
  # 0.75, 1, 1 -> IQM = mean(0.5, 0.5, 2/3, 0.75) = 29/48.
  scores = [[1, 2, 3, 4], [10, 20, 30], [5]]
  iqm, lo, hi = across_games.aggregate_iqm(scores, [0, 0, 0], [4, 30, 10], resamples=2000)
  assert iqm == pytest.approx(29 / 48)
  assert lo < iqm < hi and 0.25 <= lo and hi <= 1.0
  # A seed reproduces the interval; another seed draws other resamples.
  noisy = np.random.default_rng(0).normal(size=(3, 6))
  ci = lambda seed: across_games.aggregate_iqm(
    noisy, [0, 0, 0], [1, 1, 1], resamples=200, seed=seed
  )
  assert ci(3) == ci(3) and ci(3)[1:] != ci(4)[1:] and ci(3)[0] == ci(4)[0]
  # One run per game: nothing to resample.
  assert across_games.aggregate_iqm([[1.0], [3.0]], [0, 0], [2, 2]) == (1.0, 1.0, 1.0)


def test_aggregate_iqm_bootstrap_is_stratified():
  # Game 0's runs all score 0, game 1's all 1 (normalised). Resampling runs within each
  # game always gives two 0s and two 1s (IQM 0.5): the interval is the point. Resampling the
  # pooled runs would mix the games (e.g. four 0s) and give a wide interval.
  assert across_games.aggregate_iqm([[0, 0], [1, 1]], [0, 0], [1, 1]) == (0.5, 0.5, 0.5)
  # Game 0 runs 0 and 1, game 1 one run at 0.5 (it stays): resampled means (no trimming
  # with 3 values) 1/6, 1/2, 5/6 with probabilities 1/4, 1/2, 1/4 -> 95% CI [1/6, 5/6].
  iqm, lo, hi = across_games.aggregate_iqm([[0, 1], [0.5]], [0, 0], [1, 1], resamples=4000)
  assert (iqm, lo, hi) == pytest.approx((0.5, 1 / 6, 5 / 6))


def test_performance_profile_hand_computed():
  # Normalised scores as in test_aggregate_iqm_hand_computed: 0.25, 1/3, 0.5, 0.5, 2/3, 0.75,
  # 1, 1. Fraction above tau: 8/8 at 0, 7/8 at 0.3, 4/8 at 0.5 (strictly above), 2/8 at
  # 0.9, 0 at 1.
  scores = [[1, 2, 3, 4], [10, 20, 30], [5]]
  taus = [0.0, 0.3, 0.5, 0.9, 1.0]
  frac, lo, hi = across_games.performance_profile(
    scores, [0, 0, 0], [4, 30, 10], taus, resamples=2000
  )
  np.testing.assert_allclose(frac, [1.0, 7 / 8, 4 / 8, 2 / 8, 0.0])
  assert np.all(lo <= frac) and np.all(frac <= hi) and np.all(hi - lo <= 1.0)
  assert lo[2] < frac[2] < hi[2]  # the runs vary about tau = 0.5
  assert (lo[0], hi[0], lo[-1], hi[-1]) == (1.0, 1.0, 0.0, 0.0)  # every resample agrees
  assert np.all(np.diff(lo) <= 0) and np.all(np.diff(hi) <= 0)  # the same resamples per tau
  again = across_games.performance_profile(scores, [0, 0, 0], [4, 30, 10], taus, resamples=2000)
  np.testing.assert_array_equal(np.stack(again), np.stack((frac, lo, hi)))
  # Game-wise normalisation: a raw 5 is 0.5 of game 0's range [0, 10] and 0 of game 1's
  # [5, 6]: one of the two runs is above tau = 0.25.
  frac, _, _ = across_games.performance_profile([[5.0], [5.0]], [0, 5], [10, 6], [0.25])
  np.testing.assert_array_equal(frac, [0.5])
