"""Random trajectories for gradient and return tests (terminations, truncations and masked
steps)."""

import jax
import jax.numpy as jnp
import numpy as np

from galax.core.rollout import Trajectory


def random_trajectory(
  key, steps=5, envs=8, obs_dim=3, actions=2, random_behaviour=False
) -> Trajectory:
  """[steps, envs] of random experience; behaviour logits zero unless random_behaviour."""
  k = jax.random.split(key, 7)
  done = jax.random.bernoulli(k[2], 0.2, (steps, envs))
  behaviour_logits = (
    jax.random.normal(k[6], (steps, envs, actions))
    if random_behaviour
    else np.zeros((steps, envs, actions), np.float32)
  )
  return Trajectory(
    obs=jax.random.normal(k[0], (steps, envs, obs_dim)),
    actions=jax.random.randint(k[1], (steps, envs), 0, actions),
    rewards=jax.random.normal(k[3], (steps, envs)),
    terminated=done,
    truncated=jax.random.bernoulli(k[4], 0.1, (steps, envs)) & ~done,
    valid=jax.random.bernoulli(k[5], 0.9, (steps, envs)),
    behaviour_logits=behaviour_logits,
    values=jax.random.normal(k[0], (steps + 1, envs)),
    episode_over=done,
    episode_return=np.zeros((steps, envs), np.float32),
    episode_length=np.zeros((steps, envs), np.int32),
  )


def random_return_inputs(seed, steps, envs, gamma=0.99):
  """(rewards, discounts, values, truncated), [steps, envs] ([steps + 1, envs] values), as
  the estimators of galax.core.returns take them; about 20% terminated and 20% truncated steps."""
  rng = np.random.default_rng(seed)
  rewards = jnp.asarray(rng.normal(size=(steps, envs)), jnp.float32)
  terminated = jnp.asarray(rng.random((steps, envs)) < 0.2)
  truncated = jnp.asarray(rng.random((steps, envs)) < 0.2) & ~terminated
  values = jnp.asarray(rng.normal(size=(steps + 1, envs)), jnp.float32)
  return rewards, gamma * (1.0 - terminated), values, truncated
