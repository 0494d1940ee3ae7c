"""galax/results/verdict.py: labels and verdicts follow from the CI by one rule, including
the three comparisons that docs/results.md once labelled by hand against their CIs."""

import math

import numpy as np
import pytest
from run_helpers import fake_run_record

from experiments import claim_checks
from galax.results import across_games, best
from galax.results import verdict as rule

R, N, I = rule.REPRODUCED, rule.NOT_REPRODUCED, rule.INCONCLUSIVE


def test_equivalence_is_read_before_difference_hts_ppo_stale_breakout_a():
  # Issue 58: stale - PPO, Breakout, Table A6's PPO (PPO 5.81). The CI excludes 0 but lies
  # inside +-0.58: a two one-sided test calls it equivalent, and the old rule, which read
  # "different" first, did not.
  breakout = rule.difference(0.14, 0.02, 0.27, baseline=5.81)
  assert rule.label(breakout) == "equivalent"
  assert rule.verdict("equal", breakout) == "reproduced"
  assert rule.verdict("higher", breakout) == "not reproduced"  # higher by less than the margin
  cells = {
    "Breakout (a)": breakout,
    "SpaceInvaders (a)": rule.difference(1.20, -0.42, 2.78, baseline=23.23),
    "Breakout (b)": rule.difference(-5.61, -26.57, 12.10, baseline=43.49),
    "SpaceInvaders (b)": rule.difference(-10.15, -19.89, 1.40, baseline=130.75),
  }
  summary = rule.overall({k: rule.verdict("equal", c) for k, c in cells.items()})
  assert summary == (
    "mixed: reproduced at Breakout (a); "
    "inconclusive at SpaceInvaders (a), Breakout (b), SpaceInvaders (b)"
  )


def test_a_ci_that_leaves_the_margin_on_one_side_of_the_null_is_different():
  # hts current - PPO, Breakout (a): excludes 0 and passes +0.58.
  c = rule.difference(0.53, 0.13, 0.94, baseline=5.81)
  assert rule.label(c) == "different"
  assert [rule.verdict(k, c) for k in ("equal", "higher", "lower")] == [
    "not reproduced",
    "reproduced",
    "not reproduced",
  ]


@pytest.mark.parametrize("high", [-0.18, 0.01])
def test_at_least_does_not_depend_on_whether_the_ci_covers_the_null(high):
  # Issue 58: [-0.50, -0.18] was "not reproduced" and [-0.50, +0.01] "reproduced" with a
  # margin of 0.53, though only the upper end moved. Both low ends are above -0.53.
  c = rule.difference(-0.3, -0.50, high, baseline=5.3)
  assert c.margin == pytest.approx(0.53)
  assert rule.verdict("at least", c) == "reproduced"


@pytest.mark.parametrize(
  "name, estimate, low, high, baseline",
  [
    ("1e Breakout 7e-4", -0.52, -0.79, -0.18, 5.27),
    ("1f Breakout 7e-4", -0.60, -0.83, -0.29, 5.35),
    ("1c SpaceInvaders 5.5e-3", -40.83, -76.03, -5.63, 97.36),
  ],
)
def test_at_least_is_inconclusive_where_the_ci_straddles_minus_margin(
  name, estimate, low, high, baseline
):
  # Different from 0, but non-inferiority is neither shown nor refuted: the old rule said
  # "not reproduced" because the CI excluded 0.
  c = rule.difference(estimate, low, high, baseline=baseline)
  assert low < -c.margin < high, name
  assert rule.label(c) == "different"
  assert rule.verdict("at least", c) == "inconclusive"


def test_at_least_is_refuted_only_below_minus_margin_and_at_most_mirrors_it():
  def at(lo, hi):
    return rule.difference(0.0, lo, hi, baseline=-10.0)  # margin 1

  assert rule.verdict("at least", at(-3.0, -1.2)) == "not reproduced"
  assert rule.verdict("at least", at(-3.0, -1.0)) == "inconclusive"  # touches -margin
  assert rule.verdict("at least", at(-0.9, 5.0)) == "reproduced"
  assert rule.verdict("at most", at(1.2, 3.0)) == "not reproduced"
  assert rule.verdict("at most", at(-0.2, 3.0)) == "inconclusive"
  assert rule.verdict("at most", at(-5.0, 0.9)) == "reproduced"
  # Monotone: raising only the high end never lowers an "at least" verdict.
  order = {"not reproduced": 0, "inconclusive": 1, "reproduced": 2}
  for low in np.linspace(-3.0, 1.0, 17):
    ranks = [order[rule.verdict("at least", at(low, hi))] for hi in np.linspace(low, 3.0, 17)]
    assert ranks == sorted(ranks), low


def test_gala_fig1a_at_64_simulators_is_different_not_within_noise():
  # GALA - A2C at the best rates, 64 simulators (A2C 40.12): the CI excludes 0.
  at_64 = rule.difference(24.26, 0.50, 48.95, baseline=40.12)
  assert rule.label(at_64) == "different"
  assert rule.verdict("higher", at_64) == "reproduced"
  cells = {
    "32": rule.difference(-5.78, -48.30, 35.14, baseline=96.45),
    "64": at_64,
    "128": rule.difference(-15.57, -41.02, 5.45, baseline=45.58),
    "256": rule.difference(-1.97, -5.93, 2.33, baseline=23.26),
  }
  summary = rule.overall({k: rule.verdict("higher", c) for k, c in cells.items()})
  assert summary == "mixed: inconclusive at 32, 128, 256; reproduced at 64"


