"""experiments/gala_best.py: best rates from sweep folders, best against best."""

import json
import os

import numpy as np

from experiments import gala_best
from galax.results import paper_protocols


def _write(root, folder, game, lr, seed, value):
  d = os.path.join(root, folder, f"env.id=gymnax/{game}__optimizer.learning_rate={lr}")
  os.makedirs(d, exist_ok=True)
  with open(os.path.join(d, f"seed{seed}.json"), "w") as f:
    json.dump(
      dict(
        kind="galax-run",
        env_id=f"gymnax/{game}",
        seed=seed,
        train_mean_return=value,
        config=dict(optimizer=dict(learning_rate=lr)),
      ),
      f,
    )


def test_best_rate_uses_the_sweep_seeds_and_extensions(tmp_path):
  root = str(tmp_path)
  for s in range(3):
    _write(root, "ring", "G", 0.01, s, 10.0 + s)
    _write(root, "ring", "G", 0.003, s, 5.0)
    _write(root, "ring_ext", "G", 0.03, s, 20.0)  # past the edge: the best
    _write(root, "allreduce", "G", 0.003, s, 30.0)
  _write(root, "ring_s34", "G", 0.03, 3, 0.0)  # seeds 3-4 do not pick the rate
  _write(root, "ring_s34", "G", 0.03, 4, 0.0)
  runs = gala_best.read_runs(root)
  assert gala_best.best_rate(runs, "ring", "G") == 0.03
  assert gala_best.best_rate(runs, "allreduce", "G") == 0.003
  assert gala_best.best_rate(runs, "a3c", "G") is None
  np.testing.assert_allclose(gala_best.values(runs, "ring", "G", 0.03), [20, 20, 20, 0, 0])
  table = gala_best.best_table(runs)
  assert "**-18.00" in table  # ring (12 over 5 seeds) - all-reduce (30), different


def test_difference_is_labelled_by_its_ci():
  assert gala_best.diff_cell(np.array([1.0, 3.0]), np.array([2.0, 2.5])).endswith("inconclusive")
  assert gala_best.diff_cell(np.array([10.0, 11.0]), np.array([1.0, 2.0])).endswith("different")


def test_held_out_values_leave_out_the_seeds_that_picked_the_rate(tmp_path):
  root = str(tmp_path)
  for s, v in enumerate([9.0, 9.0, 9.0, 1.0, 2.0]):
    _write(root, "ring" if s < 3 else "ring_s34", "G", 0.01, s, v)
  runs = gala_best.read_runs(root)
  np.testing.assert_allclose(gala_best.values(runs, "ring", "G", 0.01, held_out=True), [1, 2])
  assert "1.50" in gala_best.best_table(runs, held_out=True)


def test_runs_json_reads_back_as_the_run_folders(tmp_path):
  # A committed runs.json regenerates the tables without the run folders.
  root = str(tmp_path / "runs")
  for s in range(3):
    _write(root, "ring", "G", 0.01, s, 10.0 + s)
    _write(root, "allreduce_ext", "G", 0.03, s, 4.0 - s)
  _write(root, "ring_s34", "G", 0.01, 3, 7.0)
  path = str(tmp_path / "runs.json")
  gala_best.dump_runs(root, path)
  assert gala_best.runs_from_json(path) == gala_best.read_runs(root)


def test_difference_ci_is_the_verdicts_welch_interval():
  # 3 seeds a side: the percentile bootstrap's CI, too narrow at 3 seeds, excluded 0
  # ("different"); the Welch t-interval of the Verdicts page (docs/results.md) does not.
  a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.5, 1.0])
  est, lo, hi = paper_protocols.welch_ci(a, b, "diff")
  text = gala_best.diff_cell(a, b, "at least")
  assert text.startswith(f"{est:+.2f} [{lo:+.2f}, {hi:+.2f}] inconclusive"), text
  assert lo < 0 < hi


def test_fig1a_verdicts_use_the_welch_interval(tmp_path, monkeypatch):
  from experiments import gala_sweep

  g, a = [1.0, 2.0, 3.0], [0.0, 0.5, 1.0]  # GALA above A2C by the bootstrap, not by Welch
  monkeypatch.setattr(
    gala_sweep, "collect", lambda runs, sims, same_rate: {"A2C": {32: a}, "GALA-A2C": {32: g}}
  )
  path = tmp_path / "runs.json"
  path.write_text(json.dumps({"x|32": {}}))
  text = gala_best.fig1a_table(str(path))
  assert "inconclusive (higher: inconclusive)" in text
  assert text.rstrip().endswith("by simulators: inconclusive")
