"""Videos during training (`config.capture_video`, CleanRL's name).

At each evaluation (`config.eval.every_steps`, and the one at the end of the run) the
evaluated policy (`eval.learners`: first or average; learner 0 for "all"; greedy or
sampled as `eval.greedy`) plays one episode on its own env, drawn by the env backend
(galax/envs/video.py). The video goes to `<workdir>/videos/step<env steps>.mp4` (a GIF
where ffmpeg is missing), to TensorBoard as an animated GIF image (tag `videos/episode`) and
to W&B when tracking. Its time counts as evaluation time, outside the training clock, and it
reads the parameters only, so a run trains bit for bit the same with videos on or off.
"""

from __future__ import annotations

import os
from typing import Callable, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from galax.core.types import Params, ParamsBlock
from galax.envs import video
from galax.evaluate.evaluator import EvalSettings, select_params

TAG = "videos/episode"
VIDEO_SEED = 20_000  # the video's env seed: config.seed + this, every time (comparable starts)

ApplyFn = Callable[[Params, jax.Array], tuple[jax.Array, jax.Array]]


class VideoSink(Protocol):
  """Where a video goes besides its file: TensorBoard and the tracker (`MetricsWriter`)."""

  def write_video(self, step: int, tag: str, frames: list[np.ndarray], path: str) -> None: ...


class VideoHook:
  """Records one episode per evaluation (see the module docstring); `EvalHook.run` calls
  it, and counts its time as evaluation time."""

  def __init__(
    self,
    settings: EvalSettings,
    apply_fn: ApplyFn,
    num_learners: int,
    workdir: str,
    sink: VideoSink | None,
  ):
    """`settings`: the run's evaluation; `sink`: the run's writer (process 0's)."""
    self.settings, self.num_learners, self.sink = settings, num_learners, sink
    self.directory = os.path.join(workdir, "videos")
    self._which = "first" if settings.learners == "all" else settings.learners
    self._greedy = jax.jit(lambda p, obs: jnp.argmax(apply_fn(p, obs)[0], axis=-1))
    self._sampled = jax.jit(lambda p, obs, key: jax.random.categorical(key, apply_fn(p, obs)[0]))

  def record(self, params: ParamsBlock, env_steps: int) -> str:
    """Plays and writes the video of the learners' host `params` ([n, ...]) at
    `env_steps`; returns its path."""
    chosen, _ = select_params(params, self._which, self.num_learners)
    one = jax.tree.map(lambda x: jnp.asarray(x[0]), chosen)
    if self.settings.greedy:
      policy = lambda obs, key: np.asarray(self._greedy(one, obs))
    else:
      policy = lambda obs, key: np.asarray(self._sampled(one, obs, key))
    frames = video.record(self.settings.env, policy, 1, self.settings.seed + VIDEO_SEED)
    os.makedirs(self.directory, exist_ok=True)
    path = os.path.join(self.directory, f"step{env_steps}{video.default_extension()}")
    video.write_video(path, frames)
    if self.sink is not None:
      self.sink.write_video(env_steps, TAG, frames, path)
    return path
