"""python -m galax.results.sweep: a grid of config values x seeds, its table and plot."""

import glob
import json
import os

import pytest
from run_helpers import run_cli

from galax.config import from_data
from galax.config import load as load_config
from galax.results import sweep

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_axes_take_the_fields_type_and_make_a_grid():
  config = from_data(load_config("cartpole_a2c"))
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


def _strict(text):
  def reject(token):
    raise ValueError(f"{token} is not JSON")

  return json.loads(text, parse_constant=reject)


def test_seed_stats_give_a_t_interval_from_three_seeds_up():
  stats = sweep.seed_stats([1.0, 2.0, 3.0, 4.0])
  assert stats["mean"] == 2.5 and stats["n"] == 4
  # 2.5 +- t(3) 1.29 / 2: a 95% interval, where the bootstrap's was about [min, max]
  assert (round(stats["low"], 2), round(stats["high"], 2)) == (0.45, 4.55)
  assert sweep.seed_stats([None, 5.0]) == dict(mean=5.0, low=None, high=None, n=1)
  assert sweep.seed_stats([]) == dict(mean=None, low=None, high=None, n=0)


def _point(out, lr, returns, finals=None):
  folder = out / sweep.point_name({"optimizer.learning_rate": lr})
  folder.mkdir(parents=True)
  for seed, value in enumerate(returns):
    record = dict(
      seed=seed,
      train_mean_return=value,
      steps_per_second=None,
      final_metric=None if finals is None else finals[seed],
    )
    (folder / f"seed{seed}.json").write_text(json.dumps(record))


def test_sweep_refuses_to_call_two_seeds_a_ci(tmp_path):
  _point(tmp_path, 1e-3, [1.0, 3.0])
  _point(tmp_path, 3e-3, [1.0, 2.0, 6.0], finals=[4.0, float("nan"), 5.0])
  rows = sweep.summarize(str(tmp_path), [{"optimizer.learning_rate": v} for v in (1e-3, 3e-3)])
  sweep.write_table(str(tmp_path), rows, "toy")
  table = (tmp_path / "sweep.md").read_text()
  # Two seeds' bootstrap "CI" would be [min, max] = [1.00, 3.00]; three seeds' t-interval is
  # 3 +- t(2) 2.65 / sqrt(3), where the bootstrap gave [1.00, 6.00].
  assert "| 0.001 | 2 | 2.00 (n=2, no interval below 3 seeds) | - | - |" in table
  assert "| 0.003 | 3 | 3.00 [-3.57, 9.57] | 4.50 (n=2, no interval below 3 seeds) |" in table
  assert "Mean over seeds [95% Student t-interval of that mean]" in table
  assert sweep.write_plot(str(tmp_path), rows).endswith("sweep.png")


def test_a_learning_rate_sweep_is_plotted_on_a_log_axis(tmp_path, monkeypatch):
  import matplotlib.axes

  scales = []
  monkeypatch.setattr(matplotlib.axes.Axes, "set_xscale", lambda ax, v, **kw: scales.append(v))
  for lr in (3e-4, 1e-3):  # a factor 3.3: crowded at one end of a linear axis
    _point(tmp_path, lr, [1.0, 2.0])
  rows = sweep.summarize(str(tmp_path), [{"optimizer.learning_rate": v} for v in (3e-4, 1e-3)])
  sweep.write_plot(str(tmp_path), rows)
  assert scales == ["log"]
  assert not sweep.log_axis([0.9, 0.99]) and not sweep.log_axis([8, 16])
  assert not sweep.log_axis([-1e-3, 1e-3]) and sweep.log_axis([8, 16, 32])


def test_sweep_json_is_strict_json_with_named_fields(tmp_path):
  _point(tmp_path, 1e-3, [1.0])  # no final metric and no steps/s: NaN before, null now
  _point(tmp_path, 3e-3, [1.0, 2.0, 4.0])
  grid = [{"optimizer.learning_rate": v} for v in (1e-3, 3e-3)]
  sweep.write_table(str(tmp_path), sweep.summarize(str(tmp_path), grid), "toy")
  rows = _strict((tmp_path / "sweep.json").read_text())["rows"]
  assert rows[0]["train_return"] == dict(mean=1.0, low=None, high=None, n=1)
  assert rows[0]["final_metric"]["mean"] is None and rows[0]["steps_per_second"] is None
  assert set(rows[1]["train_return"]) == {"mean", "low", "high", "n"}
  assert rows[1]["train_return"]["low"] < rows[1]["train_return"]["high"]


COMMITTED = sorted(
  glob.glob(
    os.path.join(os.path.dirname(__file__), "..", "..", "docs", "results", "**", "sweep.json"),
    recursive=True,
  )
)


def test_committed_sweep_json_files_are_strict_json_with_named_fields():
  assert COMMITTED, "docs/results holds sweeps"
  for path in COMMITTED:
    with open(path) as f:
      data = _strict(f.read())
    assert data["kind"] == "galax-sweep", path
    for row in data["rows"]:
      for key in ("train_return", "final_metric"):
        assert set(row[key]) == {"mean", "low", "high", "n"}, (path, key)


@pytest.mark.slow
def test_sweep_writes_table_and_plot_and_skips_done_points(tmp_path):
  # gymnax's CartPole: the two seeds of a point share one compile (an envpool program
  # carries its pool's handle, so each run compiled its own).
  args = [
    "--config=cartpole_a2c",
    "--set=optimizer.learning_rate=1e-3,3e-3",
    "--seeds=0-1",
    "--steps=800",
    "--config.updates_per_call=10",
    "--config.tensorboard=False",
    "--config.env.id=gymnax/CartPole-v1",
    f"--out={tmp_path}",
  ]
  proc = run_cli(*args, module="galax.results.sweep", timeout=300)
  assert proc.returncode == 0, proc.stderr[-2000:]
  table = (tmp_path / "sweep.md").read_text()
  assert "| 0.001 | 2 |" in table and "| 0.003 | 2 |" in table
  assert (tmp_path / "sweep.png").read_bytes()[:8] == PNG_MAGIC
  rows = _strict((tmp_path / "sweep.json").read_text())["rows"]
  assert [r["seeds"] for r in rows] == [[0, 1], [0, 1]]
  assert "(n=2, no interval below 3 seeds)" in table
  again = run_cli(*args, module="galax.results.sweep", timeout=300)
  assert again.returncode == 0 and again.stdout.count("done already; skipped") == 2


def test_a_plot_leaves_pyplot_and_its_backend_as_they_were(tmp_path):
  """A notebook's inline backend stays: galax's plots switched pyplot to Agg
  (`matplotlib.use`), and a quickstart's second Run all in one kernel drew no figure."""
  import matplotlib
  import matplotlib.pyplot as plt

  backend = matplotlib.get_backend()
  matplotlib.use("svg")  # stands in for the kernel's own backend
  try:
    figures = plt.get_fignums()
    _point(tmp_path, 1e-3, [1.0, 3.0])
    rows = sweep.summarize(str(tmp_path), [{"optimizer.learning_rate": 1e-3}])
    assert sweep.write_plot(str(tmp_path), rows).endswith("sweep.png")
    assert matplotlib.get_backend() == "svg" and plt.get_fignums() == figures
  finally:
    matplotlib.use(backend)
