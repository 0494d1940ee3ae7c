"""IMPALA on Breakout, the off-policy baseline of HTS-RL (Liu et al. 2020, Table A3) and
GALA, run as TorchBeast (which HTS-RL used) does.

HTS-RL Table A3: unroll length 20 (t_max), batch 32 unrolls (envs_per_learner), gamma 0.99,
value loss coefficient 0.5, entropy 0.01, RMSProp momentum 0 and eps 0.01, lr 0.006,
16 actors. TorchBeast: RMSProp alpha 0.99 with eps outside the square root (PyTorch),
global-norm clip 40, lr annealed linearly to 0, losses summed over time and batch, its
baseline cost 0.5 multiplying 0.5 * sum (v_s - V)^2 (value_coef 0.25 here), episodic life
and rewards clipped to [-1, 1], up to 30 no-ops. V-trace with rho-bar = c-bar = 1.

- lr 0.006 is Table A3's value. The IMPALA paper and TorchBeast use 0.0006 / 0.00048 for
  Atari; if 0.006 is a typo, run --config.optimizer.learning_rate=0.0006.
- Network: IMPALA's shallow model ("impala_shallow": conv 16 8x8/4, conv 32 4x4/2, fc 256;
  no LSTM). HTS-RL's appendix describes TorchBeast's Nature-style net, selectable with
  --config.network.name=archnature.
- Actors: 32 envs each produce one 20-step unroll per update, acting with the learner's
  parameters of 2 updates before (impala.policy_lag; TorchBeast's 16 actors and 32-unroll
  batches give a lag of one to a few updates, growing with the number of actors).
- 20M agent steps (HTS-RL's Atari budget).
"""

from galax.config import base_config
from galax.config.presets import atari_envs


def get_config():
  c = atari_envs(base_config(), "Breakout-v5")
  c.algorithm = "impala"
  c.network.name = "impala_shallow"
  c.num_learners = 1
  c.envs_per_learner = 32
  c.t_max = 20
  c.gamma = 0.99
  c.loss.entropy_coef = 0.01
  c.loss.value_coef = 0.25
  c.optimizer.name = "rmsprop"
  c.optimizer.learning_rate = 0.006
  c.optimizer.anneal = "linear"
  c.optimizer.rmsprop_convention = "torch"
  c.optimizer.rmsprop_decay = 0.99
  c.optimizer.eps = 0.01
  c.optimizer.max_grad_norm = 40.0
  c.impala.policy_lag = 2
  c.impala.rho_bar = 1.0
  c.impala.c_bar = 1.0
  c.impala.reduction = "sum"
  c.total_env_steps = 20_000_000
  c.updates_per_call = 25
  c.log_every_steps = 100_000
  c.checkpoint_every_steps = 1_000_000
  return c
