"""Base configs of the claims at MinAtar scale (gymnax MinAtar games, the `minatar` torso).

MinAtar (Young & Tian 2019) keeps Atari's game mechanics on a 10x10 grid with a few
binary channels, so an actor-critic learns Breakout in a few million agent steps on a CPU
instead of tens of millions of frames on a GPU. Rewards are already small integers: no
clipping, no episodic life (gymnax has neither).

Each is a config file's algorithm settings (one place for them) moved onto a MinAtar game:
* `a2c_config`: configs/breakout_a2c.py, the per-learner A2C of GALA Table 2 (t_max 5,
  RMSProp in the PyTorch convention with eps 0.01 and alpha 0.99, lr 7e-4, global-norm clip
  0.5, entropy 0.01, value coefficient 0.5, gamma 0.99) with 16 envs.
* `paac_config`: configs/pong_paac.py, PAAC as its authors' code runs it (lr 0.0007 x n_e
  annealed to 0 over the run, TF RMSProp with eps 0.1 inside the square root and the mean
  square starting at 1, global-norm clip 3, entropy 0.02, the loss 5 x (mean actor + mean
  0.25 (R - V)^2), their uniform init), at either setting: only the network changes.
* `ppo_config`: configs/minatar_ppo.py, PPO with GAE at MinAtar settings (64 envs x 128
  steps, 4 epochs of 8 minibatches, Adam lr 5e-3 annealed, clip 0.2, entropy 0.01, gamma
  0.99, lambda 0.95, one gradient per minibatch).

Those are the papers' settings (`settings="paper"`). On MinAtar they sit on a plateau
(Breakout near 6 at 2M steps: docs/archive/results_history/2026-11-25.md, section 0), so the claims
are judged at `settings="learning"` (the default): PureJaxRL's MinAtar network (an MLP 64x64
relu on the flattened grid) and, for the A2C family, configs/minatar_a2c.py's optimisation
(GAE 0.95, Adam 1e-2 annealed, eps 1e-5, clip 0.5) per learner of 16 envs x t_max 16 (PAAC keeps its
own optimiser: its claim is about that optimiser's lr rule); PPO is configs/minatar_ppo.py
as it is. Where a claim's own optimiser is its subject (PAAC's RMSProp rule, BA3C's Adam
(0.8, 0.75) against RMSProp), the variant keeps it and only the network changes.

`scale_down` turns any of them into a CI-sized run (a tiny fc layer).
"""

from __future__ import annotations

import ml_collections

from galax.config import base_config
from galax.config import load as load_config

GAMES = ("gymnax/Breakout-MinAtar", "gymnax/Asterix-MinAtar")
SETTINGS = ("learning", "paper")
EVALS_PER_RUN = 20  # evaluations per run: the final metric uses the last 10


def _on_minatar(
  c: ml_collections.ConfigDict, env_id: str, total_env_steps: int, settings: str = "paper"
) -> ml_collections.ConfigDict:
  """A config file's algorithm settings moved onto `env_id`: envpool-only env options
  dropped, the network the `minatar` torso ("paper") or PureJaxRL's MLP ("learning"),
  evaluations every 1/20 of the run with sampled actions, no checkpoints, TensorBoard or
  energy readings."""
  if settings not in SETTINGS:
    raise ValueError(f"settings={settings!r}: choose from {list(SETTINGS)}.")
  defaults = base_config()
  c.env, c.network = defaults.env, defaults.network
  c.env.id = env_id
  if settings == "paper":
    c.network.name = "minatar"
    c.network.conv_impl = "patches"  # scanned updates on CPU
  else:
    c.network.name = "mlp"  # the image flattened
    c.network.mlp_hidden = (64, 64)
    c.network.activation = "relu"
  c.total_env_steps = int(total_env_steps)
  c.target_return = 0.0
  c.tensorboard = False
  c.energy = False
  c.checkpoint_every_steps = 0
  c.eval.episodes = 10
  c.eval.greedy = False  # MinAtar policies are scored as they act (sampled actions)
  c.eval.every_steps = max(1, int(total_env_steps) // EVALS_PER_RUN)
  c.log_every_steps = max(1, int(total_env_steps) // 50)
  return c


def a2c_config(
  env_id: str, total_env_steps: int, settings: str = "learning"
) -> ml_collections.ConfigDict:
  """One A2C learner of 16 envs: GALA Table 2's (configs/breakout_a2c.py) or, "learning",
  configs/minatar_a2c.py's optimisation at t_max 16."""
  if settings == "learning":
    c = _on_minatar(load_config("minatar_a2c"), env_id, total_env_steps, settings)
    c.envs_per_learner = 16
    return c
  return _on_minatar(load_config("breakout_a2c"), env_id, total_env_steps, settings)


def paac_config(
  env_id: str, total_env_steps: int, num_envs: int, settings: str = "learning"
) -> ml_collections.ConfigDict:
  """PAAC with n_e = `num_envs`: the paper's lr = 0.0007 x n_e with the authors' RMSProp,
  loss and t_max 5 (configs/pong_paac.py), on the MinAtar conv torso ("paper") or PureJaxRL's MLP
  ("learning"). The claim is about that optimiser's linear rule, so "learning" changes only
  the network: with Adam the same linear rule (1e-2 x n_e / 16, up to 8e-2) stops learning
  at n_e >= 32 (docs/archive/results_history/2026-11-25.md, section 0b)."""
  c = _on_minatar(load_config("pong_paac"), env_id, total_env_steps, settings)
  c.envs_per_learner = int(num_envs)
  c.network.init = "paac"  # the authors' init on the MinAtar network too
  c.optimizer.anneal_steps = None  # to 0 over the run: 80M agent steps is Atari's budget
  return c


def ppo_config(
  env_id: str, total_env_steps: int, settings: str = "learning"
) -> ml_collections.ConfigDict:
  """PPO at MinAtar settings (configs/minatar_ppo.py), on the `minatar` torso for "paper"."""
  return _on_minatar(load_config("minatar_ppo"), env_id, total_env_steps, settings)


def scale_down(c: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """A CI-sized version of a claim config: a 16-unit fc layer, one update per call (so
  that a few thousand steps still see several evaluations), 4 evaluations instead of 20, one
  gradient per batch (no CPU auto chunks), PPO batches of 8 x 16 in one
  epoch of 2 minibatches (each minibatch update is another copy of the gradient program
  to compile on CPU), A2C-family rollouts of at most 4 steps (4 x 64 envs x t_max 16 would
  be one update past a few thousand steps)."""
  c.network.fc_width = 16
  c.network.mlp_hidden = (16,)
  c.updates_per_call = 1
  c.eval.every_steps = max(1, int(c.total_env_steps) // 4)  # evaluations cost most here
  c.grad_chunks = 1  # CPU auto unrolls up to 8 chunk gradients: the same gradient, 4x compile
  if c.algorithm in ("ppo", "hts_ppo"):
    c.envs_per_learner, c.t_max = 8, 16
    c.ppo.epochs, c.ppo.minibatches = 1, 2
  else:
    c.t_max = min(int(c.t_max), 4)
  return c
