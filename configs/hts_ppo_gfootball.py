"""HTS-PPO on GFootball academy scenarios (Liu et al. 2020, Table A6 and the authors' scripts).

The PPO hyper-parameters of configs/ppo_gfootball.py, run by HTS-RL: the sync interval
alpha is 128 (= the unroll; the authors' --sync-every 128). Table A6 lists 4 actors; on
CPU 4 actor groups (4 envpool pools of 4 envs, each with its own forward pass) measured
slower than 1 (benchmarks/hts.py), so the default is 1 (--config.hts.num_actors=4).
While the envs collect segment k with theta_k, the learner runs the 16 minibatch updates
of PPO on segment k - 1 (collected by theta_{k-1}; the clipped ratio is taken against
theta_{k-1}), one minibatch update every 8 env steps between envpool's send and recv.

  python run.py --config=configs/hts_ppo_gfootball.py
  python run.py --config=configs/hts_ppo_gfootball.py --config.hts.delayed=False  # = PPO
"""

from galax.config import load


def get_config():
  c = load("ppo_gfootball")
  c.algorithm = "hts_ppo"
  c.hts.alpha = 128  # sync interval (multiple of t_max = 128)
  c.hts.delayed = True
  c.hts.microbatches = 16  # 2 epochs x 8 minibatches: one update per 8 env steps
  c.hts.num_actors = 1
  return c
