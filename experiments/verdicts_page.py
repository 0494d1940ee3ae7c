"""Writes the Verdicts section's generated parts of docs/results.md from the stored data.

  python -m experiments.verdicts_page            # rewrite docs/results.md in place
  python -m experiments.verdicts_page --check    # exit 1 (one line) if the page differs

Each cell of `experiments.verdicts_cells` gets a 95% Welch t-interval (`paper_protocols.
welch_ci`) of mean(A) - mean(B) or mean(A) / mean(B) over its seeds, and its label and
verdict from `galax.results.verdict`'s rule (margin 10% of B's mean, or 0.1 for a ratio).
The cells tables, one per return metric, go between the page's `verdicts:cells` marker
comments; in the summary tables (SUMMARY_HEADER) the verdict column becomes the rule's
`overall` over each id's cells and the next column the across-cells aggregate: the IQM of
A's and of B's runs, each cell's scores divided by B's mean there, and rliable's
probability of improvement P(A > B), with stratified bootstrap CIs (2,000 resamples, seed
0; descriptive, not used for a verdict). Cells without per-seed data on disk say so and
stay inconclusive. The runs' recorded commits and dirty flags follow the tables.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
from typing import Sequence

from galax.results import across_games
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule

from . import verdicts_atari as atari
from . import verdicts_cells as data

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "results.md")
BEGIN = "<!-- verdicts:cells begin: python -m experiments.verdicts_page writes this part -->"
END = "<!-- verdicts:cells end -->"
SUMMARY_HEADER = (
  "| id | the paper's claim | regime | statistic | verdict, by the rule over the cells "
  "| across cells: IQM of A, of B (x B's mean); P(A > B) | data |"
)
METRICS = {
  data.TRAIN: "final training return (mean of a run's last 100 training episodes)",
  data.EVAL: "final evaluation return (mean of a run's last 10 evaluations x 10 episodes)",
  data.TIME: "time to a return target (ratio of the mean times)",
  data.SPEED: "throughput (ratio of agent steps per second, one timing each)",
}
SHORT = {
  data.TRAIN: "B's final training return",
  data.EVAL: "B's final evaluation return",
  data.TIME: "B (time to target)",
  data.SPEED: "B (steps/s)",
}
CELLS_HEADERS = {
  metric: f"| id | cell | claim | statistic | seeds A, B | dirty runs | {short} | A vs B "
  "| CI low | CI high | margin | label | verdict |"
  for metric, short in SHORT.items()
}
RESAMPLES = 2000


def all_cells() -> list[data.Cell]:
  """Every cell, in the order of the summary tables' ids."""
  cells = (
    data.gala_best_cells() + data.gala_learning_cells() + data.fig1a_cells()
    + data.hts_point_cells() + data.claims_cells() + data.timing_cells()
    + data.ba3c_best_cells() + atari.atari_cells() + atari.bfast_cells()
  )  # fmt: skip
  order = {id_: i for i, id_ in enumerate(sorted({c.id for c in cells}, key=_id_key))}
  return sorted(cells, key=lambda c: order[c.id])  # stable: each id keeps its cells' order


def _id_key(id_: str) -> tuple[int, str]:
  return (id_.startswith("p"), id_)


def comparison(cell: data.Cell) -> rule.Comparison:
  """The cell's statistic, its Welch CI (NaN ends where no seeds are on disk), and margin."""
  if cell.a is None or cell.b is None:
    est = math.nan if cell.estimate is None else float(cell.estimate)
    if cell.op == "ratio":
      return rule.ratio(est, math.nan, math.nan)
    return rule.Comparison(est, math.nan, math.nan, 0.0, math.nan)
  if len(cell.a) < protocols.MIN_SEEDS_FOR_CI or len(cell.b) < protocols.MIN_SEEDS_FOR_CI:
    raise SystemExit(f"verdicts: cell {cell.id} {cell.name}: fewer than 3 seeds ({cell.source})")
  a, b = cell.scores("a"), cell.scores("b")
  est, low, high = protocols.welch_ci(a, b, cell.op)
  if cell.op == "ratio":
    return rule.ratio(est, low, high)
  return rule.difference(est, low, high, baseline=float(b.mean()))


