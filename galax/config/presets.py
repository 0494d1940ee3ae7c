"""Presets for configs/: the Atari A2C block that several configs share, envpool training
envs and the A2C baselines' loss and RMSProp (the A2C of Mnih et al. 2016 as the GALA,
HTS-RL and Stable-Baselines3 codes run it). Each config keeps what is its own."""

from ml_collections import ConfigDict


def atari_envs(c: ConfigDict, env_id: str, episodic_life: bool = True) -> ConfigDict:
  """envpool's `env_id` for training: a lost life ends the training episode (unless not
  `episodic_life`), rewards clipped to [-1, 1] (the statistics stay raw)."""
  c.env.id = env_id
  c.env.episodic_life = episodic_life
  c.env.reward_clip = True
  return c


def a2c_rmsprop(c: ConfigDict, eps: float) -> ConfigDict:
  """16 envs x t_max 5, gamma 0.99, entropy 0.01, value coef 0.5; RMSProp in the PyTorch
  convention (eps outside the square root, decay 0.99) at lr 7e-4, global-norm clip 0.5.
  `eps`: 0.01 in the GALA code, 1e-5 in Kostrikov's (HTS-RL) and SB3's."""
  c.envs_per_learner = 16
  c.t_max = 5
  c.gamma = 0.99
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.optimizer.name = "rmsprop"
  c.optimizer.rmsprop_convention = "torch"
  c.optimizer.learning_rate = 7e-4
  c.optimizer.rmsprop_decay = 0.99
  c.optimizer.eps = eps
  c.optimizer.max_grad_norm = 0.5
  return c
