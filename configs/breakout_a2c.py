"""A2C on Breakout with the GALA paper's A2C baseline hyper-parameters (Table 2).

16 envs, t_max 5, RMSProp (PyTorch convention, eps 0.01, alpha 0.99), lr 7e-4, global-norm
clip 0.5, entropy 0.01, value coef 0.5, gamma 0.99, episodic life and clipped rewards for
training, up to 30 no-ops; 40M agent steps. Network: the GALA code's Nature-style CNN
(conv 32-64-32 + fc 512, orthogonal init).
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.env.id = "Breakout-v5"
  c.env.episodic_life = True
  c.env.reward_clip = True
  c.network.name = "gala"
  c.envs_per_learner = 16
  c.t_max = 5
  c.gamma = 0.99
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.optimizer.name = "rmsprop"
  c.optimizer.learning_rate = 7e-4
  c.optimizer.rmsprop_convention = "torch"
  c.optimizer.rmsprop_decay = 0.99
  c.optimizer.eps = 0.01
  c.optimizer.max_grad_norm = 0.5
  c.total_env_steps = 40_000_000
  c.updates_per_call = 50
  c.log_every_steps = 100_000
  c.checkpoint_every_steps = 1_000_000
  return c
