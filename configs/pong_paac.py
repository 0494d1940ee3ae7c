"""PAAC on Pong (Clemente et al. 2017), the paper's hyper-parameters.

32 envs, t_max 5, lr 0.0007 x 32 annealed linearly to 0, TF-style RMSProp (decay 0.99,
eps 0.1 inside the square root, mean square starting at 1 as in TF1), archnips, no
episodic life, rewards clipped, 0..30 no-op starts. The paper clips gradients at global
norm 40 and uses entropy 0.01; the authors' code uses 3.0 and 0.02
(--config.optimizer.max_grad_norm=3.0 --config.loss.entropy_coef=0.02).
The paper trains 115M agent steps (460M frames); Pong is solved far sooner.
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.env.id = "Pong-v5"
  c.env.episodic_life = False
  c.env.reward_clip = True
  c.network.name = "archnips"
  c.envs_per_learner = 32
  c.t_max = 5
  c.gamma = 0.99
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.optimizer.name = "rmsprop"
  c.optimizer.learning_rate = 0.0007
  c.optimizer.lr_scaling = "linear_envs"  # 0.0007 x 32 = 0.0224
  c.optimizer.anneal = "linear"
  c.optimizer.rmsprop_convention = "tf"
  c.optimizer.rmsprop_decay = 0.99
  c.optimizer.eps = 0.1
  c.optimizer.rmsprop_initial_scale = 1.0
  c.optimizer.max_grad_norm = 40.0
  c.total_env_steps = 20_000_000
  c.updates_per_call = 50
  c.log_every_steps = 100_000
  c.checkpoint_every_steps = 1_000_000
  c.target_return = 0.0
  return c