def test_paac_time_ratio_at_32_that_includes_1_does_not_reproduce_the_trend():
  # PAAC's required-time ratio n_e = 32 / 16: the CI includes 1.
  at_32 = rule.ratio(0.88, 0.76, 1.01)
  assert rule.label(at_32) == "inconclusive"
  assert rule.verdict("lower", at_32) == "inconclusive"
  trend = {
    "32": rule.verdict("lower", at_32),
    "64": rule.verdict("lower", rule.ratio(0.78, 0.70, 0.86)),
  }
  assert rule.overall(trend) != "reproduced"


@pytest.mark.parametrize(
  "ci, label, verdicts",
  [
    # (low, high) with null 0 and margin 1: equal, higher, lower, at least, at most
    ((-0.5, 0.5), "equivalent", (R, N, N, R, R)),
    ((0.1, 0.3), "equivalent", (R, N, N, R, R)),  # excludes 0, inside the margin
    ((0.1, 1.3), "different", (N, R, N, R, I)),
    ((-3.0, -0.1), "different", (N, N, R, I, R)),
    ((-3.0, -1.1), "different", (N, N, R, N, R)),
    ((-0.5, 4.0), "inconclusive", (I, I, I, R, I)),
    ((-2.0, 4.0), "inconclusive", (I,) * 5),
    ((math.nan, math.nan), "inconclusive", (I,) * 5),
  ],
)
def test_every_claim_follows_from_the_label(ci, label, verdicts):
  c = rule.difference(0.0, *ci, baseline=-10.0)  # margin: 10% of |baseline|
  assert c.margin == pytest.approx(1.0)
  assert rule.label(c) == label
  assert tuple(rule.verdict(claim, c) for claim in rule.CLAIMS) == verdicts


def test_a_baseline_of_zero_leaves_no_room_for_equivalence():
  assert rule.label(rule.difference(0.0, -1e-9, 1e-9, baseline=0.0)) == "inconclusive"
  with pytest.raises(ValueError, match="claim must be one of"):
    rule.verdict("similar", rule.ratio(1.0, 0.95, 1.05))


def test_probability_of_improvement_is_rliables_mann_whitney_mean():
  # Game 1: X = [1, 2, 3] vs Y = [2, 2, 2] wins 1, ties 1, loses 1 of 3 -> 0.5; game 2: 1.
  p, lo, hi = across_games.probability_of_improvement(
    [[1, 2, 3], [5, 6]], [[2, 2, 2], [0, 1]], resamples=500
  )
  assert p == pytest.approx(0.75) and lo <= p <= hi <= 1.0
  assert across_games.probability_of_improvement([[3.0, 4.0]], [[1.0, 2.0]]) == (1.0, 1.0, 1.0)
  with pytest.raises(ValueError, match="1 games of X for 2 games of Y"):
    across_games.probability_of_improvement([[1.0]], [[1.0], [2.0]])


def _run(name, seed, minutes):
  """Evaluations 0, 2, 2 (10 episodes each) at 60 * minutes * (e + 1) s of training."""
  return dict(fake_run_record(name, seed, [0.0, 2.0, 2.0], minutes), steps_per_second=1.0)


@pytest.mark.parametrize(
  "minutes_32, time_verdict",
  [
    ((0.7, 1.3, 0.6), "inconclusive"),  # mean time lower, but the ratio's CI includes 1
    ((0.5, 0.51, 0.5), "reproduced"),
  ],
)
def test_paac_time_trend_is_judged_on_the_ratios_ci(tmp_path, minutes_32, time_verdict):
  runs = [_run("breakout_paac_ne16", s, m) for s, m in enumerate((1.0, 1.2, 0.8))]
  runs += [_run("breakout_paac_ne32", s, m) for s, m in enumerate(minutes_32)]
  data = claim_checks.write_verdict("paac", runs, str(tmp_path), resamples=500)
  checks = data["games"]["breakout"]["checks"]
  assert checks["time_falls"] == time_verdict
  assert checks["finals_equal"] == "reproduced"  # equal returns: a CI of [0, 0]
  text = (tmp_path / "verdict.md").read_text()
  assert f"required time below n_e = 16's: {time_verdict}" in text
  assert "P(A > B) 0.50" in text and "within noise" not in text


def test_diff_cell_labels_by_the_rule():
  assert "inconclusive" in best.diff_cell(np.array([1.0, 3.0]), np.array([2.0, 2.5]))
  assert "**+9.00" in best.diff_cell(np.array([10.0, 11.0]), np.array([1.0, 2.0]))
  same = best.diff_cell(np.array([10.0, 10.1, 9.9]), np.array([10.0, 10.05, 9.95]))
  assert same.endswith("equivalent")


def test_censored_runs_give_a_verdict_only_where_the_bound_cannot_overturn_it():
  """A's runs counted at their cap: A / B is a lower bound, so only a CI wholly above
  1 + margin reads; B's: only a CI wholly below 1 - margin; both: none."""
  above, below, near = (
    rule.ratio(3.1, 2.2, 4.4),
    rule.ratio(0.3, 0.2, 0.4),
    rule.ratio(1, 0.95, 1.05),
  )
  assert rule.verdict("equal", above, censored=(3, 0)) == rule.NOT_REPRODUCED
  assert rule.verdict("lower", above, censored=(3, 0)) == rule.NOT_REPRODUCED
  assert rule.verdict("equal", near, censored=(1, 0)) == rule.INCONCLUSIVE  # equal uncensored
  assert rule.verdict("equal", near) == rule.REPRODUCED
  assert rule.verdict("lower", below, censored=(2, 0)) == rule.INCONCLUSIVE
  assert rule.verdict("lower", below, censored=(0, 2)) == rule.REPRODUCED
  assert rule.verdict("higher", above, censored=(0, 1)) == rule.INCONCLUSIVE
  assert rule.verdict("higher", above, censored=(1, 1)) == rule.INCONCLUSIVE
