"""Each generated page under docs/results/ equals what its generator writes from the runs kept
beside it (no training): written again into a temporary folder and compared with the kept
page, so a hand edit or a generator change that moves a figure fails here. The pages of
galax.results.best's studies (gala_best.md, pair.md, returns.md): tests/results/test_best.py;
the Verdicts section of docs/results.md: tests/project/test_results_page.py."""

import os

import pytest

from experiments import (
  atari_prereg,
  atari_prereg_report,
  atari_verdicts,
  hts_delay_report,
  hts_gradient_point,
)
from experiments import hts_delay_stability as delay

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESULTS = os.path.join(ROOT, "docs", "results")
POINT = os.path.join(RESULTS, "hts_gradient_point")


def _read(path):
  with open(path) as f:
    return f.read()


@pytest.fixture
def kept_runs_only(tmp_path, monkeypatch):
  """runs/ is not in git: each generator reads its runs' copies kept under docs/results/, as
  in a fresh checkout, even where this machine has the workdirs."""
  monkeypatch.setattr(atari_prereg, "RUNS_DIR", str(tmp_path / "no_runs"))
  monkeypatch.setattr(atari_prereg, "CARRIED", str(tmp_path / "no_checkpoints"))
  monkeypatch.setattr(delay, "RUNS", str(tmp_path / "no_runs"))
  out = tmp_path / "out"
  out.mkdir()
  return out


def test_atari_gala_hts_verdicts(kept_runs_only, capsys):
  atari_verdicts.main([f"--out={kept_runs_only}"])
  kept = _read(os.path.join(atari_prereg.KEPT, "verdicts.md"))
  assert _read(kept_runs_only / "verdicts.md") == kept, "python -m experiments.atari_verdicts"


def test_atari_gala_hts_runs(kept_runs_only, capsys):
  atari_prereg_report.main([f"--out={kept_runs_only}"])
  kept = _read(os.path.join(atari_prereg.KEPT, "runs.md"))
  assert _read(kept_runs_only / "runs.md") == kept, "python -m experiments.atari_prereg_report"


@pytest.mark.parametrize(
  "page, ppo, hts, label",
  [
    ("table_a6.md", "a6_ppo", "a6_hts_ppo", "(a) HTS-RL Table A6's PPO"),
    ("table_minatar_ppo.md", "b_ppo", "b_hts_ppo_current,b_hts_ppo_stale", "(b) minatar_ppo"),
  ],
)
def test_hts_gradient_point_tables(kept_runs_only, capsys, page, ppo, hts, label):
  hts = ",".join(os.path.join(POINT, d) for d in hts.split(","))
  out = kept_runs_only / page
  hts_gradient_point.main(
    [f"--ppo={os.path.join(POINT, ppo)}", f"--hts={hts}", f"--label={label}", f"--out={out}"]
  )
  assert _read(out) == _read(os.path.join(POINT, page)), "the command in its module docstring"


def test_hts_delay_stability_table(kept_runs_only, monkeypatch, capsys):
  rates = delay.grid()
  cells = delay.table_cells(rates)  # from the kept runs
  kept = os.path.join(delay.KEPT, "table.md")
  monkeypatch.setattr(delay, "KEPT", str(kept_runs_only))
  monkeypatch.setattr(hts_delay_report, "picture", lambda *args: None)  # the table alone
  hts_delay_report.write(cells, rates)
  assert _read(kept_runs_only / "table.md") == _read(kept), "python -m experiments.hts_delay_report"
