"""A2C on MinAtar Breakout (gymnax/Breakout-MinAtar), wholly on the accelerator.

MinAtar (Young & Tian 2019) is the standard small Atari proxy: 10x10xC binary channels,
here from gymnax's JAX port, so envs, rollouts and updates compile into one program on any
backend (TPU included). Network "minatar": the MinAtar paper's own, one conv of 16 3x3
filters (stride 1) then fc 128 (ReLU); its 0/1 float channels are used as they are (no
/255). A conv torso rather than an MLP because MinAtar's objects are local patterns that
move over the grid: the paper's baselines all use this torso.

64 envs x t_max 16 (1024 samples per update), GAE(0.95) returns, gamma 0.99, Adam 1e-3
annealed linearly, global-norm clip 0.5, entropy 0.01; 5M agent steps (MinAtar's returns
are per full game, no frame skip, no reward clipping). Other games: --config.env.id=
gymnax/{Asterix,Freeway,SpaceInvaders}-MinAtar.

  python run.py --config=configs/minatar_a2c.py
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.env.id = "gymnax/Breakout-MinAtar"
  c.network.name = "minatar"
  # Convolutions as patches @ kernel (the same network): on CPU the updates then run in
  # one XLA loop (update_loop auto = scan) as fast as unrolled XLA convolutions; 1-3.4x
  # faster for this config and the GALA / HTS / PPO ones built like it (docs/benchmarks.md).
  c.network.conv_impl = "patches"
  c.envs_per_learner = 64
  c.t_max = 16
  c.gamma = 0.99
  c.returns = "gae"
  c.gae_lambda = 0.95
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.optimizer.name = "adam"
  c.optimizer.learning_rate = 1e-3
  c.optimizer.anneal = "linear"
  c.optimizer.eps = 1e-5
  c.optimizer.max_grad_norm = 0.5
  c.total_env_steps = 5_000_000
  c.updates_per_call = 20  # 20 x 1024 agent steps per host round trip
  c.log_every_steps = 200_000
  c.checkpoint_every_steps = 1_000_000
  return c
