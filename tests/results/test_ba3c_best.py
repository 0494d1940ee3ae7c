"""experiments/ba3c_best.py: the rate plot's axis labels; differences by the Welch interval;
pair.md again from a committed runs.json."""

import json

import numpy as np

from experiments import ba3c_best
from galax.results import paper_protocols
from galax.results import verdict as rule


def test_log_ticks_label_a_1_2_5_grid_not_every_rate():
  # RMSProp's 1.98e-3 x 2^k beside Adam's 1e-3 x 2^k: labelling each rate overlapped.
  rates = [1e-3 * 2**k for k in range(7)] + [1.98e-3 * 2**k for k in range(7)] + [5e-4]
  ticks = ba3c_best.log_ticks(rates)
  assert ticks == [5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1]
  assert len({f"{t:g}" for t in ticks}) == len(ticks)


def test_differences_use_the_verdicts_welch_interval():
  # 3 seeds a side: the percentile bootstrap (the old interval) excludes 0 ("different");
  # the Verdicts page's Welch t-interval does not.
  a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.5, 1.0])
  c = ba3c_best.compare(a, b)
  assert (c.estimate, c.low, c.high) == paper_protocols.welch_ci(a, b, "diff")
  assert rule.label(c) == "inconclusive"
  assert ba3c_best.diff_text(c, "higher").endswith("inconclusive (higher: inconclusive)")


def test_runs_json_gives_the_finals_and_keeps_the_drop_table(tmp_path):
  rows = [
    dict(folder=folder, game="G", lr=0.01, seed=seed, train_mean_return=float(seed))
    for folder, seeds in (("adam", (0, 1, 2)), ("adam_s35", (3, 4, 5)))
    for seed in seeds
  ]
  path = tmp_path / "runs.json"
  path.write_text(json.dumps(rows))
  runs = ba3c_best.runs_from_json(str(path))
  np.testing.assert_allclose(ba3c_best.finals(runs, "adam", "G", 0.01, range(6)), range(6))
  old = tmp_path / "pair.md"
  old.write_text("x\n\nDrop from the peak:\n\n| 0.1, 0.2 |\n\n## Verdict cells\n\nold\n")
  new = "y\n\nDrop from the peak:\n\n| -, - |\n\n## Verdict cells\n\nnew\n"
  kept = ba3c_best.kept_drops(new, str(old))
  assert kept == "y\n\nDrop from the peak:\n\n| 0.1, 0.2 |\n\n## Verdict cells\n\nnew\n"
