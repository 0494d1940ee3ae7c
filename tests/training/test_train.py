"""End to end: the default job solves CartPole; checkpoints resume; bad input errors."""

import json
import os
import subprocess
import sys

import forked_runs
import jax
import numpy as np
import pytest

from galax.config import load as load_config
from galax.config import make_algorithm
from galax.parallel.layout import to_host
from galax.runtime import checkpoint as ckpt_lib
from galax.runtime import provenance
from galax.training.loop import train

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


@pytest.mark.slow
def test_default_job_solves_cartpole(tmp_path):
  config = load_config("cartpole_a2c")
  result = train(config, workdir=str(tmp_path), log=lambda _: None)
  assert result.mean_return >= 475.0, result.summary()
  assert result.episodes >= 100
  with open(tmp_path / "metrics.csv") as f:
    rows = f.read().splitlines()
  assert rows[0].startswith("env_steps,mean_return") and len(rows) >= 3
  assert json.load(open(tmp_path / "result.json"))["mean_return"] >= 475.0


@pytest.mark.slow
def test_resume_continues_from_the_checkpoint(tmp_path):
  # gymnax's CartPole: the program of run_helpers.tiny_config, which the compile cache
  # serves (envpool's resume: test_exact_resume).
  config = load_config("cartpole_a2c", env__id="gymnax/CartPole-v1")
  config.updates_per_call = 10
  config.total_env_steps = 1600  # 2 calls of 10 updates x 80 steps
  config.target_return = 0.0
  config.tensorboard = False
  first = train(config, workdir=str(tmp_path), log=lambda _: None)
  assert first.env_steps == 1600 and first.updates == 20

  # The checkpoint holds exactly the final learner state.
  algorithm = make_algorithm(config)
  restored, meta = ckpt_lib.Checkpointer(str(tmp_path / "checkpoints")).restore(algorithm.init())
  algorithm.env.close()
  assert meta["env_steps"] == 1600
  for a, b in zip(
    jax.tree.leaves(to_host(first.state.params)), jax.tree.leaves(to_host(restored.params))
  ):
    np.testing.assert_array_equal(a, b)
  np.testing.assert_array_equal(to_host(restored.update_count), [20])

  config.total_env_steps = 3200
  lines = []
  second = train(config, workdir=str(tmp_path), resume=True, log=lines.append)
  assert "resumed" in lines[0] and "1600" in lines[0]
  assert second.env_steps == 3200 and second.updates == 40
  np.testing.assert_array_equal(to_host(second.state.update_count), [40])
  with open(tmp_path / "metrics.csv") as f:
    steps = [int(r.split(",")[0]) for r in f.read().splitlines()[1:]]
  assert steps == sorted(steps) and steps[-1] == 3200


def _run_cli(*args):
  return subprocess.run(
    [sys.executable, os.path.join(ROOT, "run.py"), *args],
    capture_output=True,
    text=True,
    cwd=ROOT,
    timeout=120,
  )


# An unknown key's whole line (the same command): test_reliability's
# test_cli_bad_config_is_one_line.
BAD_CONFIGS = [
  (["--config.optimizer.learning_rat=1"], "Did you mean 'config.optimizer.learning_rate'"),
  (["--config.envs_per_learner=abc"], "--config.envs_per_learner=abc"),
  (["--config.env.id=Pongg-v5"], "Unknown env id 'Pongg-v5'"),
  (["--config.optimizer.name=adagrad"], "config.optimizer.name='adagrad' is not one of"),
  (
    ["--config=cartpole_a2c", "--config.network.name=archnature"],
    "network 'archnature' is convolutional and expects image observations",
  ),
]


@pytest.fixture(scope="module")
def bad_config_answers(tmp_path_factory):
  """run.py with each bad config, in forks of one interpreter (tests/forked_runs.py)."""
  commands = {" ".join(args): [os.path.join(ROOT, "run.py"), *args] for args, _ in BAD_CONFIGS}
  out = tmp_path_factory.mktemp("bad_configs")
  return forked_runs.run(commands, out, preload=forked_runs.CLI_PRELOAD)


