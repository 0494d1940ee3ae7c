"""The claims command (experiments/claims.py): no verdict from fewer than MIN_SEEDS_FOR_CI
seeds per variant (one line, exit 2, nothing written), and it runs from any directory as
the installed `galax-claims` (experiments/ installs as galax.experiments)."""

import json
import os
import subprocess
import sys

import pytest
from run_helpers import fake_run_record

from experiments import claim_checks, claims
from galax.results import experiment
from galax.results.paper_protocols import MIN_SEEDS_FOR_CI

GALAX_CLAIMS = os.path.join(os.path.dirname(sys.executable), "galax-claims")


def _record(variant, seed, values):
  """A whole run record of the hts claim on Breakout, one evaluation per value."""
  return dict(
    fake_run_record(f"breakout_{variant}", seed, values, offset=seed),
    method=variant,
    train_time_s=10.0 + 60.0 * len(values),
    wall_time_s=20.0 + 60.0 * len(values),
    train_mean_return=values[-1] + seed,
    train_curve=dict(env_steps=[], wall_time_s=[], train_time_s=[], mean_return=[]),
    version=1,
    simulators=16,
    seed_mode="sequential",
    frames_per_step=1,
    eval_time_s=1.0,
    final_metric=values[-1] + seed,
    device=dict(platform="cpu", kind="cpu", count=1, processes=1, host="test"),
    git=dict(commit="0" * 40, dirty=False),
    energy=None,
  )


def _results(out, seeds):
  """<out>/hts/breakout_<variant>/seed<s>.json for A2C and HTS-A2C."""
  for variant in ("a2c", "hts_a2c"):
    folder = out / "hts" / f"breakout_{variant}"
    folder.mkdir(parents=True, exist_ok=True)
    for s in seeds:
      (folder / f"seed{s}.json").write_text(json.dumps(_record(variant, s, [0.0, 2.0, 4.0])))
  return out


def _one_error_line(capsys, *needles):
  err = capsys.readouterr().err.strip()
  assert err.startswith("error: ") and "\n" not in err, err
  for needle in needles:
    assert needle in err, err
  return err


def test_the_rule_is_the_reports():
  assert MIN_SEEDS_FOR_CI == 3


def test_one_seed_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
  def must_not_run(*args, **kwargs):
    raise AssertionError("an experiment ran")

  monkeypatch.setattr(experiment, "run_experiment", must_not_run)
  out = tmp_path / "out"
  with pytest.raises(SystemExit) as exit_info:
    claims.main(["gala", "--seeds=0", "--steps=3000", "--tiny", f"--out={out}"])
  assert exit_info.value.code == 2
  _one_error_line(capsys, "--seeds gives 1 seed(s)", "at least 3", "--no_verdict")
  assert not out.exists()


def test_two_seeds_are_refused_by_write_verdict(tmp_path):
  runs = [_record(v, s, [0.0, 2.0, 4.0]) for v in ("a2c", "hts_a2c") for s in (0, 1)]
  with pytest.raises(ValueError) as caught:
    claim_checks.write_verdict("hts", runs, str(tmp_path), resamples=100)
  text = str(caught.value)
  assert "fewer than 3 seeds" in text and "breakout_a2c has 2 (seed 0,1)" in text, text
  assert "\n" not in text and not os.listdir(tmp_path)


def test_summarise_only_refuses_few_seeds_and_writes_nothing(tmp_path, capsys):
  out = _results(tmp_path, seeds=[0])
  with pytest.raises(SystemExit) as exit_info:
    claims.main(["hts", "--summarise_only", f"--out={out}", "--resamples=100"])
  assert exit_info.value.code == 2
  _one_error_line(capsys, "breakout_a2c has 1 (seed 0)", "breakout_hts_a2c has 1 (seed 0)")
  assert not (out / "hts" / "report.md").exists() and not (out / "hts" / "verdict.md").exists()
  claims.main(["hts", "--summarise_only", "--no_verdict", f"--out={out}", "--resamples=100"])
  assert (out / "hts" / "report.md").exists() and not (out / "hts" / "verdict.md").exists()


def test_three_seeds_get_a_verdict(tmp_path):
  out = _results(tmp_path, seeds=[0, 1, 2])
  claims.main(["hts", "--summarise_only", f"--out={out}", "--resamples=100"])
  verdict = json.loads((out / "hts" / "verdict.json").read_text())
  assert set(verdict["games"]["breakout"]["checks"]) == {"hts_a2c_vs_a2c"}


def _command(*args, cwd):
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # a user's shell
  return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.mark.slow
def test_the_command_runs_from_any_directory(tmp_path):
  assert os.path.exists(GALAX_CLAIMS), "galax-claims not installed: pip install -e ."
  elsewhere = tmp_path / "elsewhere"
  elsewhere.mkdir()
  helped = _command(GALAX_CLAIMS, "--help", cwd=elsewhere)
  assert helped.returncode == 0 and "usage: galax-claims" in helped.stdout, helped.stderr
  refused = _command(GALAX_CLAIMS, "hts", "--seeds=0", "--out=out", cwd=elsewhere)
  lines = refused.stderr.strip().splitlines()
  assert refused.returncode == 2 and len(lines) == 1 and "at least 3" in lines[0], refused.stderr
  assert not (elsewhere / "out").exists()
  _results(elsewhere / "out", seeds=[0, 1, 2])
  for command in (
    [GALAX_CLAIMS],
    [sys.executable, "-m", "galax.experiments.claims"],
  ):
    done = _command(
      *command, "hts", "--summarise_only", "--out=out", "--resamples=100", cwd=elsewhere
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "wrote out/hts/report.md and verdict.md" in done.stdout
    assert (elsewhere / "out" / "hts" / "verdict.json").exists()
    (elsewhere / "out" / "hts" / "verdict.json").unlink()
