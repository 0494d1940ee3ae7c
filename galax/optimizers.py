"""Optimizers of the papers, built from optax pieces.

RMSProp comes in two conventions, which differ in where epsilon goes:

  TensorFlow (PAAC):  nu <- decay nu + (1 - decay) g^2;  x <- x - lr g / sqrt(nu + eps)
  PyTorch (GALA, HTS): nu <- decay nu + (1 - decay) g^2;  x <- x - lr g / (sqrt(nu) + eps)

With PAAC's eps = 0.1 the two differ a lot. TF1's RMSPropOptimizer also starts nu at 1,
PyTorch at 0 (`rmsprop_initial_scale`).

Learning-rate rules: PAAC scales lr linearly with the number of envs (0.0007 x 32);
GALA scales it with the square root of the number of learners (7e-4 x sqrt(n)).
Annealing is linear to zero over the run (PAAC, HTS-PPO) or none.
"""

from __future__ import annotations

import math
from typing import Any

import optax

LR_SCALING_RULES = ("none", "linear_envs", "sqrt_learners")


def scaled_learning_rate(base_lr: float, rule: str, num_envs: int, num_learners: int) -> float:
  """Applies an lr scaling rule: 'none', 'linear_envs' (PAAC) or 'sqrt_learners' (GALA)."""
  if rule == "none":
    return base_lr
  if rule == "linear_envs":
    return base_lr * num_envs
  if rule == "sqrt_learners":
    return base_lr * math.sqrt(num_learners)
  raise ValueError(f"Unknown lr scaling rule {rule!r}; choose from {LR_SCALING_RULES}.")


def learning_rate_schedule(lr: float, anneal: str, total_updates: int) -> optax.Schedule:
  if anneal == "none":
    return optax.constant_schedule(lr)
  if anneal == "linear":
    if total_updates >= 2**31:
      raise ValueError(f"Annealing over {total_updates} updates overflows the int32 update "
                       "count; lower config.total_env_steps.")
    return optax.linear_schedule(lr, 0.0, max(int(total_updates), 1))
  raise ValueError(f"Unknown lr annealing {anneal!r}; use 'none' or 'linear'.")


def rmsprop(learning_rate: Any, decay: float, eps: float, convention: str,
            initial_scale: float | None = None) -> optax.GradientTransformation:
  """RMSProp without momentum in the TF ('tf': eps inside sqrt) or PyTorch ('torch') form."""
  if convention not in ("tf", "torch"):
    raise ValueError(f"Unknown RMSProp convention {convention!r}; use 'tf' or 'torch'.")
  if initial_scale is None:
    initial_scale = 0.0
  return optax.chain(
      optax.scale_by_rms(decay=decay, eps=eps, initial_scale=initial_scale,
                         eps_in_sqrt=(convention == "tf")),
      optax.scale_by_learning_rate(learning_rate),
  )


def make_optimizer(cfg: Any, num_envs: int, num_learners: int, total_updates: int
                   ) -> tuple[optax.GradientTransformation, optax.Schedule]:
  """Gradient clipping, then the optimizer of `cfg.name` with a scaled, annealed lr.

  Returns the transformation and its lr schedule (a function of the update count).
  """
  lr = scaled_learning_rate(cfg.learning_rate, cfg.lr_scaling, num_envs, num_learners)
  schedule = learning_rate_schedule(lr, cfg.anneal, total_updates)
  if cfg.name == "rmsprop":
    opt = rmsprop(schedule, cfg.rmsprop_decay, cfg.eps, cfg.rmsprop_convention,
                  cfg.rmsprop_initial_scale)
  elif cfg.name == "adam":
    opt = optax.adam(schedule, b1=cfg.adam_b1, b2=cfg.adam_b2, eps=cfg.eps)
  elif cfg.name == "sgd":
    opt = optax.sgd(schedule)
  else:
    raise ValueError(f"Unknown optimizer {cfg.name!r}; choose 'rmsprop', 'adam' or 'sgd'.")
  clip = [optax.clip_by_global_norm(cfg.max_grad_norm)] if cfg.max_grad_norm > 0 else []
  return optax.chain(*clip, opt), schedule
