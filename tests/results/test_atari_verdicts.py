"""Issue 56's verdicts (experiments/atari_verdicts.py): the registration's rule on finished
runs, none below MIN_SEEDS_FOR_CI seeds an arm."""

import json
import os

import numpy as np
import pytest

from experiments import atari_prereg, atari_verdicts


def _run(root, name, stopped="budget", mean_return=0.0, rows=()):
  folder = os.path.join(root, name)
  os.makedirs(folder)
  with open(os.path.join(folder, "result.json"), "w") as f:
    json.dump(dict(stopped=stopped, mean_return=mean_return, env_steps=5_000_000), f)
  with open(os.path.join(folder, "metrics.csv"), "w") as f:
    f.write("env_steps,wall_time_s,mean_return,train_time_s\n")
    f.writelines(f"{s},{t},{r},{t}\n" for s, t, r in rows)


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
  monkeypatch.setattr(atari_prereg, "RUNS_DIR", str(tmp_path))
  monkeypatch.setattr(atari_prereg, "KEPT", str(tmp_path / "kept"))  # not the tree's copies
  return str(tmp_path)


def test_a_needs_three_finished_runs_an_arm(runs_dir):
  for s in range(3):
    _run(runs_dir, f"codeeps_gala_{s}", mean_return=300.0 + s)
  for s in range(2):
    _run(runs_dir, f"codeeps_allreduce_{s}", mean_return=200.0 + s)
  _run(runs_dir, "codeeps_allreduce_2", stopped="preempted", mean_return=90.0)  # unfinished
  lines = atari_verdicts.experiment_a()
  assert "all-reduce [200.0, 201.0]" in lines[0]
  assert "no verdict: 3 and 2 finished runs (a verdict needs 3 each)" in lines[1]


def test_a_is_judged_by_the_registered_rule(runs_dir):
  for s, (gala, allreduce) in enumerate([(330.0, 200.0), (340.0, 210.0), (350.0, 190.0)]):
    _run(runs_dir, f"codeeps_gala_{s}", mean_return=gala)
    _run(runs_dir, f"codeeps_allreduce_{s}", mean_return=allreduce)
  lines = atari_verdicts.experiment_a()
  # +140 over a 200 mean: far past the 20 margin, and its Welch CI excludes 0.
  assert lines[1].endswith("different (margin +-20.00): reproduced"), lines[1]
  assert lines[2].endswith(": reproduced"), lines[2]


def test_b_reads_agent_steps_and_minutes_to_18(runs_dir):
  for s in range(3):
    steps = [(1_000_000, 600, 10.0), (2_000_000 + 10_000 * s, 1200, 18.5)]
    _run(runs_dir, f"hts_{s}", stopped="target return", rows=steps)
    _run(runs_dir, f"a2c_{s}", stopped="target return", rows=steps)
  lines = atari_verdicts.experiment_b()
  assert "HTS-A2C [2000000.0, 2010000.0, 2020000.0]" in lines[0]
  assert lines[1].endswith(": reproduced"), lines[1]  # equal, ratio 1 [1, 1]
  assert lines[2].endswith(": not reproduced"), lines[2]  # not lower: the same minutes


def _gossip_run(root, name, distances, bounds):
  _run(root, name)
  with open(os.path.join(root, name, "metrics.csv"), "w") as f:
    f.write("env_steps,wall_time_s,mean_return,gossip/consensus_distance,gossip/prop1_bound\n")
    f.writelines(f"{i},{i},0,{d},{b}\n" for i, (d, b) in enumerate(zip(distances, bounds)))


def test_a3_is_read_against_the_prop1_bound_at_every_logged_update(runs_dir):
  _gossip_run(runs_dir, "codeeps_gala_0", [0.1, 0.5, 0.2], [1.0, 1.0, 1.0])
  line = atari_verdicts.consensus_claim()
  assert "3 logged updates" in line and "reproduced: 0 above" in line and "0.500" in line
  _gossip_run(runs_dir, "other", [0.1, 1.5, 0.2], [1.0, 1.0, 1.0])
  assert "not reproduced: 1 above the bound" in atari_verdicts.consensus_claim("other")


def test_a4_counts_runs_above_half_the_nominal_a2c(runs_dir):
  assert "not finished" in atari_verdicts.success_counts()
  _run(runs_dir, "codeeps_a2c16_0", mean_return=100.0)
  for s, (gala, allreduce) in enumerate([(60.0, 40.0), (51.0, 55.0), (49.0, 70.0)]):
    _run(runs_dir, f"codeeps_gala_{s}", mean_return=gala)
    _run(runs_dir, f"codeeps_allreduce_{s}", mean_return=allreduce)
  assert atari_verdicts.success_counts().endswith("(> 50.0): GALA 2 of 3, all-reduce 2 of 3")


