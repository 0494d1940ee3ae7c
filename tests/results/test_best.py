"""galax/results/best.py: best rates on the sweep's seeds, best against best on the held-out
seeds, and the kept studies' tables (ba3c_best, gala_best) again from their runs.json."""

import json
import os
import subprocess
import sys

import forked_runs
import numpy as np
import pytest

from galax.results import best, paper_protocols

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "docs", "results")


def _write(root, folder, game, lr, seed, value):
  d = os.path.join(root, folder, f"env.id=gymnax/{game}__optimizer.learning_rate={lr}")
  os.makedirs(d, exist_ok=True)
  record = dict(
    kind="galax-run",
    env_id=f"gymnax/{game}",
    seed=seed,
    train_mean_return=value,
    config=dict(optimizer=dict(learning_rate=lr)),
  )
  with open(os.path.join(d, f"seed{seed}.json"), "w") as f:
    json.dump(record, f)


def test_best_rate_uses_the_sweep_seeds_and_extensions(tmp_path):
  root = str(tmp_path)
  for s in range(3):
    _write(root, "ring", "G", 0.01, s, 10.0 + s)
    _write(root, "ring", "G", 0.003, s, 5.0)
    _write(root, "ring_ext", "G", 0.03, s, 20.0)  # past the edge: the best
    _write(root, "allreduce", "G", 0.003, s, 30.0)
  _write(root, "ring_s34", "G", 0.03, 3, 0.0)  # seeds 3-4 do not pick the rate
  _write(root, "ring_s34", "G", 0.03, 4, 0.0)
  runs = best.read_runs(root)
  assert best.best_rate(runs, "ring", "G") == 0.03
  assert best.best_rate(runs, "allreduce", "G") == 0.003
  assert best.best_rate(runs, "a3c", "G") is None
  np.testing.assert_allclose(best.values(runs, "ring", "G", 0.03), [20, 20, 20, 0, 0])
  np.testing.assert_allclose(best.values(runs, "ring", "G", 0.03, (3, 4)), [0, 0])


def test_best_against_best_rows_are_chosen_on_held_out_and_all(tmp_path):
  root = str(tmp_path)
  for s, v in enumerate([9.0, 9.0, 9.0, 1.0, 2.0]):
    _write(root, "ring" if s < 3 else "ring_s34", "G", 0.01, s, v)
    _write(root, "allreduce" if s < 3 else "allreduce_s34", "G", 0.01, s, 3.0 + s % 2)
  rows = best.best_table(best.read_runs(root), ["ring", "allreduce"], claim="higher")
  rows = [line for line in rows.splitlines() if line.startswith("| G |")]
  assert [line.split(" | ")[1] for line in rows] == ["0-2 (chosen on)", "3-4 (held out)", "0-4"]
  assert "0.01: 1.50 [" in rows[1] and "(n=2)" in rows[1]  # held out: seeds 3 and 4 alone
  assert "(higher: reproduced)" in rows[0]


def test_a_group_with_no_held_out_seeds_has_one_row(tmp_path):
  for s in range(3):
    _write(str(tmp_path), "a", "G", 0.01, s, float(s))
    _write(str(tmp_path), "b", "G", 0.01, s, float(s))
  table = best.best_table(best.read_runs(str(tmp_path)), ["a", "b"])
  assert len([line for line in table.splitlines() if line.startswith("| G |")]) == 1


def test_runs_json_reads_back_as_the_run_folders(tmp_path):
  root = str(tmp_path / "runs")
  for s in range(3):
    _write(root, "ring", "G", 0.01, s, 10.0 + s)
    _write(root, "allreduce_ext", "G", 0.03, s, 4.0 - s)
  _write(root, "ring_s34", "G", 0.01, 3, 7.0)
  path = str(tmp_path / "runs.json")
  best.dump_runs(root, path)
  assert best.runs_from_json(path) == best.read_runs(root) == best.load_runs(path)


def test_differences_use_the_verdicts_welch_interval():
  # 3 seeds a side: the percentile bootstrap's CI, too narrow at 3 seeds, excluded 0
  # ("different"); the Welch t-interval of the Verdicts page (docs/results.md) does not.
  a, b = np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.5, 1.0])
  est, lo, hi = paper_protocols.welch_ci(a, b, "diff")
  text = best.diff_cell(a, b, "at least")
  assert text.startswith(f"{est:+.2f} [{lo:+.2f}, {hi:+.2f}] inconclusive"), text
  assert best.diff_cell(a[:1], b) == "-"  # no interval from one run


