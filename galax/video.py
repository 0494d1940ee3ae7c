"""Videos of a policy playing: frames from the env, the running return drawn on them.

* Atari (envpool): the emulator's RGB screen (`render_mode="rgb_array"`, 210x160), played
  in a host loop on a pool of one env built with the evaluation's options (full games, raw
  rewards, no-op starts), so the policy sees what it was trained on.
* MinAtar (gymnax): the 10x10 grid, one colour per channel (later channels on top), 16
  pixels a cell.
* CartPole (gymnax or envpool): a drawing of the cart and pole from the state.

`write_video` writes MP4 (ffmpeg from the imageio-ffmpeg wheel) or GIF (pillow) with
imageio. Paths are checked by `check_video_path` before anything is played.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator

import jax
import numpy as np
from ml_collections import ConfigDict

from galax.envs.gymnax_env import PREFIX, is_gymnax_id

VIDEO_EXTENSIONS = (".mp4", ".gif")
FPS = 15
BANNER = 16  # pixels above the game for the text

# Channel colours for MinAtar grids (RGB), cycled for games with more channels.
_PALETTE = np.array([[230, 200, 40], [220, 60, 60], [60, 160, 230], [80, 200, 100],
                     [200, 100, 220], [240, 140, 40], [150, 150, 150], [250, 250, 250],
                     [120, 80, 40], [40, 120, 120]], np.uint8)

Policy = Callable[[np.ndarray, jax.Array], np.ndarray]  # (obs [1, ...], key) -> actions [1]


def check_video_path(path: str) -> None:
  """ValueError (one line) unless `path` has a known extension in a writable directory."""
  ext = os.path.splitext(path)[1].lower()
  if ext not in VIDEO_EXTENSIONS:
    raise ValueError(f"--video {path!r}: unknown extension {ext or '(none)'!r}; use one of "
                     f"{list(VIDEO_EXTENSIONS)}.")
  directory = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(directory):
    raise ValueError(f"--video {path!r}: directory {directory!r} does not exist.")
  if not os.access(directory, os.W_OK):
    raise ValueError(f"--video {path!r}: directory {directory!r} is not writable.")


def minatar_frame(obs: np.ndarray, cell: int = 16) -> np.ndarray:
  """[10, 10, C] 0/1 channels -> [10 cell, 10 cell, 3] uint8, channel c in colour c."""
  grid = np.zeros(obs.shape[:2] + (3,), np.uint8)
  for c in range(obs.shape[-1]):
    grid[np.asarray(obs[..., c]) > 0.5] = _PALETTE[c % len(_PALETTE)]
  return np.kron(grid, np.ones((cell, cell, 1), np.uint8))


def cartpole_frame(x: float, theta: float, width: int = 320, height: int = 192) -> np.ndarray:
  """A drawing of CartPole's state: the track, the cart at x (|x| < 2.4) and the pole."""
  img = np.full((height, width, 3), 255, np.uint8)
  scale = width / 4.8
  track = int(height * 0.75)
  img[track:track + 2] = 0
  cx = int(width / 2 + x * scale)
  img[track - 12:track, max(cx - 20, 0):min(cx + 20, width)] = (60, 60, 200)
  length = 0.5 * 2 * scale  # the pole's full length is 1.0 in CartPole's units
  for t in np.linspace(0.0, 1.0, 200):
    px, py = int(cx + t * length * np.sin(theta)), int(track - 12 - t * length * np.cos(theta))
    if 0 <= px < width - 2 and 0 <= py < height - 2:
      img[py:py + 3, px:px + 3] = (200, 120, 40)
  return img


