"""The benchmark scripts' env helpers still call galax's API as it is (make_env took the run
config before `EnvSettings`; the scripts kept calling it so, and no test ran them), and
atari_curves reads curves as they come back."""

import pytest


@pytest.mark.slow
def test_raw_envpool_helpers_step_the_configs_envs():
  from benchmarks import hts, measure
  from galax.config import load

  config = load("cartpole_a2c", envs_per_learner=4)
  assert hts.raw_steps_per_second(config, seconds=0.2, steps=10) > 0
  assert measure.raw_envpool(config, seconds=0.2, steps_per_call=10)


def test_a_curve_without_a_rate_column_gives_its_slope(tmp_path):
  """A metrics.csv of agent steps, running mean and seconds alone (a device summary's
  curve) reads its steps/s as the curve's slope, not 0."""
  from benchmarks import atari_curves

  (tmp_path / "config.json").write_text('{"seed": 3}')
  rows = ["env_steps,mean_return,train_time_s", "1000,-21,10", "2000,-20,12", "5000,18,20"]
  (tmp_path / "metrics.csv").write_text("\n".join(rows) + "\n")
  got = atari_curves.summary("run", str(tmp_path), target=18)
  assert got["steps_per_s"] == pytest.approx(400.0)  # (5000 - 1000) / (20 - 10)
  assert (got["seed"], got["target_steps"]) == (3, 5000)