@pytest.mark.slow
@pytest.mark.parametrize("args,message", BAD_CONFIGS)
def test_cli_rejects_bad_config(bad_config_answers, args, message):
  proc = bad_config_answers[" ".join(args)]
  assert proc["returncode"] != 0
  assert message in proc["stderr"] + proc["stdout"]
  assert "Traceback" not in proc["stderr"] and len(proc["stderr"].strip().splitlines()) == 1


@pytest.mark.slow
def test_cli_resume_without_checkpoints(tmp_path):
  proc = _run_cli("--resume", f"--workdir={tmp_path / 'nowhere'}")
  assert proc.returncode == 2
  assert "holds no run to continue: start one without --resume" in proc.stderr
  assert not (tmp_path / "nowhere").exists()


def test_config_schema_is_locked():
  config = load_config("cartpole_a2c")
  with pytest.raises(AttributeError, match="envs_per_learner"):
    config.envs_per_lerner = 4
  with pytest.raises(TypeError):
    config.envs_per_learner = "many"


def test_every_subpackage_is_listed_in_pyproject():
  """pyproject lists packages explicitly (configs/ and experiments/ install as galax.configs
  and galax.experiments)."""
  import tomllib

  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
    listed = set(tomllib.load(f)["tool"]["setuptools"]["packages"])
  found = {"galax.configs", "galax.experiments"}
  for dirpath, _, files in os.walk(os.path.join(ROOT, "galax")):
    if "__init__.py" in files:
      found.add(os.path.relpath(dirpath, ROOT).replace(os.sep, "."))
  assert listed == found


def test_progress_gives_the_share_done_and_the_time_left():
  from galax.training.metrics import progress

  assert progress(0, 10_000_000, 0, 0.0) == "0% of 10.0M"  # compiling: no rate yet
  # 1,000 steps/s, 6M steps left: 100 minutes.
  assert progress(4_000_000, 10_000_000, 100_000, 100.0) == "40% of 10.0M, 1h40m left"
  assert progress(4_000_000, 10_000_000, 100_000, 100.0, limit_left=600.0) == (
    "40% of 10.0M, 10m left"
  )
  assert progress(1600, 3200, 800, 0.1) == "50% of 3.2k, 0s left"


def test_each_sitting_and_the_result_record_the_commit(tmp_path):
  """sittings.json: one entry per sitting (its first env step and the galax commit);
  result.json: the commit of the last sitting (issue 58: runs recorded no commit)."""
  from run_helpers import tiny_config

  quiet = lambda _: None
  train(tiny_config(total_env_steps=1600), workdir=str(tmp_path), log=quiet)
  train(tiny_config(total_env_steps=3200), workdir=str(tmp_path), resume=True, log=quiet)
  sittings = json.loads((tmp_path / "sittings.json").read_text())
  assert [s["env_steps"] for s in sittings] == [0, 1600]
  commit = json.loads((tmp_path / "result.json").read_text())["git"]["commit"]
  assert commit and all(s["commit"] == commit and "dirty" in s for s in sittings)
  # The machine each sitting ran on: two runs of one seed are bitwise alike only on one.
  assert all(s["machine"] == provenance.machine() for s in sittings)
  assert sittings[0]["machine"]["jax"] == jax.__version__ and sittings[0]["machine"]["cpu"]


def test_a_commit_made_while_the_run_trains_is_not_its_commit(tmp_path, monkeypatch):
  """result.json's commit is the one its sitting started at (sittings.json's), read once:
  each later read here returns a new commit, as if one were made while the run trained."""
  from run_helpers import tiny_config

  reads = iter(range(100))
  monkeypatch.setattr(provenance, "git_info", lambda: dict(commit=f"c{next(reads)}", dirty=False))
  train(tiny_config(total_env_steps=1600), workdir=str(tmp_path), log=lambda _: None)
  sitting = json.loads((tmp_path / "sittings.json").read_text())[0]
  result = json.loads((tmp_path / "result.json").read_text())
  assert (
    result["git"] == dict(commit=sitting["commit"], dirty=False) == dict(commit="c0", dirty=False)
  )
