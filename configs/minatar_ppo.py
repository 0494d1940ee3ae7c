"""PPO on MinAtar Breakout (gymnax/Breakout-MinAtar), the shape of PureJaxRL's / gymnax's
MinAtar PPO baselines.

64 envs x unroll 128, 4 epochs x 8 minibatches (1024 samples each), GAE(0.95), gamma
0.99, clip 0.2, entropy 0.01, value coef 0.5, Adam 5e-4 annealed linearly, global-norm
clip 0.5, advantages normalized, one gradient per minibatch; 5M agent steps. Network "minatar" (conv 16 3x3 + fc 128,
the MinAtar paper's, as patch convolutions; see configs/minatar_a2c.py for why).

  python run.py --config=configs/minatar_ppo.py
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.algorithm = "ppo"
  c.env.id = "gymnax/Breakout-MinAtar"
  c.network.name = "minatar"
  c.network.conv_impl = "patches"  # scanned minibatches, 2.1x faster on CPU (minatar_a2c.py)
  c.envs_per_learner = 64
  c.t_max = 128
  c.gamma = 0.99
  c.returns = "gae"
  c.gae_lambda = 0.95
  c.ppo.epochs = 4
  c.ppo.minibatches = 8
  c.ppo.clip = 0.2
  c.ppo.normalize_advantages = True
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.optimizer.name = "adam"
  c.optimizer.learning_rate = 5e-4
  c.optimizer.anneal = "linear"
  c.optimizer.eps = 1e-5
  c.optimizer.max_grad_norm = 0.5
  # One gradient per minibatch (CPU's auto chunking would cut each minibatch gradient
  # into 8; on accelerators auto is 1 anyway).
  c.grad_chunks = 1
  c.total_env_steps = 5_000_000
  c.updates_per_call = 2  # 2 x 8192 agent steps per host round trip
  c.log_every_steps = 200_000
  c.checkpoint_every_steps = 1_000_000
  return c