def _f(x: float, signed: bool = True) -> str:
  return "-" if not math.isfinite(x) else f"{x:+.2f}" if signed else f"{x:.2f}"


def _dirty(cell: data.Cell) -> str:
  rows = (cell.a or []) + (cell.b or [])
  flags = [r["dirty"] for r in rows if r.get("dirty") is not None]
  if not flags:
    return "not recorded"
  unknown = len(rows) - len(flags)  # a run with no record is not counted as clean
  return f"{sum(flags)} of {len(flags)}" + (f" ({unknown} not recorded)" if unknown else "")


def cell_row(cell: data.Cell) -> str:
  c = comparison(cell)
  if cell.a is None:
    why = "single timing" if cell.metric == data.SPEED else "seeds not on disk"
    seeds, dirty, low, high = "-", "-", why, why
  else:
    seeds, dirty = f"{len(cell.a)}, {len(cell.b)}", _dirty(cell)
    low, high = _f(c.low), _f(c.high)
  ratio = cell.op == "ratio"
  base = "-" if ratio else f"{float(cell.scores('b').mean()):.2f}"
  est = _f(c.estimate, signed=not ratio)
  return (
    f"| {cell.id} | {cell.name} | {cell.claim} | {'A / B' if ratio else 'A - B'} | {seeds} "
    f"| {dirty} | {base} | {est} | {low} | {high} | {_f(c.margin, False)} | {rule.label(c)} "
    f"| {rule.verdict(cell.claim, c, cell.censored)} |"
  )


def cells_tables(cells: Sequence[data.Cell]) -> list[str]:
  lines = []
  for metric, title in METRICS.items():
    rows = [cell_row(c) for c in cells if c.metric == metric]
    if rows:
      lines += [f"**{title}**:", "", CELLS_HEADERS[metric], "| " + " | ".join(["---"] * 13) + " |"]
      lines += rows + [""]
  return lines


def verdicts(cells: Sequence[data.Cell]) -> dict[str, str]:
  found: dict[str, dict[str, str]] = {}
  for cell in cells:
    found.setdefault(cell.id, {})[cell.name] = rule.verdict(
      cell.claim, comparison(cell), cell.censored
    )
  return {id_: rule.overall(v) for id_, v in found.items()}


def across(cells: Sequence[data.Cell], id_: str) -> str:
  """IQM of A and of B (each cell's scores / B's mean there) and P(A > B) over the id's
  pooled cells (no held-out repeats), where they span two games; else '-'."""
  mine = [c for c in cells if c.id == id_ and c.pooled and c.a is not None and c.op == "diff"]
  games = {c.name.split()[0] for c in mine} & set(data.GAMES)
  if len(games) < 2 or any(c.scores("b").mean() <= 0 for c in mine):
    return "-"
  a = [c.scores("a") for c in mine]
  b = [c.scores("b") for c in mine]
  zeros, means = [0.0] * len(mine), [float(x.mean()) for x in b]
  iqm_a = across_games.aggregate_iqm(a, zeros, means, resamples=RESAMPLES)
  iqm_b = across_games.aggregate_iqm(b, zeros, means, resamples=RESAMPLES)
  p = across_games.probability_of_improvement(a, b, resamples=RESAMPLES)
  ci = lambda t: f"{t[0]:.2f} [{t[1]:.2f}, {t[2]:.2f}]"
  return f"{len(mine)} cells: {ci(iqm_a)}, {ci(iqm_b)}; {ci(p)}"


