"""Pong-v5 with many envs: PPO at 64 envs, for a box whose env threads are many (a GPU box).

The config of the many-env search (docs/benchmarks.md, "Pong with many envs"):
CleanRL's envpool PPO per sample, spread over 8x its envs. CleanRL runs 8 envs x 128 steps
(1,024 samples), 4 epochs x 4 minibatches of 256; here 64 envs x 32 steps (2,048 samples),
4 epochs x 8 minibatches of 256, so every sample is reused 4 times and each gradient sees
256 samples, as in CleanRL, while a rollout steps 64 envs at once. GAE(0.95), gamma 0.99,
clip 0.1 (ratio and value), entropy 0.01, value coef 0.5, Adam 2.5e-4 (eps 1e-5) annealed
linearly over CleanRL's 10M agent steps, global-norm clip 0.5, advantages normalized,
the archnature torso on envpool's 84x84 gray 4-frame stacks, episodic life and clipped
rewards for training. Stops when the running mean of the last 100 full games reaches 18.

  python run.py --config=pong_many

Agent steps to a running mean of 18 on H200 boxes with 16 cores: seed 0 3,461,120 (236 s
of training), seed 1 1,863,680 (175 s), seed 2 1,904,640 (204 s); seed 1 on a 2-core CPU
1,699,840. The search's table has every setting tried.
"""

from galax.config import base_config
from galax.config.presets import atari_envs


def get_config():
  c = atari_envs(base_config(), "Pong-v5")
  c.algorithm = "ppo"
  c.network.name = "archnature"
  c.envs_per_learner = 64
  c.t_max = 32
  c.gamma = 0.99
  c.returns = "gae"
  c.gae_lambda = 0.95
  c.ppo.epochs = 4
  c.ppo.minibatches = 8
  c.ppo.clip = 0.1
  c.ppo.normalize_advantages = True
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.optimizer.name = "adam"
  c.optimizer.learning_rate = 2.5e-4
  c.optimizer.eps = 1e-5
  c.optimizer.anneal = "linear"
  c.optimizer.anneal_steps = 10_000_000
  c.optimizer.max_grad_norm = 0.5
  c.total_env_steps = 2_500_000
  c.target_return = 18.0
  c.updates_per_call = 10  # 20,480 agent steps per host round trip
  c.log_every_steps = 50_000
  c.checkpoint_every_steps = 250_000
  return c
