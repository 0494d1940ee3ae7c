"""A2C on Breakout with the GALA paper's A2C baseline hyper-parameters (Table 2).

16 envs, t_max 5, RMSProp (PyTorch convention, eps 0.01, alpha 0.99), lr 7e-4, global-norm
clip 0.5, entropy 0.01, value coef 0.5, gamma 0.99, episodic life and clipped rewards for
training, up to 30 no-ops; 40M agent steps. Network: the GALA code's Nature-style CNN
(conv 32-64-32 + fc 512, orthogonal init).
"""

from galax.config import base_config
from galax.config.presets import a2c_rmsprop, atari_envs


def get_config():
  c = atari_envs(base_config(), "Breakout-v5")
  c.network.name = "gala"
  # The paper's Table 2 eps. The authors' code runs PyTorch's RMSprop at eps 1e-5
  # (facebookresearch/gala gala/arguments.py:36-39, gala_a2c.py:29-30): at 0.01 outside the
  # square root the steps are ~45x smaller, and Breakout did not learn in 1.36M agent steps
  # (docs/results/atari_gala_hts/PREREGISTRATION.md, A-code).
  a2c_rmsprop(c, eps=0.01)
  c.total_env_steps = 40_000_000
  c.updates_per_call = 50
  c.log_every_steps = 100_000
  c.checkpoint_every_steps = 1_000_000
  return c
