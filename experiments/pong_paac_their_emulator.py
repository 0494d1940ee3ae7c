"""configs/pong_paac.py with the PAAC authors' emulator as far as envpool can be set to it.

Two of the emulator differences between galax's pong_paac and their code
(docs/results/history/2026-11-26.md, "PAAC at its authors' settings") are envpool options:
- frame resize: nearest neighbour, as their `imresize(..., 'nearest')`
  (`use_inter_area_resize=False`; alone in experiments/pong_paac_nearest.py);
- no FIRE after a reset (`use_fire_reset=False`): their emulator only takes no-ops.
Their start, 4 no-op steps filling the frame stack, and their reset inside the terminal
step are not envpool options.

  python run.py --config=experiments/pong_paac_their_emulator.py --config.seed=2 \\
      --config.total_env_steps=6000000 --workdir=runs/paac_their_emulator_seed2
"""

import ml_collections

from galax.configs import pong_paac


def get_config():
  c = pong_paac.get_config()
  c.env.options = ml_collections.ConfigDict(dict(use_inter_area_resize=False, use_fire_reset=False))
  return c
