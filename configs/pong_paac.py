"""PAAC on Pong as its authors ran it (Clemente et al. 2017; Alfredvc/paac at a8bb993).

Every field follows the authors' code, which produced the paper's results; references are
to its files (a copy: ../shared/papers/paac-authors-code/). Where the paper says otherwise
the code wins, and the paper's value is listed here:

  setting            authors' code                              paper
  entropy weight     0.02 (train.py:87)                         0.01
  gradient clip      global norm 3.0 (train.py:88-89)           global norm 40
  loss               5 x (mean actor objective                  (not stated)
                     + mean 0.25 (R - V)^2)
                     (policy_v_network.py:49-57, networks.py:112)
  lr annealing       linear to 0 over 80M agent steps           to 0 over the run
                     (train.py:86, actor_learner.py:119-123)
  initialisation     U(+-1/sqrt(fan_in)), weights and biases,   (not stated)
                     every layer (networks.py:24-96)

The loss: 5 x the mean over the t_max x n_e batch is the loss summed over the 5 steps and
averaged over the envs (`loss.sum_over_time`), with the value term 0.25 (R - V)^2.
The authors' lr at update u is lr0 (1 - (u + 1) 160 / 80M) (global_step is counted before
the update, paac.py:127); galax's linear schedule gives lr0 (1 - u 160 / 80M), one update
(2e-6 of lr0) apart.

What envpool does differently from their emulator (atari_emulator.py): frames resized with
area interpolation (theirs: nearest, :73); at each new game 0-29 no-ops and then FIRE
(envpool's `use_fire_reset`, which changes nothing on Pong: measured 2026-11-27), with the
first frame copied into the 4 stack slots (theirs: 0-30 no-ops, no FIRE, then 4 no-op steps
fill the stack); and a 27,000-step time limit per game (theirs: none). See
docs/archive/results_history/2026-11-26.md. Both: 4-frame max-pooled action repeat, no sticky
actions, the minimal action set, a game ends at game over, rewards clipped to [-1, 1].

  python run.py --config=pong_paac --workdir=runs/pong_paac_seed0

The authors' README: Pong "will begin to learn after about 5 million frames, and will
learn an optimal policy after about 15 million frames" (their frames are global steps,
i.e. agent steps: paac.py:127). The paper's Table 1: Pong 20.6 (archnips).
"""

from galax.config import base_config


def get_config():
  c = base_config()
  c.algorithm = "a2c"
  c.env.id = "Pong-v5"  # train.py:79 (-g pong)
  c.env.episodic_life = False  # train.py:94 (single_life_episodes False)
  c.env.reward_clip = True  # actor_learner.py:95-101
  c.network.name = "archnips"  # train.py:93 (NIPS): networks.py:138-153
  c.network.init = "paac"  # networks.py:24-96 ("torch" init, heads included)
  c.envs_per_learner = 32  # train.py:95 (emulator_counts)
  c.t_max = 5  # train.py:92 (max_local_steps)
  c.gamma = 0.99  # train.py:90
  c.returns = "nstep"  # paac.py:144-149
  c.loss.entropy_coef = 0.02  # train.py:87 (paper: 0.01)
  c.loss.value_coef = 0.25  # policy_v_network.py:53 (0.25 (R - V)^2)
  c.loss.sum_over_time = True  # networks.py:112 (loss_scaling 5.0 = t_max)
  c.optimizer.name = "rmsprop"  # actor_learner.py:33 (tf.train.RMSPropOptimizer)
  c.optimizer.rmsprop_convention = "tf"  # eps inside the square root (TF1)
  c.optimizer.rmsprop_initial_scale = 1.0  # TF1's RMSProp starts its mean square at 1
  c.optimizer.rmsprop_decay = 0.99  # train.py:84 (alpha)
  c.optimizer.eps = 0.1  # train.py:83 (e)
  c.optimizer.learning_rate = 0.0007  # train.py:85: 0.0224 = 0.0007 x 32 (paper: 0.0007 n_e)
  c.optimizer.lr_scaling = "linear_envs"
  c.optimizer.anneal = "linear"  # actor_learner.py:119-123
  c.optimizer.anneal_steps = 80_000_000  # train.py:86 (lr_annealing_steps)
  c.optimizer.max_grad_norm = 3.0  # train.py:88-89 (clip_norm, global; paper: 40)
  c.total_env_steps = 80_000_000  # train.py:91 (max_global_steps; paper: 115M)
  c.checkpoint_every_steps = 1_000_000  # actor_learner.py:8 (CHECKPOINT_INTERVAL)
  c.updates_per_call = 50
  c.log_every_steps = 100_000
  c.target_return = 0.0
  return c
