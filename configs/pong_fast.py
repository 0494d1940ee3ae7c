"""Pong-v5 on a CPU: the fastest of the galax settings tried towards Pong's solved level (18).

A2C at Stable-Baselines3's A2C defaults: 16 envs x t_max 5, n-step returns, gamma 0.99,
entropy 0.01, value coef 0.5, PyTorch RMSProp (eps 1e-5 outside the square root, mean
square from 0, decay 0.99), lr 7e-4 constant, global-norm clip 0.5; the archnips torso
(conv 16 8x8/4, conv 32 4x4/2, fc 256) on envpool's 84x84 gray 4-frame stacks, episodic
life and clipped rewards for training, up to 30 no-ops. Stops when the running mean of the
last 100 full games reaches 18 and prints the minutes since the start, compile included.

  python run.py --config=pong_fast

Measured on a 2-core CPU (seed 0, 1,368 agent steps/s): the floor until ~0.8M agent steps,
-16.5 at 1.25M, -5.7 at 30 minutes, 18.04 at 52.2 minutes (4.28M agent steps, compile
included; greedy evaluation 20.4). Every setting tried, with its curve:
docs/results.md, "Atari: Pong and Breakout".
"""

from galax.config import base_config
from galax.config.presets import a2c_rmsprop, atari_envs


def get_config():
  c = atari_envs(base_config(), "Pong-v5")
  c.algorithm = "a2c"
  c.network.name = "archnips"
  a2c_rmsprop(c, eps=1e-5)  # SB3's eps
  c.total_env_steps = 10_000_000
  c.target_return = 18.0
  c.updates_per_call = 50
  c.log_every_steps = 50_000
  c.checkpoint_every_steps = 500_000
  return c
