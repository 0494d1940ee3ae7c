"""Synchronous PPO on GFootball academy scenarios, the HTS-RL paper's PPO baseline (Table A6).

16 envs, unroll 128, gamma 0.993, GAE lambda 0.95, PPO clip 0.08 (also on the value
loss), 2 epochs x 8 minibatches (256 samples each), advantages normalized over the batch,
Adam lr 3.43e-4 (eps 1e-5) annealed linearly to 0 over the run (per minibatch step),
global-norm clip 0.64, entropy 0.003, value coef 0.5 (times 1/2 max(..), as their code);
5M agent steps. Network (Appendix F.2): conv 32 8x8/4, 64 4x4/2, 64 3x3/1, fc 512 on the
72x96x4 super-mini-map (archnature, HWC). Rewards: envpool's scoring reward.

The 11 academy scenarios: gfootball/academy_{empty_goal_close, empty_goal, run_to_score,
run_to_score_with_keeper, pass_and_shoot_with_keeper, run_pass_and_shoot_with_keeper,
3_vs_1_with_keeper, corner, counterattack_easy, counterattack_hard,
single_goal_versus_lazy}-v1.

  python run.py --config=configs/ppo_gfootball.py
  python run.py --config=configs/ppo_gfootball.py \
      --config.env.id=gfootball/academy_counterattack_hard-v1
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.algorithm = "ppo"
  c.env.id = "gfootball/academy_3_vs_1_with_keeper-v1"
  c.network.name = "archnature"
  c.envs_per_learner = 16
  c.t_max = 128
  c.gamma = 0.993
  c.returns = "gae"
  c.gae_lambda = 0.95
  c.ppo.epochs = 2
  c.ppo.minibatches = 8
  c.ppo.clip = 0.08
  c.ppo.normalize_advantages = True
  c.loss.entropy_coef = 0.003
  c.loss.value_coef = 0.5
  c.optimizer.name = "adam"
  c.optimizer.learning_rate = 3.43e-4
  c.optimizer.anneal = "linear"
  c.optimizer.eps = 1e-5
  c.optimizer.max_grad_norm = 0.64
  c.total_env_steps = 5_000_000
  c.updates_per_call = 5  # 5 x 2048 agent steps per host round trip
  c.log_every_steps = 100_000
  c.checkpoint_every_steps = 500_000
  return c
