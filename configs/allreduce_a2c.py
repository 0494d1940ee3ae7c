"""All-reduce A2C on Breakout (Stooke & Abbeel 2018; synchronous distributed BA3C), the
GALA paper's A2C baseline with the same 4 learners x 16 envs (Table 2).

Learners average their gradients with an all-reduce before every update, so they share
one set of parameters: mathematically one A2C learner with 64 envs (GALA footnote 2).
Hyper-parameters as configs/gala_a2c.py: t_max 5, RMSProp (PyTorch convention, eps 0.01,
alpha 0.99), lr 7e-4 x sqrt(4), clip 0.5, entropy 0.01, value coef 0.5, gamma 0.99,
episodic life + clipped rewards, GALA CNN; 40M agent steps of all learners together.
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.env.id = "Breakout-v5"
  c.env.episodic_life = True
  c.env.reward_clip = True
  c.network.name = "gala"
  c.num_learners = 4
  c.envs_per_learner = 16
  c.combine = "allreduce"
  c.t_max = 5
  c.gamma = 0.99
  c.returns = "nstep"
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.optimizer.name = "rmsprop"
  c.optimizer.learning_rate = 7e-4
  c.optimizer.lr_scaling = "sqrt_learners"
  c.optimizer.anneal = "none"
  c.optimizer.rmsprop_convention = "torch"
  c.optimizer.rmsprop_decay = 0.99
  c.optimizer.eps = 0.01
  c.optimizer.max_grad_norm = 0.5
  c.total_env_steps = 40_000_000
  c.updates_per_call = 50
  c.log_every_steps = 100_000
  c.checkpoint_every_steps = 1_000_000
  return c
