"""experiments/claim_checks.py: BA3C's equal-time comparison (4d, p4c) by the Verdicts
page's Welch t-interval, not the percentile bootstrap it used before (issue 58)."""

import json
import os

import numpy as np
from run_helpers import fake_run_record

from experiments import claim_checks
from galax.results import paper_protocols
from galax.results import verdict as rule

RESULTS = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "results")


def test_equal_time_is_the_welch_interval_of_the_stored_finals():
  # ba3c_learning's stored per-seed numbers: the Verdicts page's 4d cells.
  with open(os.path.join(RESULTS, "ba3c_learning", "verdict.json")) as f:
    games = json.load(f)["games"]
  for game in games.values():
    drop, wait = game["checks"]["drop_final"], game["checks"]["wait_at_limit"]
    c = claim_checks.equal_time(np.array(drop), np.array(wait))
    assert (c.estimate, c.low, c.high) == paper_protocols.welch_ci(drop, wait, "diff")
    assert c.margin == rule.MARGIN_FRACTION * abs(np.mean(wait))


def test_ba3c_equal_time_check_is_welch(monkeypatch):
  # 3 seeds a side whose percentile bootstrap excludes 0 ("different", "reproduced");
  # the Welch t-interval does not.
  monkeypatch.setattr(claim_checks, "simulated_times", lambda run: [1.0, 2.0, 3.0])
  drop = [fake_run_record("breakout_drop_1", s, [v] * 3) for s, v in enumerate([1.0, 2.0, 3.0])]
  wait = [fake_run_record("breakout_wait_all", s, [v] * 3) for s, v in enumerate([0.0, 0.5, 1.0])]
  checks, lines = claim_checks.ba3c(dict(drop_1=drop, wait_all=wait), 0.5, 200)
  est, lo, hi = paper_protocols.welch_ci(checks["drop_final"], checks["wait_at_limit"], "diff")
  assert checks["equal_time_diff"] == (est, lo, hi) and lo < 0 < hi
  assert checks["equal_time_label"] == "inconclusive"
  assert checks["equal_time_verdict"] == "inconclusive"
