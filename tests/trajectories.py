"""Random trajectories for gradient tests (terminations, truncations and masked steps)."""

import jax
import numpy as np

from galax.rollout import Trajectory


def random_trajectory(key, steps=5, envs=8, obs_dim=3, actions=2,
                      random_behaviour=False) -> Trajectory:
  """[steps, envs] of random experience; behaviour logits zero unless random_behaviour."""
  k = jax.random.split(key, 7)
  done = jax.random.bernoulli(k[2], 0.2, (steps, envs))
  behaviour_logits = (jax.random.normal(k[6], (steps, envs, actions)) if random_behaviour
                      else np.zeros((steps, envs, actions), np.float32))
  return Trajectory(
      obs=jax.random.normal(k[0], (steps, envs, obs_dim)),
      actions=jax.random.randint(k[1], (steps, envs), 0, actions),
      rewards=jax.random.normal(k[3], (steps, envs)),
      terminated=done,
      truncated=jax.random.bernoulli(k[4], 0.1, (steps, envs)) & ~done,
      valid=jax.random.bernoulli(k[5], 0.9, (steps, envs)),
      behaviour_logits=behaviour_logits,
      values=jax.random.normal(k[0], (steps + 1, envs)),
      episode_over=done, episode_return=np.zeros((steps, envs), np.float32),
      episode_length=np.zeros((steps, envs), np.int32))
