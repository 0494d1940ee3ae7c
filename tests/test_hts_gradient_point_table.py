"""experiments/hts_gradient_point.py: the table of HTS-PPO's gradient points against PPO."""

import json
import os

from experiments import hts_gradient_point


def _write(root, algorithm, point, game, returns):
  for seed, value in enumerate(returns):
    folder = os.path.join(root, f"{algorithm}_{point}_{game}")
    os.makedirs(folder, exist_ok=True)
    run = dict(config=dict(algorithm=algorithm, env=dict(id=f"gymnax/{game}"),
                           hts=dict(gradient_point=point)), train_mean_return=value)
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
  assert cells[4].startswith("-5.00") and "within noise" not in cells[4]
  assert cells[5].startswith("+0.00") and "within noise" in cells[5]