def test_curves_mean_finished_runs_with_a_t_band(runs_dir, tmp_path):
  from experiments import atari_prereg_curves as curves

  rows = [(1000 * k, 60 * k, float(k)) for k in range(1, 4)]
  for s in range(3):
    _run(runs_dir, f"codeeps_gala_{s}", rows=[(x, t, r + s) for x, t, r in rows])
  _run(runs_dir, "codeeps_allreduce_0", stopped="preempted", rows=rows[:2])
  found = curves.arm_curves([f"codeeps_gala_{s}" for s in range(3)], "env_steps")
  assert [c[2] for c in found] == [True] * 3
  assert curves.arm_curves(["codeeps_allreduce_0"], "env_steps")[0][2] is False
  mean, low, high = curves.t_band(np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]))
  np.testing.assert_allclose(mean, [2.0, 4.0])
  np.testing.assert_allclose(high - mean, [4.303 / np.sqrt(3), 2 * 4.303 / np.sqrt(3)], rtol=1e-3)
  title, arms = curves.EXPERIMENTS["breakout_acode"]
  assert curves.plot_experiment(title, arms, str(tmp_path / "a.png"))
  assert not curves.plot_experiment(*curves.EXPERIMENTS["pong_hts"], str(tmp_path / "b.png"))


def test_b_fast_reads_its_own_runs_and_a_time_limited_run_is_not_finished(runs_dir):
  steps = [(1_000_000, 600, 10.0), (2_000_000, 1200, 18.5)]
  for s in range(3):
    _run(runs_dir, f"bfast_hts_{s}", stopped="target return", rows=steps)
    _run(runs_dir, f"bfast_a2c_{s}", stopped="target return" if s else "time limit", rows=steps)
  lines = atari_verdicts.experiment_b("bfast_", "B-fast", "10M", "f")
  assert lines[0] == "- B-fast agent steps to 18: HTS-A2C [2000000.0, 2000000.0, 2000000.0], " + (
    "A2C [2000000.0, 2000000.0]"
  )
  assert lines[1].startswith("- B1f ") and "no verdict: 3 and 2 finished runs" in lines[1]
  assert atari_verdicts.experiment_b()[0] == "- B agent steps to 18: HTS-A2C [], A2C []"
  assert not atari_prereg.status("bfast_a2c_0").startswith("finished")
  assert atari_prereg.status("bfast_a2c_1").startswith("finished")


def test_a_resume_passes_the_registered_fields_a_resume_may_change():
  runs = atari_prereg.registered()
  assert atari_prereg.resume_overrides(runs["bfast_a2c_0"]) == ["--config.time_limit_s=0"]
  assert atari_prereg.resume_overrides(runs["codeeps_gala_1"]) == [
    "--config.checkpoint_every_steps=250000",
    "--config.total_env_steps=5000000",
  ]
  hts = runs["bfast_hts_0"]
  assert hts[: len(runs["bfast_a2c_0"])] == runs["bfast_a2c_0"]
  assert "--config.algorithm=hts_a2c" in hts


def test_b_counts_a_run_that_missed_18_censored_at_its_cap(runs_dir):
  """The registration: a run that does not reach 18 by its cap is censored there and marked."""
  for s in range(3):
    missed = [(5_000_000, 3000, -20.0), (10_000_000, 6000, -19.0)]
    _run(runs_dir, f"bfast_hts_{s}", stopped="budget", rows=missed)
    learned = [(1_000_000, 600, 10.0), (3_000_000 + 100_000 * s, 1800, 18.2)]
    _run(runs_dir, f"bfast_a2c_{s}", stopped="target return", rows=learned)
  lines = atari_verdicts.experiment_b("bfast_", "B-fast", "10M", "f")
  assert lines[0].endswith(
    "HTS-A2C [10000000.0, 10000000.0, 10000000.0], " + ("A2C [3000000.0, 3100000.0, 3200000.0]")
  )
  assert "censored" in lines[1] and "HTS-A2C 3, A2C 0" in lines[1]
  assert lines[2].startswith("- B1f ") and lines[2].endswith(": not reproduced"), lines[2]


