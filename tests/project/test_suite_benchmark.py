"""benchmarks/suite.py's time split, which benchmarks/throughput.py printed before it merged
there: A2C's time per 1000 env steps from its raw, acting and a2c figures."""

import pytest

from benchmarks import suite


def _row(algorithm: str, sps: float, envs: int = 32) -> dict:
  return dict(algorithm=algorithm, env="Pong-v5", num_envs=envs, steps_per_second=sps)


def test_time_split_from_raw_acting_and_a2c():
  # docs/benchmarks.md's jax 0.11.2 figures: raw 5,874 and A2C 1,803 agent steps/s.
  rows = [_row("raw", 5874.0), _row("acting", 3900.0), _row("a2c", 1803.0), _row("a2c", 1.0, 64)]
  (split,) = suite.time_split(rows)  # 64 envs: no raw or acting figure, no split
  assert split["num_envs"] == 32
  assert split["env_ms_per_1k"] == pytest.approx(1e6 / 5874)
  assert split["acting_ms_per_1k"] == pytest.approx(1e6 / 3900 - 1e6 / 5874)
  assert split["learning_ms_per_1k"] == pytest.approx(1e6 / 1803 - 1e6 / 3900)
  total = sum(split[k] for k in ("env_ms_per_1k", "acting_ms_per_1k", "learning_ms_per_1k"))
  assert total == pytest.approx(1e6 / 1803)


def test_acting_is_measured_on_request_only():
  assert "acting" not in suite.parse([]).algorithms
  args = suite.parse(["--algorithms=raw,acting,a2c", "--num_envs=32", "--updates_per_call=20"])
  jobs = suite._jobs(args)
  assert [j[0] for j in jobs] == ["raw", "acting", "a2c"]
  assert suite._config(args, "a2c", "Pong-v5", 1, 32).updates_per_call == 20


@pytest.mark.slow  # compiles A2C and its rollout
def test_a_run_prints_the_split(capsys):
  suite.main(
    "--env=CartPole-v1 --algorithms=raw,acting,a2c --num_envs=8 --seconds=0.2 "
    "--updates_per_call=2 --noisolate".split()
  )
  out = capsys.readouterr().out
  assert "time per 1000 env steps (ms)" in out
  assert out.strip().splitlines()[-1].split()[:2] == ["CartPole-v1", "8"]
