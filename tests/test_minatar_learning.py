"""A short A2C run on gymnax/Breakout-MinAtar (configs/minatar_a2c.py) beats a random
policy by a loose margin. Full learning runs: benchmarks/ and docs/environments.md."""

import pytest

from galax.config import load as load_config
from galax.train import train

# Uniform random actions score about 0.4 per game here (measured over 64 envs x 5000
# steps); the first 300k steps of configs/minatar_a2c.py reach about 3.
RANDOM_RETURN = 0.4


@pytest.mark.slow
def test_minatar_a2c_learns_breakout(tmp_path):
  config = load_config("minatar_a2c", total_env_steps=300_000, log_every_steps=100_000,
                       checkpoint_every_steps=0)
  result = train(config, workdir=str(tmp_path), log=lambda _: None)
  assert result.episodes >= 100
  assert result.mean_return > 3 * RANDOM_RETURN, result.summary()
