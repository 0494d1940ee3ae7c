"""GALA-A2C on MinAtar Breakout: 4 learners x 16 envs on a 1-peer gossip ring.

The per-learner settings of configs/minatar_a2c.py (MLP 64x64 relu on the flattened
image, Adam 1e-2) with the 64 envs split over 4 learners that each run A2C on their own
envs and, after every update, average parameters with their in-peer (weights 1/2), lr x
sqrt(4) as in GALA. At 2M steps on Breakout-MinAtar (seeds 0 / 1): 8.09 / 11.07 (with
the lr unscaled 6.44 / 6.46); the conv torso at 1e-3 x 2 sat near 5.5. The gymnax envs are vmapped
inside the learners' program, so the 4 learners can share one device (vmapped) or spread over
several.

  python run.py --config=configs/minatar_gala.py
"""

from galax.config import load


def get_config():
  c = load("minatar_a2c")
  c.num_learners = 4
  c.envs_per_learner = 16
  c.combine = "gossip"
  c.gossip.topology = "ring"
  c.gossip.peers = 1
  c.optimizer.lr_scaling = "sqrt_learners"  # 1e-2 x sqrt(4)
  return c