def test_b_reads_no_verdict_that_censoring_could_overturn(runs_dir):
  """HTS-A2C censored at 6M where A2C needs about as many steps: the ratio is only a lower
  bound, so neither "equal" nor "not equal" is read."""
  for s in range(3):
    missed = [(3_000_000, 3000, -20.0), (6_000_000, 6000, 15.0)]
    _run(runs_dir, f"hts_{s}", stopped="budget", rows=missed)
    learned = [(1_000_000, 600, 10.0), (5_600_000 + 100_000 * s, 5600, 18.2)]
    _run(runs_dir, f"a2c_{s}", stopped="target return", rows=learned)
  lines = atari_verdicts.experiment_b()
  assert "HTS-A2C 3, A2C 0" in lines[1]
  assert lines[2].endswith("no verdict (censored runs: only a bound)"), lines[2]


def test_b_current_reads_its_hts_runs_against_b_fasts_a2c_arm(runs_dir):
  """B-current (PREREGISTRATION.md): bcur_hts_s against the reused bfast_a2c_s."""
  for s in range(3):
    _run(runs_dir, f"bcur_hts_{s}", stopped="target return", rows=[(3_000_000, 1800, 18.1)])
    _run(runs_dir, f"bfast_a2c_{s}", stopped="target return", rows=[(3_000_000, 1800, 18.1)])
    _run(runs_dir, f"bfast_hts_{s}", stopped="budget", rows=[(10_000_000, 6000, -20.0)])
  lines = atari_verdicts.experiment_b("bcur_", "B-current", "10M", "c", a2c_prefix="bfast_")
  assert lines[0] == "- B-current agent steps to 18: HTS-A2C [3000000.0, 3000000.0, " + (
    "3000000.0], A2C [3000000.0, 3000000.0, 3000000.0]"
  )
  assert lines[1].startswith("- B1c ") and lines[1].endswith(": reproduced"), lines[1]
  runs = atari_prereg.registered()
  assert runs["bcur_hts_1"] == [*runs["bfast_hts_1"], "--config.hts.gradient_point=current"]


def _control(folder, rows, done=True):
  os.makedirs(folder, exist_ok=True)
  keys = ["env_steps", "mean_return", "grad_norm", "loss/value", "loss/entropy"]
  with open(os.path.join(folder, "metrics.csv"), "w") as f:
    f.write(",".join(keys) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
  if done:
    with open(os.path.join(folder, "result.json"), "w") as f:
      json.dump(dict(stopped="budget"), f)
  return str(folder)


def test_the_controls_are_read_as_registered(tmp_path):
  """C1: tracks within 3 points and a factor 1.5 of both medians; C2: stall, learn, neither."""
  hts = _control(
    tmp_path / "hts", [(800_000, -20, 0.4, 0.03, 1.6), (1_600_000, -17.0, 0.4, 0.03, 1.6)]
  )
  a2c = _control(
    tmp_path / "a2c", [(800_000, -20, 0.3, 0.025, 1.6), (1_600_000, -15.5, 0.3, 0.025, 1.6)]
  )
  assert "HTS-A2C at half the rate tracks A2C" in atari_verdicts.control_c1(hts, a2c)
  far = _control(tmp_path / "far", [(1_600_000, -10.0, 0.3, 0.025, 1.6)])
  assert "does not track" in atari_verdicts.control_c1(hts, far)
  assert "not finished" in atari_verdicts.control_c1(hts, _control(tmp_path / "x", [], done=False))
  stall = _control(tmp_path / "stall", [(1_360_000, 1.5, 0.2, 0.01, 1.345)])
  assert atari_verdicts.control_c2(stall).endswith("stalls as GALA did")
  learn = _control(tmp_path / "learn", [(1_360_000, 12.0, 0.2, 0.01, 1.1)])
  assert atari_verdicts.control_c2(learn).endswith(": learns")
  between = _control(tmp_path / "between", [(1_360_000, 3.0, 0.2, 0.01, 1.2)])
  assert atari_verdicts.control_c2(between).endswith(
    "neither stalls nor learns by the registered reading"
  )


def test_b1s_reads_within_its_factor():
  equal = atari_verdicts.judge_within([4.0e6, 4.2e6, 4.4e6], [4.1e6, 4.3e6, 4.2e6], (0, 0))
  assert equal.startswith("reproduced")
  apart = atari_verdicts.judge_within([12.0e6, 12.5e6, 13.0e6], [4.1e6, 4.3e6, 4.2e6], (0, 0))
  assert apart.startswith("not reproduced")
  assert atari_verdicts.judge_within([4.0e6], [4.1e6], (0, 0)).startswith("no verdict")
