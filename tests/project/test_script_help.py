"""`--help` answers and exits 0 on every script in benchmarks/ and experiments/ (absl's own
--help exited 1 on nine benchmark scripts)."""

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _scripts(folder: str) -> list[str]:
  """The modules of `folder` that run as a script (the rest are their helpers)."""
  paths = glob.glob(os.path.join(ROOT, folder, "*.py"))
  return sorted(os.path.basename(p)[:-3] for p in paths if "__main__" in open(p).read())


BENCHMARKS, EXPERIMENTS = _scripts("benchmarks"), _scripts("experiments")


def _help(command: list[str], cwd: str) -> subprocess.CompletedProcess:
  return subprocess.run(
    [sys.executable, *command, "--help"], capture_output=True, text=True, cwd=cwd, timeout=120
  )


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_answers_help(name):
  proc = _help(["-m", f"benchmarks.{name}"], ROOT)
  assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-1000:]


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_answers_help(name):
  proc = _help(["-m", f"experiments.{name}"], ROOT)
  assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-1000:]
