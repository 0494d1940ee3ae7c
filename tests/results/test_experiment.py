"""The experiment runner: seeds, modes, one results file per run, the best-policy summary."""

import json
import os
import subprocess
import sys

import pytest
from run_helpers import tiny_config

from galax.config import from_data
from galax.config import load as load_config
from galax.results import experiment, seed_runs
from galax.runtime import provenance

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_parse_seeds():
  assert experiment.parse_seeds("0,1,2") == [0, 1, 2]
  assert experiment.parse_seeds("3-5") == [3, 4, 5]
  assert experiment.parse_seeds("0-1, 7") == [0, 1, 7]
  for bad, message in [
    ("", "names no seed"),
    ("1,1", "repeats"),
    ("a", "cannot read 'a'"),
    ("5-3", "cannot read '5-3'"),
  ]:
    with pytest.raises(ValueError, match=message):
      experiment.parse_seeds(bad)


def test_choose_mode():
  config = load_config("cartpole_a2c")  # stops at target return 475

  def choose(seeds, requested="auto"):
    return seed_runs.choose_mode(
      seeds,
      requested,
      num_learners=config.num_learners,
      combine=config.combine,
      lr_scaling=config.optimizer.lr_scaling,
      target_return=config.target_return,
      time_limit_s=config.time_limit_s,
    )

  mode, why = choose([0, 1])
  assert mode == "sequential" and "target_return" in why
  config.target_return = 0.0
  assert choose([0, 1, 2])[0] == "learners"
  assert choose([0, 1, 2], "sequential")[0] == "sequential"
  assert choose([0, 2])[0] == "sequential"
  assert choose([4])[0] == "sequential"
  config.num_learners, config.combine = 4, "allreduce"
  with pytest.raises(ValueError, match="1 independent learner"):
    choose([0, 1], "learners")


def test_learners_config_keeps_per_seed_budgets():
  config = load_config("cartpole_a2c")
  config.eval.every_steps = 1000
  joint = seed_runs.learners_config(from_data(config), [3, 4, 5])
  assert (joint.seed, joint.num_learners, joint.initial_params) == (3, 3, "per_learner")
  assert joint.total_env_steps == 3 * config.total_env_steps
  assert joint.eval.every_steps == 3000 and joint.log_every_steps == 3 * config.log_every_steps
  assert joint.eval.learners == "all" and joint.learner_stats
  assert config.num_learners == 1  # the original is untouched


def _config():
  """run_helpers.tiny_config (its program, which the compile cache serves), evaluated every
  2 calls and checkpointed only at the end."""
  return tiny_config(
    checkpoint_every_steps=0, keep_checkpoints=3, eval__every_steps=1600, eval__episodes=5
  )


def test_a_seeds_record_names_the_commit_its_run_started_at(tmp_path, monkeypatch):
  """Each read of git_info here returns a new commit, as if one were made while the seed
  trained: the record keeps the one its run began at (its sittings.json's)."""
  reads = iter(range(100))
  monkeypatch.setattr(provenance, "git_info", lambda: dict(commit=f"c{next(reads)}", dirty=False))
  experiment.run_experiment(
    _config(), [0], str(tmp_path), "cp", best_policy_episodes=0, log=lambda _: None
  )
  saved = json.load(open(tmp_path / "cp" / "seed0.json"))
  sitting = json.load(open(tmp_path / "cp" / "runs" / "seed0" / "sittings.json"))[0]
  assert (
    saved["git"] == dict(commit=sitting["commit"], dirty=False) == dict(commit="c0", dirty=False)
  )


def test_the_command_names_out_where_the_loop_names_workdir(capsys):
  """The loop's refusals name the galax command's --workdir; the experiment's runs live
  under --out, the flag its user typed (issue 74)."""
  from galax.config import cli

  def main(argv):
    raise ValueError(
      "--workdir 'r/cp/runs/seed0' is in use by a running galax run (pid 7); wait for it to "
      "end or stop it, or choose another --workdir."
    )

  with pytest.raises(SystemExit) as exited:
    cli.guarded(main, experiment.RUN_FOLDER_TERMS)(["experiment"])
  assert exited.value.code == 2
  assert capsys.readouterr().err == (
    "error: --out's run folder 'r/cp/runs/seed0' is in use by a running galax run (pid 7); "
    "wait for it to end or stop it, or choose another --out.\n"
  )


