"""`python -m galax.evaluate` and `galax.load_policy`: evaluate a run's checkpoint, render
videos, and one error line for bad input."""

import json
import os
import shutil

import forked_runs
import numpy as np
import pytest
from run_helpers import run_cli, tiny_config

import galax
from galax.config import Config, run_settings
from galax.config import load as load_config
from galax.envs import frames, video
from galax.evaluate import cli as evaluate_lib
from galax.training.loop import train

BAD_VIDEO_PATHS = [
  ("out.avi", "unknown extension '.avi'"),
  ("out", "unknown extension '(none)'"),
  ("missing/out.mp4", "does not exist"),
]


@pytest.fixture(scope="module")
def bad_input_answers(tmp_path_factory):
  """`python -m galax.evaluate` on each bad input, in forks of one interpreter: a folder
  that is no run, a run's config.json without checkpoints, and bad --video paths."""
  root = tmp_path_factory.mktemp("bad_input")
  config = load_config("cartpole_a2c").to_json()
  for folder in ("not_a_run", "no_checkpoints", "video"):
    (root / folder).mkdir()
  (root / "no_checkpoints" / "config.json").write_text(config)
  (root / "video" / "config.json").write_text(config)
  commands = {
    "not_a_run": [f"--workdir={root / 'not_a_run'}"],
    "no_checkpoints": [f"--workdir={root / 'no_checkpoints'}"],
  }
  for path, _ in BAD_VIDEO_PATHS:
    commands[path] = [f"--workdir={root / 'video'}", f"--video={root / 'video' / path}"]
  commands = {name: ["-m", "galax.evaluate", *args] for name, args in commands.items()}
  preload = (*forked_runs.PRELOAD, "galax.evaluate.cli")
  return forked_runs.run(commands, root, preload=preload)


def _one_error_line(proc, needle):
  assert proc["returncode"] == 2, (proc["stdout"], proc["stderr"])
  lines = proc["stderr"].strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], proc["stderr"]
  assert "Traceback" not in proc["stderr"]


@pytest.mark.slow
def test_not_a_run_directory_is_one_line(bad_input_answers):
  _one_error_line(bad_input_answers["not_a_run"], "no config.json")


@pytest.mark.slow
def test_run_without_checkpoints_is_one_line(bad_input_answers):
  _one_error_line(bad_input_answers["no_checkpoints"], "holds no complete checkpoint")


@pytest.mark.parametrize("path,needle", BAD_VIDEO_PATHS)
@pytest.mark.slow
def test_bad_video_path_is_one_line(bad_input_answers, path, needle):
  _one_error_line(bad_input_answers[path], needle)


def test_unwritable_video_directory_is_rejected(tmp_path, monkeypatch):
  monkeypatch.setattr(os, "access", lambda path, mode: False)
  with pytest.raises(ValueError, match="is not writable"):
    video.check_video_path(str(tmp_path / "out.mp4"))


def test_pick_learner():
  block = {"w": np.arange(6.0).reshape(3, 2)}
  np.testing.assert_array_equal(evaluate_lib.pick_learner(block, "first")["w"], [0, 1])
  np.testing.assert_array_equal(evaluate_lib.pick_learner(block, "2")["w"], [4, 5])
  np.testing.assert_array_equal(evaluate_lib.pick_learner(block, "average")["w"], [2, 3])
  with pytest.raises(ValueError, match="index 0..2"):
    evaluate_lib.pick_learner(block, "3")
  with pytest.raises(ValueError, match="'first', 'average' or an index"):
    evaluate_lib.pick_learner(block, "mean")  # one name for the average, as eval.learners


def test_minatar_frames_colour_each_channel():
  obs = np.zeros((10, 10, 4), np.float32)
  obs[2, 3, 1] = 1.0
  frame = frames.minatar_frame(obs)
  assert frame.shape == (160, 160, 3) and frame.dtype == np.uint8
  assert frame[2 * 16 + 5, 3 * 16 + 5].tolist() == frames._PALETTE[1].tolist()
  assert frame[0, 0].tolist() == [0, 0, 0]
  assert video.with_text(frame, "return 3").shape == (176, 160, 3)


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
  """A CartPole A2C run with 4 checkpoints (not trained to the end)."""
  workdir = str(tmp_path_factory.mktemp("cartpole"))
  train(tiny_config(), workdir=workdir, log=lambda _: None)
  return workdir


@pytest.mark.slow
def test_evaluate_writes_json_and_a_gif(cartpole_run, tmp_path):
  gif = tmp_path / "cp.gif"
  proc = run_cli(
    f"--workdir={cartpole_run}",
    "--episodes=5",
    f"--video={gif}",
    "--greedy=false",
    module="galax.evaluate",
  )
  assert proc.returncode == 0, proc.stderr
  steps = evaluate_lib.checkpoint_steps(cartpole_run)
  name = f"eval_step{steps[0]}_5ep_sampled_learner-first_seed0.json"
  record = json.loads(open(os.path.join(cartpole_run, name)).read())
  assert record["episodes"] == 5 and len(record["returns"]) == 5
  assert f"mean return {record['mean_return']:.2f}" in proc.stdout
  # The default protocol's evaluation goes beside it, and leaves it as it was.
  assert run_cli(f"--workdir={cartpole_run}", module="galax.evaluate").returncode == 0
  default = json.loads(open(os.path.join(cartpole_run, f"eval_step{steps[0]}.json")).read())
  assert default["episodes"] == 30
  assert json.loads(open(os.path.join(cartpole_run, name)).read()) == record
  import imageio.v3 as iio

  frames = iio.imread(gif, index=None)
  assert frames.shape[0] >= 10 and frames.shape[1:3] == (208, 320)
  assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).max() > 0


