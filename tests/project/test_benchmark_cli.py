"""benchmarks/'s one command-line style (benchmarks/cli.py): argparse that still takes the
spellings of the absl flags some benchmarks had, and bad input as one `error:` line."""

import os
import subprocess
import sys

import pytest

from benchmarks import gala_scaling, suite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize(
  "argv, isolate, weak",
  [
    ([], True, False),
    (["--noisolate"], False, False),
    (["--isolate=false"], False, False),
    (["--isolate", "--weak_scaling"], True, True),
    (["--weak_scaling=true", "--noweak_scaling"], True, False),
  ],
)
def test_absl_boolean_spellings(argv, isolate, weak):
  args = suite.parse(argv)
  assert (args.isolate, args.weak_scaling) == (isolate, weak)


def test_comma_lists_with_and_without_equals():
  assert suite.parse(["--num_envs=16,64", "--algorithms", "raw,a2c"]).num_envs == [16, 64]
  assert suite.parse(["--num_envs", "16,64"]).num_envs == [16, 64]
  assert gala_scaling.parse(["--total_envs=64", "--learners=2,4"]).learners == [2, 4]


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize(
  "command, named",
  [
    (["suite", "--algorithms=raw,foo"], "foo"),
    (["suite", "--num_envs=16,sixty"], "sixty"),
    (["gala_scaling", "--total_envs=10", "--learners=4"], "--learners=4"),
    (["learning_check", "--baselines=dqn"], "dqn"),
    (["gymnax_throughput", "--kinds=a2c,sac"], "sac"),
    (["sharded_optimizer", "--unknown=1"], "--unknown"),
  ],
)
def test_bad_input_is_one_line(command, named):
  proc = subprocess.run(
    [sys.executable, "-m", f"benchmarks.{command[0]}", *command[1:]],
    capture_output=True,
    text=True,
    cwd=ROOT,
    timeout=120,
  )
  err = proc.stderr.strip()
  assert proc.returncode == 2, err[-1000:]
  assert err.startswith("error: ") and named in err and "\n" not in err, err[-1000:]