def with_text(frame: np.ndarray, text: str) -> np.ndarray:
  """The frame below a banner with `text`, padded to multiples of 16 pixels (for codecs)."""
  from PIL import Image, ImageDraw  # pylint: disable=g-import-not-at-top

  h, w = frame.shape[:2]
  height, width = -(-(h + BANNER) // 16) * 16, -(-w // 16) * 16
  canvas = np.zeros((height, width, 3), np.uint8)
  canvas[BANNER:BANNER + h, :w] = frame
  image = Image.fromarray(canvas)
  ImageDraw.Draw(image).text((3, 2), text, fill=(255, 255, 255))
  return np.asarray(image)


def _gymnax_episodes(config: ConfigDict, policy: Policy, episodes: int, seed: int
                     ) -> Iterator[tuple[np.ndarray, float, int]]:
  """(frame, return so far, episode) of each step of `episodes` gymnax games."""
  import gymnax  # pylint: disable=g-import-not-at-top

  name = config.env.id.removeprefix(PREFIX)
  env, params = gymnax.make(name)
  if config.env.max_episode_steps:
    params = params.replace(max_steps_in_episode=int(config.env.max_episode_steps))
  if "MinAtar" in name:
    draw = minatar_frame
  elif name.startswith("CartPole"):  # obs = (x, x', theta, theta')
    draw = lambda obs: cartpole_frame(float(obs[0]), float(obs[2]))
  else:
    raise ValueError(f"no renderer for {config.env.id!r}: videos cover Atari, MinAtar and "
                     "CartPole.")
  reset = jax.jit(lambda k: env.reset(k, params))
  step = jax.jit(lambda k, s, a: env.step(k, s, a, params))
  key = jax.random.PRNGKey(seed)
  for episode in range(episodes):
    key, reset_key = jax.random.split(key)
    obs, state = reset(reset_key)
    total, done, t = 0.0, False, 0
    while not done and t < params.max_steps_in_episode:
      yield draw(np.asarray(obs)), total, episode
      key, act_key, step_key = jax.random.split(key, 3)
      action = policy(np.asarray(obs)[None], act_key)[0]
      next_obs, next_state, reward, terminated, truncated, info = step(step_key, state, action)
      total += float(reward)
      done = bool(terminated) or bool(truncated)
      obs, state, t = next_obs, next_state, t + 1
    # gymnax resets inside the last step: its observation is already the next game's
    yield draw(np.asarray(info["final_observation"] if done else obs)), total, episode


def _envpool_episodes(config: ConfigDict, policy: Policy, episodes: int, seed: int
                      ) -> Iterator[tuple[np.ndarray, float, int]]:
  """(frame, return so far, episode) of each step of `episodes` envpool games; envpool's
  CartPole has no screen, so its observation (x, x', theta, theta') is drawn."""
  import envpool  # pylint: disable=g-import-not-at-top

  from galax.envs.pool import env_family, env_options  # pylint: disable=g-import-not-at-top

  family = env_family(config.env.id)
  options = env_options(config.env.id, family, False, False,
                        config.eval.max_episode_steps or config.env.max_episode_steps or None,
                        1, dict(config.env.options))
  if family == "atari":
    options["noop_max"] = int(config.eval.noop_max)
  if config.env.id.startswith("CartPole"):
    draw = lambda env, obs: cartpole_frame(float(obs[0, 0]), float(obs[0, 2]))
  else:
    options["render_mode"] = "rgb_array"
    draw = lambda env, obs: env.render()[0]
  env = envpool.make(config.env.id, env_type="gymnasium", num_envs=1, seed=seed, **options)
  key = jax.random.PRNGKey(seed)
  try:
    for episode in range(episodes):
      obs, _ = env.reset()
      total, done = 0.0, False
      while not done:  # envpool resets on the step after the last: its frame is the end
        yield draw(env, obs), total, episode
        key, act_key = jax.random.split(key)
        obs, reward, terminated, truncated, _ = env.step(np.asarray(policy(obs, act_key)))
        total += float(reward[0])
        done = bool(terminated[0] or truncated[0])
      yield draw(env, obs), total, episode
  finally:
    env.close()


def record(config: ConfigDict, policy: Policy, episodes: int, seed: int) -> list[np.ndarray]:
  """Frames of `episodes` games played by `policy`, each with its running return."""
  play = _gymnax_episodes if is_gymnax_id(config.env.id) else _envpool_episodes
  return [with_text(frame, f"episode {episode + 1}  return {total:g}")
          for frame, total, episode in play(config, policy, episodes, seed)]


def write_video(path: str, frames: list[np.ndarray], fps: int = FPS) -> None:
  """MP4 or GIF by the extension of `path` (checked by `check_video_path`)."""
  import imageio.v2 as imageio  # pylint: disable=g-import-not-at-top

  if path.lower().endswith(".gif"):
    imageio.mimwrite(path, frames, duration=1000 / fps, loop=0)
  else:
    imageio.mimwrite(path, frames, fps=fps, macro_block_size=16)
