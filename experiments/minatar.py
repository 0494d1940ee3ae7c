"""Base configs of the claims at MinAtar scale (gymnax MinAtar games, the `minatar` torso).

MinAtar (Young & Tian 2019) keeps Atari's game mechanics on a 10x10 grid with a few
binary channels, so an actor-critic learns Breakout in a few million agent steps on a CPU
instead of tens of millions of frames on a GPU. Rewards are already small integers: no
clipping, no episodic life (gymnax has neither).

* `a2c_config`: the per-learner A2C of GALA Table 2 (t_max 5, RMSProp in the PyTorch
  convention with eps 0.01 and alpha 0.99, lr 7e-4, global-norm clip 0.5, entropy 0.01,
  value coefficient 0.5, gamma 0.99) with 16 envs.
* `paac_config`: PAAC's settings (Clemente et al. 2017: lr 0.0007 x n_e annealed to 0,
  TF RMSProp with eps 0.1 inside the square root and the mean square starting at 1,
  global-norm clip 40, entropy 0.01).
* `ppo_config`: PPO with GAE at MinAtar settings (64 envs x 128 steps, 4 epochs of 8
  minibatches, Adam lr 5e-4 annealed, clip 0.2, entropy 0.01, gamma 0.99, lambda 0.95).

`scale_down` turns any of them into a CI-sized run (a tiny fc layer).
"""

from __future__ import annotations

import ml_collections

from galax.config import base_config

GAMES = ("gymnax/Breakout-MinAtar", "gymnax/Asterix-MinAtar")
EVALS_PER_RUN = 20  # evaluations per run: the final metric uses the last 10


def _common(env_id: str, total_env_steps: int) -> ml_collections.ConfigDict:
  c = base_config()
  c.env.id = env_id
  c.network.name = "minatar"
  c.total_env_steps = int(total_env_steps)
  c.gamma = 0.99
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.tensorboard = False
  c.energy = False
  c.checkpoint_every_steps = 0
  c.eval.episodes = 10
  c.eval.greedy = False  # MinAtar policies are scored as they act (sampled actions)
  c.eval.every_steps = max(1, int(total_env_steps) // EVALS_PER_RUN)
  c.log_every_steps = max(1, int(total_env_steps) // 50)
  return c


def a2c_config(env_id: str, total_env_steps: int) -> ml_collections.ConfigDict:
  """GALA Table 2's per-learner A2C, 16 envs."""
  c = _common(env_id, total_env_steps)
  c.algorithm = "a2c"
  c.envs_per_learner = 16
  c.t_max = 5
  c.optimizer.name = "rmsprop"
  c.optimizer.learning_rate = 7e-4
  c.optimizer.rmsprop_convention = "torch"
  c.optimizer.rmsprop_decay = 0.99
  c.optimizer.eps = 0.01
  c.optimizer.max_grad_norm = 0.5
  c.updates_per_call = 50
  return c


def paac_config(env_id: str, total_env_steps: int, num_envs: int) -> ml_collections.ConfigDict:
  """PAAC with n_e = `num_envs` and lr = 0.0007 x n_e (the paper's linear scaling)."""
  c = _common(env_id, total_env_steps)
  c.algorithm = "a2c"
  c.envs_per_learner = int(num_envs)
  c.t_max = 5
  c.optimizer.name = "rmsprop"
  c.optimizer.learning_rate = 0.0007
  c.optimizer.lr_scaling = "linear_envs"
  c.optimizer.anneal = "linear"
  c.optimizer.rmsprop_convention = "tf"
  c.optimizer.rmsprop_decay = 0.99
  c.optimizer.eps = 0.1
  c.optimizer.rmsprop_initial_scale = 1.0
  c.optimizer.max_grad_norm = 40.0
  c.updates_per_call = 50
  return c


def ppo_config(env_id: str, total_env_steps: int) -> ml_collections.ConfigDict:
  c = _common(env_id, total_env_steps)
  c.algorithm = "ppo"
  c.envs_per_learner = 64
  c.t_max = 128
  c.returns = "gae"
  c.gae_lambda = 0.95
  c.ppo.epochs = 4
  c.ppo.minibatches = 8
  c.ppo.clip = 0.2
  c.ppo.normalize_advantages = True
  c.optimizer.name = "adam"
  c.optimizer.learning_rate = 5e-4
  c.optimizer.anneal = "linear"
  c.optimizer.eps = 1e-5
  c.optimizer.max_grad_norm = 0.5
  c.updates_per_call = 2
  return c


def scale_down(c: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """A CI-sized version of a claim config: a 16-unit fc layer, one update per call (so
  that a few thousand steps still see several evaluations), PPO batches of 8 x 16."""
  c.network.fc_width = 16
  c.updates_per_call = 1
  if c.algorithm in ("ppo", "hts_ppo"):
    c.envs_per_learner, c.t_max = 8, 16
  return c
