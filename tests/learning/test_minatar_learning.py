"""A short A2C run on gymnax/Breakout-MinAtar (configs/minatar_a2c.py) beats a random
policy by a loose margin. Full learning runs: benchmarks/ and docs/environments.md."""

import pytest

from galax.config import load as load_config
from galax.training.loop import train

# Uniform random actions score about 0.4 per game here (measured over 64 envs x 5000
# steps); the first 300k steps of configs/minatar_a2c.py reach about 3.
RANDOM_RETURN = 0.4


@pytest.mark.slow
def test_minatar_a2c_learns_breakout(tmp_path, optimized_xla):
  config = load_config(
    "minatar_a2c", total_env_steps=300_000, log_every_steps=100_000, checkpoint_every_steps=0
  )
  result = train(config, workdir=str(tmp_path), log=lambda _: None)
  assert result.episodes >= 100
  assert result.mean_return > 3 * RANDOM_RETURN, result.summary()


@pytest.mark.slow
def test_minatar_ppo_leaves_the_old_plateau_early(tmp_path, optimized_xla):
  """configs/minatar_ppo.py (PureJaxRL's settings: Adam 5e-3, MLP 64x64 relu) passes 12 on
  Breakout-MinAtar within 426k agent steps (measured 22.5, seed 0). Its earlier settings
  (Adam 5e-4, conv torso) were near 2 there and ended 2M steps at 6-9: the plateau every
  claim in docs/results.md was judged on until 2026-11."""
  config = load_config(
    "minatar_ppo",
    total_env_steps=425_984,
    log_every_steps=212_992,
    checkpoint_every_steps=0,
    tensorboard=False,
  )
  config.optimizer.anneal = "none"  # the first 426k steps of the 5M run, near its lr
  result = train(config, workdir=str(tmp_path), log=lambda _: None)
  assert result.episodes >= 100
  assert result.mean_return > 12, result.summary()
