"""A2C on CartPole-v1, the default job: solves it (mean return >= 475) in under a minute."""

from galax.config import base_config


def get_config():
  c = base_config()
  c.env.id = "CartPole-v1"
  c.network.name = "mlp"
  c.envs_per_learner = 16
  c.t_max = 5
  c.gamma = 0.99
  c.loss.entropy_coef = 0.01
  c.optimizer.name = "rmsprop"
  c.optimizer.learning_rate = 2e-3
  c.optimizer.max_grad_norm = 0.5
  c.total_env_steps = 1_000_000
  c.target_return = 475.0
  c.log_every_steps = 50_000
  return c
