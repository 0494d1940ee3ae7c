"""benchmarks/peer_learning.py at toy scale: it trains each learner, scores it by its
evaluations and writes the table, the JSON and the plot (the peer where rejax is installed)."""

import importlib.util
import json

import pytest

from benchmarks import peer_learning

LEARNERS = "galax,rejax" if importlib.util.find_spec("rejax") else "galax"


@pytest.mark.slow
def test_peer_learning_writes_table_curves_and_resumes(tmp_path):
  args = [
    "--games=Breakout-MinAtar",
    "--seeds=1",
    "--steps=16384",
    "--evals=2",
    "--eval_episodes=4",
    f"--learners={LEARNERS}",
    f"--out={tmp_path}",
    "--galax_set=updates_per_call=1",
  ]
  peer_learning.main(args)
  results = json.loads((tmp_path / "results.json").read_text())
  assert len(results) == len(LEARNERS.split(","))
  for run in results.values():
    assert run["curve"][-1][0] >= 16384 and run["steps_per_s"] > 0
    assert run["final"] == run["curve"][-1][1]
  table = (tmp_path / "results.md").read_text()
  for learner in LEARNERS.split(","):
    assert f"| Breakout-MinAtar | {learner} | 1 |" in table
  assert (tmp_path / "curves.png").stat().st_size > 0
  results["Breakout-MinAtar|galax|0"]["final"] = 123.0  # kept on a rerun: not trained again
  (tmp_path / "results.json").write_text(json.dumps(results))
  peer_learning.main(args)
  assert (
    json.loads((tmp_path / "results.json").read_text())["Breakout-MinAtar|galax|0"]["final"]
    == 123.0
  )
