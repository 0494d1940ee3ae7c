"""`--help` answers and exits 0 on every script in benchmarks/ and experiments/ (absl's own
--help exited 1 on nine benchmark scripts).

Each script runs as `python -m <module> --help` would run it, in a fork of one interpreter
that imported jax, scipy and galax's config once (tests/forked_runs.py): one start-up and a
fork per script instead of an interpreter each.
"""

import glob
import os

import forked_runs
import pytest
from forked_runs import ROOT


def _scripts(folder: str) -> list[str]:
  """The modules of `folder` that run as a script (the rest are their helpers)."""
  paths = glob.glob(os.path.join(ROOT, folder, "*.py"))
  return sorted(os.path.basename(p)[:-3] for p in paths if "__main__" in open(p).read())


BENCHMARKS, EXPERIMENTS = _scripts("benchmarks"), _scripts("experiments")


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
  modules = [f"benchmarks.{n}" for n in BENCHMARKS] + [f"experiments.{n}" for n in EXPERIMENTS]
  out = tmp_path_factory.mktemp("help")
  return forked_runs.run({m: ["-m", m, "--help"] for m in modules}, out)


def _check(answers, module):
  proc = answers[module]
  assert proc["returncode"] == 0 and proc["stdout"].strip(), proc["stderr"][-1000:]


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_answers_help(answers, name):
  _check(answers, f"benchmarks.{name}")


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_answers_help(answers, name):
  _check(answers, f"experiments.{name}")
