"""Videos of a policy playing: frames from the env, the running return drawn on them.

* Atari (envpool): the emulator's RGB screen (`render_mode="rgb_array"`, 210x160), played
  in a host loop on a pool of one env built with the evaluation's options (full games, raw
  rewards, no-op starts), so the policy sees what it was trained on.
* MinAtar (gymnax) and CartPole (gymnax or envpool): drawings of the observation or state
  (galax/envs/frames.py).

`write_video` writes MP4 (ffmpeg from the imageio-ffmpeg wheel) or GIF (pillow) with
imageio. Paths are checked by `check_video_path` before anything is played. Each env
backend plays its games (`EnvBackend.episodes`) with the frame drawings of
galax/envs/frames.py, below the backends (this module asks the registry for them).
"""

from __future__ import annotations

import io
import os
import warnings

import numpy as np

from galax.envs.backend import EnvSettings, Policy
from galax.envs.registry import backend_for

VIDEO_EXTENSIONS = (".mp4", ".gif")
FPS = 15
BANNER = 16  # pixels above the game for the text


def check_video_path(path: str) -> None:
  """ValueError (one line) unless `path` has a known extension in a writable directory."""
  ext = os.path.splitext(path)[1].lower()
  if ext not in VIDEO_EXTENSIONS:
    raise ValueError(
      f"--video {path!r}: unknown extension {ext or '(none)'!r}; use one of "
      f"{list(VIDEO_EXTENSIONS)}."
    )
  directory = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(directory):
    raise ValueError(f"--video {path!r}: directory {directory!r} does not exist.")
  if not os.access(directory, os.W_OK):
    raise ValueError(f"--video {path!r}: directory {directory!r} is not writable.")


def check_capture(env_id: str) -> None:
  """One ValueError line unless training-time videos (`config.capture_video`) of `env_id`
  can be drawn (its backend's `renders`) and written (imageio, pillow)."""
  if not backend_for(env_id).renders(env_id):
    raise ValueError(
      f"config.capture_video=True: no renderer for {env_id!r} (videos cover "
      "Atari, MinAtar, CartPole and gymnasium envs that render rgb_array)."
    )
  try:
    import imageio  # noqa: F401
    import PIL  # noqa: F401
  except ImportError:
    raise ValueError(
      "config.capture_video=True needs imageio and pillow: pip install "
      "imageio imageio-ffmpeg pillow (galax's 'video' extra)."
    ) from None


def with_text(frame: np.ndarray, text: str) -> np.ndarray:
  """The frame below a banner with `text`, padded to multiples of 16 pixels (for codecs)."""
  from PIL import Image, ImageDraw

  h, w = frame.shape[:2]
  height, width = -(-(h + BANNER) // 16) * 16, -(-w // 16) * 16
  canvas = np.zeros((height, width, 3), np.uint8)
  canvas[BANNER : BANNER + h, :w] = frame
  image = Image.fromarray(canvas)
  ImageDraw.Draw(image).text((3, 2), text, fill=(255, 255, 255))
  return np.asarray(image)


def record(env: EnvSettings, policy: Policy, episodes: int, seed: int) -> list[np.ndarray]:
  """Frames of `episodes` games of `env` (a run's `EnvSettings`) played by `policy` (the
  env backend's `episodes`), each with its running return."""
  play = backend_for(env.id).episodes
  return [
    with_text(frame, f"episode {episode + 1}  return {total:g}")
    for frame, total, episode in play(env, policy, episodes, seed)
  ]


def gif_bytes(frames: list[np.ndarray], fps: int = FPS) -> bytes:
  """An animated GIF of `frames`, in memory (TensorBoard's image dashboard plays it)."""
  from PIL import Image

  images = [Image.fromarray(np.asarray(f, np.uint8)) for f in frames]
  out = io.BytesIO()
  images[0].save(
    out, format="GIF", save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0
  )
  return out.getvalue()


def default_extension() -> str:
  """ ".mp4" where ffmpeg is installed (the imageio-ffmpeg wheel), else ".gif"."""
  try:
    import imageio_ffmpeg  # noqa: F401
  except ImportError:
    return ".gif"
  return ".mp4"


def write_video(path: str, frames: list[np.ndarray], fps: int = FPS) -> None:
  """MP4 or GIF by the extension of `path` (checked by `check_video_path`)."""
  import imageio.v2 as imageio

  if path.lower().endswith(".gif"):
    imageio.mimwrite(path, frames, duration=1000 / fps, loop=0)
    return
  with warnings.catch_warnings():  # JAX's, on the fork of ffmpeg's process (which only execs)
    warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
    imageio.mimwrite(path, frames, fps=fps, macro_block_size=16)