def test_group_of_strips_extra_rates_and_seeds():
  assert [best.group_of(f) for f in ("ring_ext", "ring_s59", "adam_1x32_s35", "ring_noscale")] == [
    "ring",
    "ring",
    "adam_1x32",
    "ring_noscale",
  ]


BAD_INPUT = [
  (["--runs=/nonexistent"], "does not exist"),
  (["--runs=RUNS", "--groups=adam,nope"], "no runs of group 'nope'"),
  (["--runs=RUNS", "--claim=bigger"], "--claim='bigger'"),
  (["--runs=RUNS", "--sweep_seeds=a-b"], "--sweep_seeds='a-b'"),
]


@pytest.fixture(scope="module")
def bad_input_answers(tmp_path_factory):
  """`python -m galax.results.best` with each bad input, in forks of one interpreter."""
  runs = os.path.join(RESULTS, "ba3c_best", "runs.json")
  commands = {
    " ".join(args): ["-m", "galax.results.best", *(a.replace("RUNS", runs) for a in args)]
    for args, _ in BAD_INPUT
  }
  return forked_runs.run(commands, tmp_path_factory.mktemp("bad_input"))


@pytest.mark.parametrize("args, says", BAD_INPUT)
def test_bad_input_is_one_line(bad_input_answers, args, says):
  p = bad_input_answers[" ".join(args)]
  assert p["returncode"] == 2 and "Traceback" not in p["stderr"]
  assert says in p["stderr"].strip().splitlines()[-1]


def _section(text: str, head: str) -> str:
  return text.split(head, 1)[1].split("\n## ", 1)[0]


def test_ba3c_best_tables_are_the_commands(capsys):
  """docs/results/ba3c_best/pair.md's sweeps and best against best are what
  `python -m galax.results.best` gives from the kept runs.json."""
  kept = open(os.path.join(RESULTS, "ba3c_best", "pair.md")).read()
  labels = ["--label=adam=Adam(0.8, 0.75)", "--label=rmsprop=RMSProp"]
  runs = "--runs=" + os.path.join(RESULTS, "ba3c_best", "runs.json")
  sweeps = best.main(
    [runs, "--groups=rmsprop,adam,adam_1x32", *labels, "--label=adam_1x32=Adam, 1 x 32 envs"]
  )
  pair = best.main(
    [
      runs,
      "--groups=adam,rmsprop",
      "--label=adam=Adam",
      "--label=rmsprop=RMSProp",
      "--claim=higher",
    ]
  )
  assert _section(kept, "## The rate sweeps") == _section(sweeps, "## The rate sweeps")
  assert _section(kept, "## Best against best") == _section(pair, "## Best against best")


@pytest.mark.parametrize(
  "script, args, page",
  [
    ("ba3c_best/ba3c_best.py", ["--runs=ba3c_best/runs.json", "--out=OUT"], "pair.md"),
    ("gala_best/scripts/gala_best.py", ["--runs=gala_best/runs.json", "--out=OUT"], "gala_best.md"),
    (
      "gala_best/scripts/gala_best.py",
      ["--fig1a=gala_sweep_spaceinvaders_best/runs.json", "--out=OUT"],
      "returns.md",
    ),
  ],
)
def test_kept_pages_equal_their_scripts_output(tmp_path, script, args, page):
  """Each study's page, again from its kept runs.json, equals the kept one."""
  kept = os.path.join(RESULTS, os.path.dirname(args[0].split("=", 1)[1]), page)
  out = tmp_path / "out"
  out.mkdir()
  (out / page).write_text(open(kept).read())  # ba3c_best keeps its drop table from it
  argv = [a.replace("OUT", str(out)).replace("=", "=" + RESULTS + "/", 1) for a in args]
  argv[-1] = f"--out={out}"
  p = subprocess.run(
    [sys.executable, os.path.join(RESULTS, script), *argv], capture_output=True, text=True
  )
  assert p.returncode == 0, p.stderr
  assert (out / page).read_text() == open(kept).read()
