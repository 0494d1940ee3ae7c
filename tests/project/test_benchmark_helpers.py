"""The benchmark scripts' env helpers still call galax's API as it is (make_env took the run
config before `EnvSettings`; the scripts kept calling it so, and no test ran them)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))


@pytest.mark.slow
def test_raw_envpool_helpers_step_the_configs_envs():
  import hts  # pylint: disable=g-import-not-at-top
  import measure  # pylint: disable=g-import-not-at-top

  from galax.config import load  # pylint: disable=g-import-not-at-top

  config = load("cartpole_a2c", envs_per_learner=4)
  assert hts.raw_steps_per_second(config, seconds=0.2, steps=10) > 0
  assert measure.raw_envpool(config, seconds=0.2, steps_per_call=10)
