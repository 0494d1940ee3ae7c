"""experiments.verdicts_page: each cell's interval is Welch's on the stored seeds, cells
without seeds on disk stay inconclusive, and bad input is one line."""

import json

import numpy as np
import pytest

from experiments import verdicts_atari as atari
from experiments import verdicts_cells as data
from experiments import verdicts_page as page
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule


def test_a_cell_is_welchs_interval_on_the_stored_seeds():
  with open(f"{data.RESULTS}/paac_authors/verdict.json") as f:
    finals = json.load(f)["games"]["breakout"]["finals"]
  cell = next(c for c in page.all_cells() if c.id == "3a" and c.name == "n_e=32")
  assert np.array_equal(cell.scores("a"), finals["paac_ne32"])
  assert np.array_equal(cell.scores("b"), finals["paac_ne16"])
  c = page.comparison(cell)
  assert (c.estimate, c.low, c.high) == protocols.welch_ci(finals["paac_ne32"], finals["paac_ne16"])
  assert rule.label(c) == "inconclusive"  # the bootstrap's [-0.01, +0.47] was "equivalent"


def test_a_cell_without_seeds_on_disk_is_inconclusive():
  cell = data.Cell("3e", "n_e=256", "lower", "ratio", data.TIME, "x", estimate=5.74)
  row = page.cell_row(cell)
  assert "| 5.74 | seeds not on disk | seeds not on disk |" in row
  assert row.endswith("| inconclusive | inconclusive |")


def test_every_summary_id_has_cells_and_dirty_runs_are_counted():
  cells = page.all_cells()
  ids = {c.id for c in cells}
  assert {"1a", "1h", "2f", "3a", "3e", "4e", "p1a", "p4c"} <= ids
  ring = next(c for c in cells if c.id == "1a" and c.name == "Breakout")
  assert len(ring.a) == len(ring.b) == 10
  assert page._dirty(ring) == f"{sum(r['dirty'] for r in ring.a + ring.b)} of 20"


def _cells(seeds):
  rows = [dict(score=float(s)) for s in seeds]
  return [data.Cell("1a", "Breakout", "at least", "diff", data.TRAIN, "x", rows, rows)]


def test_bad_input_is_one_line():
  with pytest.raises(SystemExit, match="needs one .*verdicts:cells begin"):
    page.generate("# no markers\n", _cells([1, 2, 3]))
  with pytest.raises(SystemExit, match="fewer than 3 seeds"):
    page.generate(f"{page.BEGIN}\n{page.END}\n", _cells([1, 2]))
  summary = f"{page.SUMMARY_HEADER}\n| --- |\n| 9z | a | b | c | d | e | f |\n"
  with pytest.raises(SystemExit, match="'9z' has no cells"):
    page.generate(f"{page.BEGIN}\n{page.END}\n{summary}", _cells([1, 2, 3]))


def test_the_atari_cells_wait_for_three_seeds_an_arm(tmp_path, monkeypatch):
  monkeypatch.setattr(data, "RESULTS", str(tmp_path))

  def keep(arm, seed, score, stopped="budget"):
    folder = tmp_path / atari.ATARI / f"Acode_{arm}_seed{seed}"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(dict(stopped=stopped, mean_return=score)))

  for seed, (gala, allreduce) in enumerate([(340.0, 350.0), (345.0, 360.0)]):
    keep("gala", seed, gala)
    keep("allreduce", seed, allreduce)
  keep("allreduce", 2, 100.0, stopped="preempted")  # under way: not a finished seed
  assert atari.atari_cells() == []
  keep("gala", 2, 330.0)
  assert atari.atari_cells() == []
  (tmp_path / atari.ATARI / "Acode_allreduce_seed2" / "result.json").write_text(
    json.dumps(dict(stopped="budget", mean_return=355.0))
  )
  a1, a2 = atari.atari_cells()
  assert (a1.id, a1.claim, a2.id, a2.claim) == ("p1c", "higher", "p1d", "at least")
  np.testing.assert_array_equal(a1.scores("a"), [340.0, 345.0, 330.0])
  np.testing.assert_array_equal(a1.scores("b"), [350.0, 360.0, 355.0])
  # -16.7 with a CI inside +- 35.5 (10% of all-reduce's mean): equivalent.
  assert rule.verdict("higher", page.comparison(a1)) == "not reproduced"
  assert rule.verdict("at least", page.comparison(a2)) == "reproduced"


def _keep_acode(tmp_path, arm, seed, result):
  """An A-code run kept under the test's results folder: its result.json; the folder."""
  folder = tmp_path / atari.ATARI / f"Acode_{arm}_seed{seed}"
  folder.mkdir(parents=True)
  (folder / "result.json").write_text(json.dumps(result))
  return folder


