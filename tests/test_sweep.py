"""python -m galax.sweep: a grid of config values x seeds, its table and plot."""

import json

import pytest
from run_helpers import run_cli

from galax.config import load as load_config
from galax.results import sweep

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_axes_take_the_fields_type_and_make_a_grid():
  config = load_config("cartpole_a2c")
  lr = sweep.parse_axis(config, "optimizer.learning_rate=1e-3,3e-3")
  envs = sweep.parse_axis(config, "envs_per_learner=8,16")
  assert lr == ("optimizer.learning_rate", [1e-3, 3e-3]) and envs == ("envs_per_learner", [8, 16])
  grid = sweep.points([lr, envs])
  assert len(grid) == 4 and grid[1] == {"optimizer.learning_rate": 1e-3, "envs_per_learner": 16}
  assert sweep.point_name(grid[1]) == "optimizer.learning_rate=0.001__envs_per_learner=16"
  with pytest.raises(ValueError, match="Did you mean 'config.optimizer.learning_rate'"):
    sweep.parse_axis(config, "optimizer.learning_rat=1")
  with pytest.raises(ValueError, match="'x' is not a int"):
    sweep.parse_axis(config, "envs_per_learner=8,x")


def test_mean_ci_is_the_bootstrap_interval_around_the_mean():
  mean, low, high = sweep.mean_ci([1.0, 2.0, 3.0, 4.0])
  assert mean == 2.5 and 1.0 <= low < 2.5 < high <= 4.0
  assert sweep.mean_ci([None, 5.0]) == (5.0, 5.0, 5.0)


@pytest.mark.slow
def test_sweep_writes_table_and_plot_and_skips_done_points(tmp_path):
  args = ["--config=cartpole_a2c", "--set=optimizer.learning_rate=1e-3,3e-3", "--seeds=0-1",
          "--steps=800", "--config.updates_per_call=10", "--config.tensorboard=False",
          f"--out={tmp_path}"]
  proc = run_cli(*args, module="galax.sweep", timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  table = (tmp_path / "sweep.md").read_text()
  assert "| 0.001 | 2 |" in table and "| 0.003 | 2 |" in table
  assert (tmp_path / "sweep.png").read_bytes()[:8] == PNG_MAGIC
  rows = json.loads((tmp_path / "sweep.json").read_text())["rows"]
  assert [r["seeds"] for r in rows] == [[0, 1], [0, 1]]
  again = run_cli(*args, module="galax.sweep", timeout=300)
  assert again.returncode == 0 and again.stdout.count("done already; skipped") == 2