@pytest.mark.slow
def test_seeds_as_learners_match_sequential_runs(tmp_path):
  joint = experiment.run_experiment(
    _config(), [0, 1], str(tmp_path / "a"), "cp", log=lambda _: None
  )
  alone = experiment.run_experiment(
    _config(), [0], str(tmp_path / "b"), "cp", best_policy_episodes=0, log=lambda _: None
  )
  assert [r["seed_mode"] for r in joint] == ["learners", "learners"]
  assert alone[0]["seed_mode"] == "sequential"
  # Learner 0 of the joint run is the seed-0 run: same params, envs and sampling keys.
  assert (
    joint[0]["train_curve"]["env_steps"]
    == alone[0]["train_curve"]["env_steps"]
    == [800, 1600, 2400, 3200]
  )
  assert joint[0]["train_curve"]["mean_return"] == alone[0]["train_curve"]["mean_return"]
  assert joint[1]["train_curve"]["mean_return"] != joint[0]["train_curve"]["mean_return"]
  # Evaluations per seed at per-seed env steps; the first one sees identical starts.
  for record in joint + alone:
    assert [e["env_steps"] for e in record["evaluations"]] == [1600, 3200]
    assert record["env_steps"] == 3200 and record["simulators"] == 16
  assert joint[0]["evaluations"][0]["returns"] == alone[0]["evaluations"][0]["returns"]

  # One results file per run, with what a reader needs.
  saved = json.load(open(tmp_path / "a" / "cp" / "seed1.json"))
  assert saved["kind"] == "galax-run" and saved["seed"] == 1
  assert saved["config"]["seed"] == 1 and saved["config"]["num_learners"] == 1
  assert saved["device"]["platform"] == "cpu"
  assert saved["git"]["commit"] and len(saved["git"]["commit"]) == 40
  assert saved["steps_per_second"] > 0 and saved["train_time_s"] > 0
  assert saved["final_metric"] == pytest.approx(
    sum(sum(e["returns"]) for e in saved["evaluations"]) / 10
  )
  assert set(saved["train_curve"]) == {"env_steps", "wall_time_s", "train_time_s", "mean_return"}

  # GALA's best policy: the seed whose final evaluation scored best, re-evaluated.
  summary = json.load(open(tmp_path / "a" / "cp" / "summary.json"))
  finals = [sum(r["evaluations"][-1]["returns"]) for r in joint]
  best = summary["best_policy"]
  assert best["seed"] == finals.index(max(finals))
  assert len(best["returns"]) == 10 and best["selected_by"] == "final evaluation"
  runs, summaries = experiment.load_results(str(tmp_path / "a"))
  assert sorted(r["seed"] for r in runs) == [0, 1] and len(summaries) == 1


@pytest.mark.slow
def test_cli(tmp_path):
  args = [
    sys.executable,
    "-m",
    "galax.results.experiment",
    "--seeds=2",
    f"--out={tmp_path}",
    "--config.env.id=gymnax/CartPole-v1",
    "--config.total_env_steps=800",
    "--config.updates_per_call=10",
    "--config.tensorboard=False",
    "--config.eval.every_steps=800",
    "--config.eval.episodes=2",
    "--best_policy_episodes=2",
    "--method=A2C-test",
  ]

  def run_command():
    env = {**os.environ, "PYTHONPATH": os.path.abspath(ROOT)}
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)

  proc = run_command()
  assert proc.returncode == 0, proc.stderr[-2000:]
  record = json.load(open(tmp_path / "cartpole_a2c" / "seed2.json"))
  assert record["method"] == "A2C-test" and record["env_steps"] == 800
  assert len(record["evaluations"]) == 1
  again = run_command()  # into the same --out: one line in the command's own flags
  assert again.returncode == 2 and again.stderr.strip() == (
    f"error: --out '{tmp_path}' already holds experiment 'cartpole_a2c' (runs, seed2.json, "
    "summary.json); replace it with --overwrite, or choose another --out or --name."
  )
  bad = subprocess.run(
    args[:3] + ["--seeds=x"],
    capture_output=True,
    text=True,
    cwd=ROOT,
    timeout=300,
    env={**os.environ, "PYTHONPATH": os.path.abspath(ROOT)},
  )
  assert bad.returncode == 2 and "--seeds: cannot read 'x'" in bad.stderr
