"""PPO on MinAtar Breakout (gymnax/Breakout-MinAtar): PureJaxRL's MinAtar PPO settings.

The settings of PureJaxRL's MinAtar PPO (its examples' brax_minatar notebook), the field's
JAX baseline: an MLP 64x64 relu on the flattened 10x10xC image, 64 envs x unroll 128,
4 epochs x 8 minibatches (1024 samples each), GAE(0.95), gamma 0.99, clip 0.2 (policy
and value), entropy 0.01, value coef 0.5, Adam 5e-3 annealed linearly to 0, global-norm
clip 0.5, advantages normalized, one gradient per minibatch; 5M agent steps.

Adam 5e-4 with the MinAtar paper's conv torso (16 3x3 + fc 128) gives 8.97 at 2M steps on
Breakout-MinAtar (seed 0, return of the last 100 training episodes); 5e-3 with the conv
torso 24.2; 5e-4 with this MLP 11.4; 5e-3 with this MLP 29.5 (the peer's 3 seeds:
28.2-38.7). The learning rate, 10x too small, was the plateau; the network adds the rest.
`benchmarks/peer_learning.py` compares this config with rejax's PPO at the same settings.
The conv torso: --config.network.name=minatar --config.network.conv_impl=patches.

  python run.py --config=configs/minatar_ppo.py
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.algorithm = "ppo"
  c.env.id = "gymnax/Breakout-MinAtar"
  c.network.name = "mlp"  # images flattened
  c.network.mlp_hidden = (64, 64)
  c.network.activation = "relu"
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
  c.optimizer.learning_rate = 5e-3
  c.optimizer.anneal = "linear"
  c.optimizer.eps = 1e-5
  c.optimizer.max_grad_norm = 0.5
  c.grad_chunks = 1  # one gradient per minibatch
  c.total_env_steps = 5_000_000
  c.updates_per_call = 2  # 2 x 8192 agent steps per host round trip
  c.log_every_steps = 200_000
  c.checkpoint_every_steps = 1_000_000
  return c
