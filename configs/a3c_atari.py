"""A3C on Breakout, the asynchronous baseline of GALA (Assran et al. 2019, Table 2 and
appendix C.1: the large-batch A3C of Stooke & Abbeel 2018) and of HTS-RL.

4 learners x 16 envs (64 simulators), t_max 5, RMSProp (PyTorch convention, eps 0.01,
alpha 0.99), lr 7e-4 not scaled with the number of learners, global-norm clip 0.5 on each
learner's gradient, entropy 0.01, value coef 0.5, gamma 0.99, episodic life, clipped
rewards, up to 30 no-ops; the GALA code's network; 40M agent steps.

Asynchrony (galax/algorithms/a3c.py): each round applies the 4 gradients one after another
in a random order, each computed at shared parameters s updates old, s ~ U{0..3}. Applied
at position i of the round, a gradient is s + i updates stale: 0..6, mean 3 = n - 1, the
staleness of n equally fast asynchronous learners in steady state.
"""

from galax.config import load


def get_config():
  c = load("breakout_a2c")  # Table 2's per-learner settings (lr not scaled for A3C)
  c.algorithm = "a3c"
  c.num_learners = 4
  c.envs_per_learner = 16
  c.a3c.max_staleness = 3
  c.a3c.staleness = "uniform"
  c.a3c.shuffle_order = True
  return c