def _commit_order(commits: set[str]) -> list[str]:
  """Oldest first by git's commit time where the repository knows them."""
  try:
    out = subprocess.run(
      ["git", "-C", ROOT, "show", "-s", "--format=%H %ct", *sorted(commits)],
      capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
  except OSError:
    out = ""
  times = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
  return sorted(commits, key=lambda h: (int(times.get(h, 1 << 62)), h))


def provenance(cells: Sequence[data.Cell]) -> list[str]:
  by_source: dict[str, dict[int, dict]] = {}
  for cell in cells:
    for row in (cell.a or []) + (cell.b or []):
      by_source.setdefault(cell.source, {})[row.get("run", id(row))] = row  # once a run
  parts, bare = [], []
  for source, rows in by_source.items():
    recorded = [r for r in rows.values() if r.get("commit")]
    if not recorded:
      bare.append(source)
      continue
    order = _commit_order({r["commit"] for r in recorded})
    span = order[0][:7] if len(order) == 1 else f"{order[0][:7]} to {order[-1][:7]}"
    dirty = sum(bool(r.get("dirty")) for r in recorded)
    unknown = sum(r.get("dirty") is None for r in rows.values())
    unknown_text = f", {unknown} with no record" if unknown else ""
    parts.append(
      f"[{source}](results/{source}): {len(rows)} runs used here, {dirty} of them dirty"
      f"{unknown_text}"
      f"{_file_total(source)}; commits {span} ({len(order)} commits)"
    )
  kinds: dict[str, int] = {}
  for source in bare:
    kinds[os.path.basename(source)] = kinds.get(os.path.basename(source), 0) + 1
  none = " and ".join(f"{n} {name} files" for name, n in sorted(kinds.items(), reverse=True))
  return [
    "Provenance, from the runs' own records (dirty: run from a tree with uncommitted "
    "changes): " + "; ".join(parts) + ". "
    f"The other {none} record no commit (they predate the record).",
  ]


def _file_total(source: str) -> str:
  rows = data.load(source) if source.endswith("runs.json") else None
  if not isinstance(rows, list):
    return ""
  return f" (of the file's {len(rows)}, {sum(bool(r.get('dirty')) for r in rows)})"


def generate(page: str, cells: Sequence[data.Cell] | None = None) -> str:
  """The page with its generated parts rewritten from the data."""
  cells = all_cells() if cells is None else cells
  if page.count(BEGIN) != 1 or page.count(END) != 1 or page.index(BEGIN) > page.index(END):
    raise SystemExit(f"verdicts: the page needs one {BEGIN!r} line before one {END!r} line")
  head, rest = page.split(BEGIN, 1)
  _, tail = rest.split(END, 1)
  body = ["", *cells_tables(cells), *provenance(cells), ""]
  page = head + BEGIN + "\n".join(body) + "\n" + END + tail
  return _summaries(page, cells)


def _summaries(page: str, cells: Sequence[data.Cell]) -> str:
  overall, lines, inside = verdicts(cells), page.split("\n"), False
  ids = {c.id for c in cells}
  for i, line in enumerate(lines):
    if line == SUMMARY_HEADER:
      inside = True
    elif inside and not line.startswith("|"):
      inside = False
    elif inside and not line.startswith("| ---"):
      cols = [c.strip() for c in line.strip().strip("|").split("|")]
      if cols[0] not in ids:
        raise SystemExit(f"verdicts: summary row {cols[0]!r} has no cells in the data")
      cols[4], cols[5] = f"**{overall[cols[0]]}**", across(cells, cols[0])
      lines[i] = "| " + " | ".join(cols) + " |"
  return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--page", default=PAGE)
  parser.add_argument("--check", action="store_true", help="exit 1 if the page differs")
  args = parser.parse_args(argv)
  with open(args.page) as f:
    page = f.read()
  new = generate(page)
  if args.check:
    if new != page:
      print(f"{args.page} differs from python -m experiments.verdicts_page's output")
      return 1
    return 0
  with open(args.page, "w") as f:
    f.write(new)
  return 0


if __name__ == "__main__":
  sys.exit(main())
