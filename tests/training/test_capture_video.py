"""config.capture_video: a video of one episode at each evaluation, to <workdir>/videos/,
TensorBoard and the tracker, without changing training; the flag is refused in one line
where it could not act."""

import io
import os
import time

import jax
import numpy as np
import pytest
from run_helpers import STEPS_PER_CALL, tensorboard_events, tiny_config

from galax.training.loop import train

quiet = lambda _: None


def _video_config(**overrides):
  return tiny_config(
    total_env_steps=2 * STEPS_PER_CALL,
    checkpoint_every_steps=0,
    eval__every_steps=STEPS_PER_CALL,
    eval__episodes=1,
    **overrides,
  )


def _gif_images(logdir, tag):
  """{step: encoded image} of `tag`'s image summaries in the TensorBoard events."""
  return {
    event.step: value.image.encoded_image_string
    for event in tensorboard_events(logdir)
    for value in event.summary.value
    if value.tag == tag and value.HasField("image")
  }


@pytest.mark.slow  # two short training runs
def test_each_evaluation_writes_a_video_and_a_tensorboard_gif_and_training_is_unchanged(tmp_path):
  from galax.envs import video

  with_video = train(
    _video_config(capture_video=True, tensorboard=True), workdir=str(tmp_path / "video"), log=quiet
  )
  ext = video.default_extension()
  for step in (STEPS_PER_CALL, 2 * STEPS_PER_CALL):
    path = tmp_path / "video" / "videos" / f"step{step}{ext}"
    assert path.stat().st_size > 1000, path
  images = _gif_images(str(tmp_path / "video" / "tb"), "videos/episode")
  assert sorted(images) == [STEPS_PER_CALL, 2 * STEPS_PER_CALL]
  assert all(image.startswith(b"GIF8") for image in images.values())
  plain = train(_video_config(), workdir=str(tmp_path / "plain"), log=quiet)
  same = jax.tree.map(np.array_equal, with_video.state.params, plain.state.params)
  assert all(jax.tree.leaves(same))  # the video reads the params and nothing else
  assert [r.returns for r in with_video.evaluations] == [r.returns for r in plain.evaluations]
  assert with_video.eval_time_s > 0 and not (tmp_path / "plain" / "videos").exists()


def test_a_video_goes_to_tensorboard_and_the_tracker(tmp_path):
  from galax.training.metrics import MetricsWriter

  logged = []

  class Tracker:
    def log(self, step, scalars):
      pass

    def log_video(self, step, tag, path):
      logged.append((step, tag, path))

    def close(self):
      pass

  writer = MetricsWriter(str(tmp_path), tensorboard=True, tracker=Tracker())
  frames = [np.full((32, 48, 3), c, np.uint8) for c in (0, 120, 240)]
  writer.write_video(800, "videos/episode", frames, "/run/videos/step800.mp4")
  writer.close()
  assert logged == [(800, "videos/episode", "/run/videos/step800.mp4")]
  image = _gif_images(str(tmp_path / "tb"), "videos/episode")[800]
  assert image.startswith(b"GIF8")
  from PIL import Image

  assert Image.open(io.BytesIO(image)).n_frames == 3


@pytest.mark.parametrize(
  "overrides,needle",
  [
    (dict(eval__every_steps=0), "set config.eval.every_steps > 0"),
    (dict(env__id="gymnax/Acrobot-v1"), "no renderer for 'gymnax/Acrobot-v1'"),
  ],
)
def test_capture_video_that_could_not_act_is_one_line(overrides, needle):
  from galax.config import validate

  config = _video_config(capture_video=True)
  for key, value in overrides.items():
    config[key.split("__")[0]][key.split("__")[1]] = value
  with pytest.raises(ValueError, match="config.capture_video=True") as e:
    validate(config)
  assert needle in str(e.value) and "\n" not in str(e.value)


def test_capture_video_without_a_workdir_is_one_line():
  with pytest.raises(ValueError, match="capture_video=True writes <workdir>/videos"):
    train(_video_config(capture_video=True), workdir=None, log=quiet)


def test_overwrite_deletes_the_earlier_runs_videos(tmp_path):
  from galax.runtime import workdir as rundir

  (tmp_path / "videos").mkdir()
  (tmp_path / "videos" / "step800.mp4").write_bytes(b"old")
  (tmp_path / "config.json").write_text("{}")
  rundir.start_afresh(str(tmp_path), overwrite=True)
  assert not os.path.exists(tmp_path / "videos")


@pytest.mark.slow  # W&B's service starts
def test_a_video_goes_to_wandb_offline(tmp_path, monkeypatch):
  pytest.importorskip("wandb")
  from test_tracking import _history

  from galax.envs import video
  from galax.training.tracking import WandbTracker

  monkeypatch.setenv("WANDB_SILENT", "true")
  path = str(tmp_path / "step800.gif")
  video.write_video(path, [np.full((32, 48, 3), c, np.uint8) for c in (0, 120, 240)])
  tracker = WandbTracker("galax", "", "offline", {}, str(tmp_path), str(tmp_path), False)
  tracker.log_video(800, "videos/episode", path)
  tracker.close()
  runs = list((tmp_path / "wandb").glob("offline-run-*"))
  deadline = time.monotonic() + 30
  while not (rows := _history(str(runs[0]))) and time.monotonic() < deadline:
    time.sleep(0.2)  # W&B's service writes the offline file after finish() returns
  assert rows and rows[-1]["global_step"] == 800, (runs, rows)
  assert rows[-1]["videos/episode/_type"] == "video-file", rows[-1]
  assert rows[-1]["videos/episode/path"].endswith(".gif")
