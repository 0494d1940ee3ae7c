"""A2C on MinAtar Breakout (gymnax/Breakout-MinAtar), wholly on the accelerator.

MinAtar (Young & Tian 2019) is the standard small Atari proxy: 10x10xC binary channels,
here from gymnax's JAX port, so envs, rollouts and updates compile into one program on any
backend (TPU included). Network: PureJaxRL's MinAtar shape, an MLP 64x64 relu on the
flattened image (as configs/minatar_ppo.py).

64 envs x t_max 16 (1024 samples per update), GAE(0.95) returns, gamma 0.99, Adam 1e-2
annealed linearly, global-norm clip 0.5, entropy 0.01; 5M agent steps (MinAtar's returns
are per full game, no frame skip, no reward clipping). Other games: --config.env.id=
gymnax/{Asterix,Freeway,SpaceInvaders}-MinAtar.

Adam 1e-3 with the MinAtar paper's conv torso (16 3x3 + fc 128) ends Breakout-MinAtar at 2M
steps near 5.5, a plateau. Measured at 2M steps (return
of the last 100 training games, seeds 0 / 1 / 2): this config 24.3 / 6.9 / 19.8; the MLP at
5e-3 13.9 (seed 0), at 2e-2 6.5 / 12.5; the conv torso at 3e-3 6.4. One Adam step per 1024
samples needs the large rate, and even then a seed can stay on the plateau (PPO's data
reuse does not: configs/minatar_ppo.py). The conv torso: --config.network.name=minatar
--config.network.conv_impl=patches. With 16 envs per learner (the claims' learners) 1e-2
is too large for SpaceInvaders: 2 of 5 seeds collapse, and 3e-3 learns on every seed (79
vs 31 at 2M; docs/archive/results_history/2026-11-25.md, section 0b).

The papers' own A2C settings are their configs, not variants of this one:
configs/breakout_a2c.py (GALA Table 2: RMSProp 7e-4, t_max 5, 16 envs) and
configs/pong_paac.py (PAAC: RMSProp 0.0007 x n_e); `python -m experiments.claims <claim>
--settings=paper` runs them on MinAtar.

  python run.py --config=configs/minatar_a2c.py
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.env.id = "gymnax/Breakout-MinAtar"
  c.network.name = "mlp"  # images flattened
  c.network.mlp_hidden = (64, 64)
  c.network.activation = "relu"
  c.envs_per_learner = 64
  c.t_max = 16
  c.gamma = 0.99
  c.returns = "gae"
  c.gae_lambda = 0.95
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.5
  c.optimizer.name = "adam"
  c.optimizer.learning_rate = 1e-2
  c.optimizer.anneal = "linear"
  c.optimizer.eps = 1e-5
  c.optimizer.max_grad_norm = 0.5
  c.total_env_steps = 5_000_000
  c.updates_per_call = 20  # 20 x 1024 agent steps per host round trip
  c.log_every_steps = 200_000
  c.checkpoint_every_steps = 1_000_000
  return c