def test_the_atari_cells_carry_each_runs_commit_and_dirty_sittings(tmp_path, monkeypatch):
  monkeypatch.setattr(data, "RESULTS", str(tmp_path))
  for arm in ("gala", "allreduce"):
    for seed in range(3):
      git = dict(commit=f"{seed}" * 40, dirty=False)
      result = dict(stopped="budget", mean_return=300.0 + seed, git=git)
      folder = _keep_acode(tmp_path, arm, seed, result)
      if seed == 1:  # an earlier sitting ran from a dirty tree; seed 0 predates sittings.json
        sittings = [dict(commit="a" * 40, dirty=True), dict(commit=git["commit"], dirty=False)]
        (folder / "sittings.json").write_text(json.dumps(sittings))
  a1, _ = atari.atari_cells()
  assert [r["commit"] for r in a1.a] == ["0" * 40, "1" * 40, "2" * 40]
  assert [r["dirty"] for r in a1.a] == [False, True, False]
  assert page._dirty(a1) == "2 of 6"
  line = page.provenance([a1])[0]
  assert "[atari_gala_hts](results/atari_gala_hts): 6 runs used here, 2 of them dirty" in line


def test_an_atari_run_with_no_git_record_counts_as_not_recorded(tmp_path, monkeypatch):
  monkeypatch.setattr(data, "RESULTS", str(tmp_path))
  for arm in ("gala", "allreduce"):
    for seed in range(3):
      _keep_acode(tmp_path, arm, seed, dict(stopped="budget", mean_return=300.0))
  a1, _ = atari.atari_cells()
  assert [r["dirty"] for r in a1.a] == [None, None, None]
  assert page._dirty(a1) == "not recorded"


def test_a_run_with_no_record_is_not_counted_clean(tmp_path, monkeypatch):
  """p1c's 'dirty 0 of 6' counted codeeps_gala_0, which has no git record, as clean."""
  monkeypatch.setattr(data, "RESULTS", str(tmp_path))
  for arm in ("gala", "allreduce"):
    for seed in range(3):
      git = None if (arm, seed) == ("gala", 0) else dict(commit=f"{seed}" * 40, dirty=False)
      _keep_acode(tmp_path, arm, seed, dict(stopped="budget", mean_return=300.0, git=git))
  a1, _ = atari.atari_cells()
  assert page._dirty(a1) == "0 of 5 (1 not recorded)"
  assert "6 runs used here, 0 of them dirty, 1 with no record" in page.provenance([a1])[0]


def test_the_b_fast_cells_read_steps_and_minutes_to_18_and_mark_censored_runs(
  tmp_path, monkeypatch
):
  """B1f/B2f (PREREGISTRATION.md): a run that never reaches 18 counts at its last row (the
  10M cap), censored, and its arm's mean is only a lower bound (verdict.stands)."""
  monkeypatch.setattr(data, "RESULTS", str(tmp_path))

  def keep(arm, seed, rows, stopped):
    folder = tmp_path / atari.ATARI / f"Bfast_{arm}_seed{seed}"
    folder.mkdir(parents=True)
    git = dict(commit="c" * 40, dirty=False)
    result = dict(stopped=stopped, mean_return=0.0, git=git)
    (folder / "result.json").write_text(json.dumps(result))
    lines = ["env_steps,mean_return,wall_time_s"] + [f"{s},{r},{t}" for s, r, t in rows]
    (folder / "metrics.csv").write_text("\n".join(lines) + "\n")

  for seed in range(3):
    keep(
      "a2c", seed, [(1e6, 5.0, 600), (3e6 + 1e5 * seed, 18.1, 1800 + 60 * seed)], "target return"
    )
    if seed < 2:
      keep("hts", seed, [(5e6, -20.0, 3000), (1e7, -20.3, 5600)], "budget")
  assert atari.bfast_cells() == []  # two HTS-A2C seeds: no cells yet
  keep("hts", 2, [(5e6, -20.0, 3000), (1e7, -20.3, 5600)], "budget")
  steps, minutes = atari.bfast_cells()
  assert (steps.id, steps.claim, minutes.id, minutes.claim) == ("p2c", "equal", "p2d", "lower")
  np.testing.assert_array_equal(steps.scores("a"), [1e7, 1e7, 1e7])
  np.testing.assert_array_equal(steps.scores("b"), [3e6, 3.1e6, 3.2e6])
  np.testing.assert_allclose(minutes.scores("b"), [30.0, 31.0, 32.0])
  assert steps.censored == (3, 0) and "censored at 10M: HTS-A2C 3, A2C 0" in steps.name
  # HTS-A2C's bound lies wholly above 1.1: "equal" and "lower" are not reproduced.
  assert "| not reproduced |" in page.cell_row(steps)
  assert page.verdicts([steps, minutes]) == dict(p2c="not reproduced", p2d="not reproduced")
  assert "6 runs used here" in page.provenance([steps, minutes])[0]  # each run once
