"""docs/results.md: its Verdicts section is what `python -m experiments.verdicts_page` writes
from the stored per-seed data, and every Verdicts label and verdict is what
galax/results/verdict.py computes from the row's statistic, CI and baseline; files under
docs/results/ and docs/archive/results_history/ that keep the old hand-typed labels
("within noise") say so at their top. (Links: tests/project/test_links.py.)"""

import glob
import math
import os
import re

import pytest

from experiments import verdicts_page
from galax.results import verdict as rule

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PAGE = os.path.join(ROOT, "docs", "results.md")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
CELLS_HEADERS = verdicts_page.CELLS_HEADERS.values()  # one per return metric
SUMMARY_HEADER = verdicts_page.SUMMARY_HEADER


def _read(path):
  with open(path) as f:
    return f.read()


def _table(text, header):
  """The rows (lists of cells) of the table that starts with `header`."""
  lines = text.splitlines()
  tables = [i for i, line in enumerate(lines) if line.strip() == header]
  assert tables, f"no table with the header {header!r}"
  rows = []
  for start in tables:
    for line in lines[start + 2 :]:
      if not line.startswith("|"):
        break
      rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
  return rows


def _number(text):
  try:
    return float(text)
  except ValueError:
    return math.nan  # "-", "seeds not on disk", "single timing": no number


def _cells():
  rows = [row for header in CELLS_HEADERS for row in _table(_read(PAGE), header)]
  assert len(rows) >= 20
  return rows


def _comparison(statistic, baseline, estimate, low, high):
  if statistic == "A - B":
    return rule.difference(_number(estimate), _number(low), _number(high), _number(baseline))
  assert statistic == "A / B" and baseline == "-", statistic
  return rule.ratio(_number(estimate), _number(low), _number(high))


@pytest.mark.parametrize("row", _cells(), ids=lambda r: f"{r[0]} {r[1]}")
def test_each_cell_is_labelled_by_the_rule(row):
  id_, cell, claim, statistic, _, _, baseline, estimate, low, high, margin, label, verdict = row
  assert claim in rule.CLAIMS
  c = _comparison(statistic, baseline, estimate, low, high)
  assert abs(_number(margin) - c.margin) <= 0.005 + 1e-9 or math.isnan(c.margin)
  assert label == rule.label(c)
  assert verdict == rule.verdict(claim, c)


def test_each_summary_verdict_is_the_rule_over_its_cells():
  cells = {}
  for row in _cells():
    id_, cell, claim, statistic, _, _, baseline, estimate, low, high = row[:10]
    cells.setdefault(id_, {})[cell] = rule.verdict(
      claim, _comparison(statistic, baseline, estimate, low, high)
    )
  summary = _table(_read(PAGE), SUMMARY_HEADER)
  ids = [row[0] for row in summary]
  assert sorted(ids) == sorted(cells), "every summary row has cells and every cell a row"
  for row in summary:
    assert row[4].strip("*") == rule.overall(cells[row[0]]), row[0]


def test_the_verdicts_section_is_what_the_generator_writes():
  # Regenerate with `python -m experiments.verdicts_page`: the cells tables, the summary
  # tables' verdict and across-cells columns, and the provenance line, from the stored data.
  page = _read(PAGE)
  assert page.count(verdicts_page.BEGIN) == 1 and page.count(verdicts_page.END) == 1
  assert verdicts_page.generate(page) == page, "run python -m experiments.verdicts_page"


def test_the_generator_notices_a_changed_number(tmp_path):
  page = _read(PAGE)
  row = next(line for line in page.splitlines() if line.startswith("| 2a | Breakout (a) |"))
  changed = page.replace(row, row.replace("equivalent", "different"))
  assert changed != page and verdicts_page.generate(changed) == page
  path = tmp_path / "results.md"
  path.write_text(changed)
  assert verdicts_page.main(["--page", str(path), "--check"]) == 1


OLD_LABELS = re.compile(r"within noise|outside noise", re.IGNORECASE)
OLD_LABELS_NOTE = "Labels in this file predate the label rule; the current verdicts are in"


def _text_files(folder):
  for path in sorted(glob.glob(os.path.join(folder, "**", "*"), recursive=True)):
    if os.path.isfile(path) and not path.endswith((".png", ".gif", ".jpg", ".svg")):
      with open(path, "rb") as f:
        data = f.read()
      if b"\0" not in data:
        yield path, data.decode("utf-8", errors="replace")


def test_files_with_the_old_hand_typed_labels_say_so():
  # "(within noise)" / "(outside noise)" came before galax/results/verdict.py: a file that
  # still carries them says so near its top and links to the current verdicts.
  folders = [
    os.path.join(ROOT, "docs", "results"),
    os.path.join(ROOT, "docs", "archive", "results_history"),
  ]
  files = [f for folder in folders for f in _text_files(folder)]
  stale = [(p, t) for p, t in files if OLD_LABELS.search(t)]
  unmarked = []
  for path, text in stale:
    head = [line for line in text.splitlines()[:5] if line.startswith(OLD_LABELS_NOTE)]
    targets = [LINK.findall(line) for line in head]
    resolved = {
      os.path.normpath(os.path.join(os.path.dirname(path), t.partition("#")[0]))
      for links in targets
      for t in links
    }
    if PAGE not in resolved:
      unmarked.append(os.path.relpath(path, ROOT))
  assert not unmarked, f"old labels without the note (and a link to docs/results.md): {unmarked}"
