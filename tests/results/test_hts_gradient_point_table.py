"""experiments/hts_gradient_point.py: the table of HTS-PPO's gradient points against PPO."""

import json
import os

from experiments import hts_gradient_point
from galax.results import paper_protocols


def _write(root, algorithm, point, game, returns):
  for seed, value in enumerate(returns):
    folder = os.path.join(root, f"{algorithm}_{point}_{game}")
    os.makedirs(folder, exist_ok=True)
    run = dict(
      config=dict(
        algorithm=algorithm, env=dict(id=f"gymnax/{game}"), hts=dict(gradient_point=point)
      ),
      train_mean_return=value,
    )
    with open(os.path.join(folder, f"seed{seed}.json"), "w") as f:
      json.dump(run, f)


def test_table_has_each_point_and_its_difference_from_ppo(tmp_path):
  ppo, hts = str(tmp_path / "ppo"), str(tmp_path / "hts")
  _write(ppo, "ppo", "current", "Breakout-MinAtar", [10.0, 11.0, 12.0])
  _write(hts, "hts_ppo", "current", "Breakout-MinAtar", [5.0, 6.0, 7.0])
  _write(hts, "hts_ppo", "stale", "Breakout-MinAtar", [10.0, 12.0, 11.0])
  text = hts_gradient_point.main([f"--ppo={ppo}", f"--hts={hts}", "--label=toy"])
  row = [line for line in text.splitlines() if line.startswith("| Breakout-MinAtar")][0]
  cells = [c.strip() for c in row.split("|")[1:-1]]
  assert cells[1].startswith("11.00") and cells[2].startswith("6.00")
  assert cells[4].startswith("-5.00") and "different" in cells[4]
  assert cells[5].startswith("+0.00") and "inconclusive" in cells[5]
  assert "- HTS-PPO current = PPO: not reproduced" in text
  assert "- HTS-PPO stale = PPO: inconclusive" in text


def test_a_small_difference_whose_ci_excludes_zero_inside_the_margin_is_equal(tmp_path):
  """Table A6's Breakout cell: stale - PPO on the plateau near 6, a small difference whose
  CI excludes 0 but lies inside +-0.58: equivalence is read first (issue 58)."""
  ppo, hts = str(tmp_path / "ppo"), str(tmp_path / "hts")
  _write(ppo, "ppo", "current", "Breakout-MinAtar", [5.74, 5.80, 5.81, 5.83, 5.87])
  _write(hts, "hts_ppo", "stale", "Breakout-MinAtar", [5.86, 5.90, 5.94, 5.97, 6.05])
  _write(ppo, "ppo", "current", "SpaceInvaders-MinAtar", [22.0, 23.0, 24.0])
  _write(hts, "hts_ppo", "stale", "SpaceInvaders-MinAtar", [22.5, 23.0, 23.5])
  text = hts_gradient_point.main([f"--ppo={ppo}", f"--hts={hts}", "--label=toy"])
  row = [line for line in text.splitlines() if line.startswith("| Breakout-MinAtar")][0]
  assert "+0.13 [+0.04, +0.23], equivalent (margin +-0.58), reproduced" in row  # Welch
  assert "- HTS-PPO stale = PPO: reproduced" in text and "within noise" not in text


def test_differences_use_the_verdicts_welch_interval(tmp_path):
  # 3 seeds a side: the percentile bootstrap (the old interval) excludes 0 here, so
  # "different"; the Verdicts page's Welch t-interval does not.
  ppo, hts = str(tmp_path / "ppo"), str(tmp_path / "hts")
  _write(ppo, "ppo", "current", "Breakout-MinAtar", [0.0, 0.5, 1.0])
  _write(hts, "hts_ppo", "current", "Breakout-MinAtar", [1.0, 2.0, 3.0])
  text = hts_gradient_point.main([f"--ppo={ppo}", f"--hts={hts}", "--label=toy"])
  est, lo, hi = paper_protocols.welch_ci([1.0, 2.0, 3.0], [0.0, 0.5, 1.0], "diff")
  assert f"{est:+.2f} [{lo:+.2f}, {hi:+.2f}], inconclusive" in text
