"""Where a run stands (galax/training/progress.py): one stop rule for the loop and for a
resumed run, and a checkpoint's meta round trip. Fast: no JAX program is built."""

import ast
import os

import numpy as np
import pytest

from galax.training.progress import Progress, Stop, StopRules

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def _add(tracker, episode_return: float) -> None:
  tracker.add(np.ones((1, 1)), np.full((1, 1), episode_return), np.full((1, 1), 100))


def _progress(updates: int, returns: list[float]) -> Progress:
  progress = Progress(stats_window=10, num_learners=2, updates=updates, env_steps=updates * 8)
  for r in returns:
    _add(progress.tracker, r)
  return progress


@pytest.mark.parametrize(
  "updates, returns, train_s, want",
  [
    (5, [1.0], 0.0, Stop.NONE),
    (10, [1.0], 0.0, Stop.BUDGET),
    (5, [20.0], 0.0, Stop.TARGET_RETURN),
    (10, [20.0], 0.0, Stop.TARGET_RETURN),  # the target reached on the last update counts
    (5, [1.0], 60.0, Stop.TIME_LIMIT),
    (10, [1.0], 60.0, Stop.TIME_LIMIT),
    (5, [], 0.0, Stop.NONE),  # no finished episode: no target reached
  ],
)
def test_stop_reason(updates, returns, train_s, want):
  rules = StopRules(total_updates=10, target_return=18.0, time_limit_s=60.0)
  assert _progress(updates, returns).stop_reason(rules, train_s) is want


def test_no_target_or_limit_means_only_the_budget_stops():
  rules = StopRules(total_updates=10, target_return=0.0, time_limit_s=0.0)
  assert _progress(5, [1e9]).stop_reason(rules, 1e9) is Stop.NONE
  assert _progress(10, [1e9]).stop_reason(rules, 1e9) is Stop.BUDGET


def test_stop_text_names_the_rule():
  rules = StopRules(total_updates=10, target_return=18.0, time_limit_s=60.0)
  progress = _progress(10, [1.0])
  assert progress.stop_text(Stop.BUDGET, rules) == "10 of 10 updates done"
  assert progress.stop_text(Stop.TARGET_RETURN, rules) == "target return 18.0 reached"
  assert progress.stop_text(Stop.TIME_LIMIT, rules) == "time limit 60.0s reached"


def test_meta_round_trip_continues_counts_clocks_and_episodes():
  saved = _progress(7, [1.0, 2.0, 3.0])
  _add(saved.learner_trackers[1], 5.0)
  saved.clock.begin(now=100.0, env_steps=saved.env_steps)
  meta = saved.to_meta(now=130.0)
  restored = Progress(stats_window=10, num_learners=2)
  restored.load_meta(meta)
  assert (restored.env_steps, restored.updates) == (56, 7)
  assert restored.clock.elapsed_before == restored.clock.train_before == 30.0
  assert restored.tracker.mean_return == 2.0 and restored.tracker.completed == 3
  assert restored.learner_trackers[1].mean_return == 5.0
  assert restored.to_meta(now=0.0)["tracker"] == meta["tracker"]


def test_the_loop_is_functions_and_hooks_not_one_run_object():
  """train's loop reads top to bottom: no class in loop.py, and the loop itself is short."""
  path = os.path.join(ROOT, "galax", "training", "loop.py")
  tree = ast.parse(open(path).read())
  assert not [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
  loop = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_loop")
  assert loop.end_lineno - loop.lineno + 1 <= 40
