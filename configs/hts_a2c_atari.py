"""HTS-A2C on Atari (Liu et al. 2020), the paper's A2C hyper-parameters (Table A3).

The paper's A2C and HTS-A2C use Kostrikov's pytorch-a2c-ppo-acktr defaults: 16 envs,
unroll (t_max) 5, gamma 0.99, value coef 0.5, entropy 0.01, RMSProp (PyTorch convention:
eps 1e-5 outside the square root, alpha 0.99, no momentum), lr 7e-4 constant, global-norm
clip 0.5; episodic life and clipped rewards for training, up to 30 no-op starts, frame
skip 4, 84x84 gray, stack 4; 20M agent steps (the paper's 4 actors: see hts.num_actors).
Network (Appendix F.1): conv 32 8x8/4, 64 4x4/2, 64 3x3/1, fc 512 (archnature).

HTS: the sync interval alpha is one A2C rollout (5 steps; the paper does not give alpha
for Atari): every segment collects 5 steps per env with theta_k while the learner applies
the gradient of the previous 5 steps, taken at theta_{k-1}. Its 5 per-step gradient units
run one per env step, between envpool's send and recv (galax/algorithms/hts/segment.py).

  python run.py --config=configs/hts_a2c_atari.py --config.env.id=Breakout-v5
  python run.py --config=configs/hts_a2c_atari.py --config.algorithm=a2c   # the baseline
"""

from galax.config import base_config
from galax.config.presets import a2c_rmsprop, atari_envs


def get_config():
  c = atari_envs(base_config(), "Pong-v5")
  c.algorithm = "hts_a2c"
  c.network.name = "archnature"
  a2c_rmsprop(c, eps=1e-5)  # Kostrikov's eps
  c.returns = "nstep"
  c.hts.alpha = 5  # = t_max: one A2C rollout per segment
  c.hts.delayed = True
  c.hts.microbatches = 5  # one per-step gradient unit per env step
  # Table A3 lists 4 actors (GPU forward-pass processes). Here an actor group is a pool
  # with its own forward pass; on CPU 4 groups of 4 envs measured no faster than 1
  # (benchmarks/hts.py), so the default is 1. --config.hts.num_actors=4 for the paper's.
  c.hts.num_actors = 1
  c.total_env_steps = 20_000_000
  c.updates_per_call = 50
  c.log_every_steps = 100_000
  c.checkpoint_every_steps = 1_000_000
  return c
