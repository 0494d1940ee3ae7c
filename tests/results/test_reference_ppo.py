"""experiments/reference_ppo.py: the independent cross-check runs and writes its curve."""

import json
import math
import sys

import pytest

from experiments import reference_ppo


@pytest.mark.slow  # a whole (tiny) training run
def test_reference_ppo_writes_a_finite_curve(tmp_path, monkeypatch, capsys):
  out = tmp_path / "curve.json"
  monkeypatch.setattr(
    sys,
    "argv",
    [
      "reference_ppo",
      "--env=Breakout-MinAtar",
      "--steps=4096",
      "--envs=8",
      "--t_max=16",
      "--epochs=1",
      "--minibatches=2",
      "--log_every_steps=2048",
      f"--out={out}",
    ],
  )
  reference_ppo.main()
  curve = json.loads(out.read_text())["curve"]
  assert [row["steps"] for row in curve] == [2048, 4096]
  assert all(math.isfinite(row["mean_return"]) and row["episodes"] > 0 for row in curve)
  assert "Breakout-MinAtar steps      4096" in capsys.readouterr().out
