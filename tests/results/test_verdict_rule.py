"""galax/results/verdict.py: labels and verdicts follow from the CI by one rule, including
the three comparisons that docs/results.md once labelled by hand against their CIs."""

import json
import math

import numpy as np
import pytest

from experiments import claim_checks, gala_best
from galax.results import across_games
from galax.results import verdict as rule


def test_hts_ppo_stale_on_breakout_at_table_a6_is_different_not_within_noise():
  # stale - PPO, Breakout, Table A6's PPO (PPO 5.81): the CI excludes 0.
  breakout = rule.difference(0.14, 0.02, 0.27, baseline=5.81)
  assert rule.label(breakout) == "different"
  assert rule.verdict("equal", breakout) == "not reproduced"
  # The four cells once summarised as "within noise in all four": not one verdict.
  cells = {
    "Breakout (a)": breakout,
    "SpaceInvaders (a)": rule.difference(1.20, -0.42, 2.78, baseline=23.23),
    "Breakout (b)": rule.difference(-5.61, -26.57, 12.10, baseline=43.49),
    "SpaceInvaders (b)": rule.difference(-10.15, -19.89, 1.40, baseline=130.75),
  }
  summary = rule.overall({k: rule.verdict("equal", c) for k, c in cells.items()})
  assert summary.startswith("mixed: ") and "not reproduced at Breakout (a)" in summary


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
    # (low, high) with null 0 and margin 1: equal, higher, lower, at least
    ((-0.5, 0.5), "equivalent", ("reproduced", "not reproduced", "not reproduced", "reproduced")),
    ((0.1, 0.3), "different", ("not reproduced", "reproduced", "not reproduced", "reproduced")),
    (
      (-3.0, -0.1),
      "different",
      ("not reproduced", "not reproduced", "reproduced", "not reproduced"),
    ),
    ((-0.5, 4.0), "inconclusive", ("inconclusive", "inconclusive", "inconclusive", "reproduced")),
    ((-2.0, 4.0), "inconclusive", ("inconclusive",) * 4),
    ((math.nan, math.nan), "inconclusive", ("inconclusive",) * 4),
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
  evaluations = [
    dict(env_steps=320 * (e + 1), train_time_s=10.0 + 60.0 * minutes * (e + 1), returns=[v] * 10)
    for e, v in enumerate([0.0, 2.0, 2.0])
  ]
  return dict(
    kind="galax-run",
    name=name,
    method=name,
    env_id="gymnax/Breakout-MinAtar",
    seed=seed,
    evaluations=evaluations,
    compile_time_s=10.0,
    steps_per_second=1.0,
    env_steps=960,
    config={},
    workdir="",
  )


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


def test_fig1a_table_labels_the_difference_at_64_simulators(tmp_path):
  runs = {
    "A2C|64": dict(returns=[33.32, 26.57, 39.73, 37.27, 63.72]),
    "A2C|128": dict(returns=[23.37, 50.89, 32.43, 90.52, 30.71]),
  }
  for s, (g64, g128) in enumerate(
    zip([59.4, 37.66, 84.3, 38.43, 102.11], [20.94, 24.39, 51.25, 23.14, 30.34])
  ):
    runs[f"GALA-A2C|64|{s}"] = dict(returns=[g64])
    runs[f"GALA-A2C|128|{s}"] = dict(returns=[g128])
  path = tmp_path / "runs.json"
  path.write_text(json.dumps(runs))
  text = gala_best.fig1a_table(str(path))
  row = next(line for line in text.splitlines() if line.startswith("| 64 |"))
  assert "+24.26" in row and "different (higher: reproduced)" in row
  assert "by simulators: mixed: reproduced at 64; inconclusive at 128" in text


def test_diff_cell_labels_by_the_rule():
  assert "inconclusive" in gala_best.diff_cell(np.array([1.0, 3.0]), np.array([2.0, 2.5]))
  assert "**+9.00" in gala_best.diff_cell(np.array([10.0, 11.0]), np.array([1.0, 2.0]))
  same = gala_best.diff_cell(np.array([10.0, 10.1, 9.9]), np.array([10.0, 10.05, 9.95]))
  assert same.endswith("equivalent")