@pytest.mark.slow
def test_damaged_checkpoints_fall_back_or_fail_with_step(cartpole_run, tmp_path):
  workdir = str(tmp_path / "run")
  shutil.copytree(cartpole_run, workdir)
  newest, older = evaluate_lib.checkpoint_steps(workdir)[:2]
  state_dir = os.path.join(workdir, "checkpoints", str(newest), "state")
  for root, _, files in os.walk(state_dir):
    for name in files:
      if not name.endswith(".txt"):
        open(os.path.join(root, name), "wb").close()  # truncated
  said = []
  _, step = evaluate_lib.restore_params(workdir, warn=said.append)
  assert step == older and f"checkpoint {newest} does not restore" in said[0]
  args = [f"--workdir={workdir}", f"--step={newest}", "--episodes=2"]
  _one_error_line(forked_runs.answer_of(run_cli(*args, module="galax.evaluate")), "is damaged")


@pytest.mark.slow
def test_load_policy_acts_greedily_and_samples(cartpole_run):
  policy_fn, config = galax.load_policy(cartpole_run)
  assert isinstance(config, Config) and config.env.id == tiny_config().env.id
  obs = np.zeros((7, 4), np.float32)
  import jax

  assert policy_fn(obs).shape == (7,)
  assert policy_fn(obs, jax.random.PRNGKey(0)).shape == (7,)


@pytest.mark.slow
def test_evaluate_with_an_mp4_prints_no_library_warnings(cartpole_run, tmp_path):
  """gymnasium's float64-bounds warnings (envpool's spaces) and JAX's os.fork() warning
  (ffmpeg's subprocess) stay back, as in training."""
  pytest.importorskip("imageio_ffmpeg")
  workdir = tmp_path / "run"
  shutil.copytree(cartpole_run, workdir)
  config = json.loads((workdir / "config.json").read_text())
  config["env"]["id"] = "CartPole-v1"  # envpool's, whose spaces warn; the same network
  (workdir / "config.json").write_text(json.dumps(config))
  proc = run_cli(
    f"--workdir={workdir}",
    "--episodes=2",
    f"--video={tmp_path / 'cp.mp4'}",
    module="galax.evaluate",
  )
  assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr[-2000:]
  assert (tmp_path / "cp.mp4").stat().st_size > 0


@pytest.mark.slow
def test_atari_video_frames_come_from_envpool(tmp_path):
  config = load_config("pong_paac")
  config.env.max_episode_steps = 30
  frames = video.record(
    run_settings(config).env, lambda obs, key: np.zeros((1,), np.int32), 1, seed=0
  )
  assert 20 <= len(frames) <= 40 and frames[0].shape == (240, 160, 3)
  path = str(tmp_path / "pong.mp4")
  video.write_video(path, frames)
  import imageio.v2 as imageio

  reader = imageio.get_reader(path)
  try:
    assert reader.count_frames() == len(frames)
    assert reader.get_data(0).shape == (240, 160, 3)
  finally:
    reader.close()


@pytest.mark.slow
def test_the_best_evaluation_is_kept_and_evaluate_best_reads_it(tmp_path):
  """<workdir>/best holds the state of the evaluation with the highest mean return (one
  kept); `--step=best` evaluates it."""
  import csv

  config = tiny_config(checkpoint_every_steps=0, total_env_steps=2400)
  config.eval.every_steps, config.eval.episodes = 800, 3
  train(config, workdir=str(tmp_path), log=lambda _: None)
  with open(tmp_path / "eval.csv", newline="") as f:
    rows = list(csv.DictReader(f))
  means = {int(r["env_steps"]): float(r["mean_return"]) for r in rows}
  best_step = max(means, key=lambda s: (means[s], -s))  # the first of equal bests
  assert evaluate_lib.checkpoint_steps(str(tmp_path), "best") == [best_step]
  assert best_step != 2400  # measured: 12.33 at 1600, 9.33 at 2400 (not just the newest)
  meta = json.loads((tmp_path / "best" / str(best_step) / "meta" / "metadata").read_text())
  assert meta["eval_mean_return"] == pytest.approx(means[best_step])
  proc = run_cli(f"--workdir={tmp_path}", "--step=best", "--episodes=2", module="galax.evaluate")
  assert proc.returncode == 0, proc.stderr
  assert f"step {best_step}:" in proc.stdout
  _one_error_line(
    forked_runs.answer_of(run_cli(f"--workdir={tmp_path}", "--step=last", module="galax.evaluate")),
    "--step=last: give a step number or 'best'",
  )
