"""configs/pong_paac.py with the PAAC authors' frame resize: nearest neighbour.

The authors' emulator shrinks each 210x160 frame to 84x84 with `imresize(..., 'nearest')`;
envpool averages pixels (cv2's INTER_AREA) unless `use_inter_area_resize=False`. This is
the one preprocessing difference left between galax's pong_paac and their code that
reaches every observation (docs/results.md, "Pong at PAAC's authors' settings"):

  python run.py --config=docs/results/pong_paac_nearest/pong_paac_nearest.py --config.seed=2 \
      --config.total_env_steps=6000000 --workdir=runs/paac_nearest_seed2

Measured (seed 2, to 6M agent steps): the running mean of 100 games first reaches -15 at
5.78M, against 5.68M with envpool's resize, and reads -13.24 against -14.09 at 6M
(runs.md beside this file): the resize does not explain the late start.
"""

import ml_collections

from galax.config import load


def get_config():
  c = load("pong_paac")
  c.env.options = ml_collections.ConfigDict(dict(use_inter_area_resize=False))
  return c
