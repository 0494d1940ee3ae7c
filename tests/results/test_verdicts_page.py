"""experiments.verdicts_page: each cell's interval is Welch's on the stored seeds, cells
without seeds on disk stay inconclusive, and bad input is one line."""

import json

import numpy as np
import pytest

from experiments import verdicts_cells as data
from experiments import verdicts_page as page
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule


def test_a_cell_is_welchs_interval_on_the_stored_seeds():
  with open(f"{data.RESULTS}/paac_authors/verdict.json") as f:
    finals = json.load(f)["games"]["breakout"]["finals"]
  cell = next(c for c in data.all_cells() if c.id == "3a" and c.name == "n_e=32")
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
  cells = data.all_cells()
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
