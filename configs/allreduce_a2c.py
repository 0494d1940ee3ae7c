"""All-reduce A2C on Breakout (Stooke & Abbeel 2018; synchronous distributed BA3C), the
GALA paper's A2C baseline with the same 4 learners x 16 envs (Table 2).

Learners average their gradients with an all-reduce before every update, so they share
one set of parameters: mathematically one A2C learner with 64 envs (GALA footnote 2).
Hyper-parameters as configs/gala_a2c.py: t_max 5, RMSProp (PyTorch convention, eps 0.01,
alpha 0.99), lr 7e-4 x sqrt(4), clip 0.5, entropy 0.01, value coef 0.5, gamma 0.99,
episodic life + clipped rewards, GALA CNN; 40M agent steps of all learners together.
"""

from galax.config import load


def get_config():
  c = load("breakout_a2c")  # Table 2's per-learner A2C settings
  c.num_learners = 4
  c.envs_per_learner = 16
  c.combine = "allreduce"
  c.optimizer.lr_scaling = "sqrt_learners"  # 7e-4 x sqrt(4)
  return c
