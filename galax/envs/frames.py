"""Frames drawn from observations, for the env backends' videos (galax/envs/video.py):

* MinAtar (gymnax): the 10x10 grid, one colour per channel (later channels on top), 16
  pixels a cell.
* CartPole (gymnax or envpool): a drawing of the cart and pole from the state.

numpy only: the backends import it, below the registry that galax/envs/video.py asks.
"""

from __future__ import annotations

import numpy as np

# Channel colours for MinAtar grids (RGB), cycled for games with more channels.
_PALETTE = np.array(
  [
    [230, 200, 40],
    [220, 60, 60],
    [60, 160, 230],
    [80, 200, 100],
    [200, 100, 220],
    [240, 140, 40],
    [150, 150, 150],
    [250, 250, 250],
    [120, 80, 40],
    [40, 120, 120],
  ],
  np.uint8,
)


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
  img[track : track + 2] = 0
  cx = int(width / 2 + x * scale)
  img[track - 12 : track, max(cx - 20, 0) : min(cx + 20, width)] = (60, 60, 200)
  length = 0.5 * 2 * scale  # the pole's full length is 1.0 in CartPole's units
  for t in np.linspace(0.0, 1.0, 200):
    px, py = int(cx + t * length * np.sin(theta)), int(track - 12 - t * length * np.cos(theta))
    if 0 <= px < width - 2 and 0 <= py < height - 2:
      img[py : py + 3, px : px + 3] = (200, 120, 40)
  return img
