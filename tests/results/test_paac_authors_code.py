"""docs/results/pong_paac_code/paac_authors_code.py's bookkeeping: what a resumed run of the
authors' code keeps.

Their code itself needs TensorFlow and ale-py, which the suite does not install; these
tests cover the harness's own parts, which decide what the curves show."""

import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "docs", "results", "pong_paac_code", "paac_authors_code.py")
_spec = importlib.util.spec_from_file_location("paac_authors_code", SCRIPT)
pac = importlib.util.module_from_spec(_spec)  # a study's script, kept beside its results
_spec.loader.exec_module(pac)


def test_rows_every_log_every_steps_with_the_running_mean_of_100_games(tmp_path):
  log = pac.EpisodeLog(str(tmp_path), resume_step=0, log_every=1000)
  log.update(500)  # no game yet: no row
  for i in range(150):
    log.game(600 + i, -21.0 if i < 50 else -19.0)
  log.update(900)  # same 1000-step bucket as step 0: no row
  log.update(1060)
  log.update(1900)
  log.update(2020)
  steps = [r["env_steps"] for r in pac._read_rows(log.metrics_path)]
  assert steps == [1060, 2020]
  assert log.rows[0]["mean_return"] == -19.0  # the last 100 games only
  assert log.rows[0]["episodes"] == 150


def test_resume_drops_games_and_rows_after_the_checkpoint(tmp_path):
  log = pac.EpisodeLog(str(tmp_path), resume_step=0, log_every=100)
  for step in (50, 150, 250, 350):
    log.game(step, float(step))
    log.update(step + 10)
  resumed = pac.EpisodeLog(str(tmp_path), resume_step=200, log_every=100)
  assert [g["env_steps"] for g in resumed.games] == [50, 150]
  assert [r["env_steps"] for r in resumed.rows] == [160]
  assert resumed.time_offset == log.rows[0]["train_time_s"]
  assert [g["env_steps"] for g in pac._read_rows(resumed.episodes_path)] == [50, 150]
  resumed.game(230, -1.0)
  resumed.update(260)
  assert [r["env_steps"] for r in pac._read_rows(resumed.metrics_path)] == [160, 260]
  assert resumed.rows[-1]["mean_return"] == (50 + 150 - 1) / 3


def test_checkpoint_step_reads_tensorflows_checkpoint_state(tmp_path):
  assert pac.checkpoint_step(str(tmp_path)) == 0
  (tmp_path / "checkpoint").write_text(
    'model_checkpoint_path: "/x/checkpoints/-33632"\nall_model_checkpoint_paths: "/x/-10080"\n'
  )
  assert pac.checkpoint_step(str(tmp_path)) == 33632


def test_a_folder_without_their_code_is_one_error_line(tmp_path):
  script = SCRIPT
  run = subprocess.run(
    [sys.executable, script, f"--code={tmp_path}", f"--workdir={tmp_path / 'w'}"],
    capture_output=True,
    text=True,
    timeout=60,
  )
  assert run.returncode != 0
  assert run.stderr.strip().splitlines() == [
    f"error: --code={tmp_path} is not a checkout of Alfredvc/paac (no paac.py)"
  ]


def test_the_last_step_gets_a_row_once(tmp_path):
  log = pac.EpisodeLog(str(tmp_path), resume_step=0, log_every=1000)
  log.game(100, -20.0)
  log.update(1200)
  log.update(1500, last=True)
  log.update(1500, last=True)
  assert [r["env_steps"] for r in pac._read_rows(log.metrics_path)] == [1200, 1500]


def _fake_clock(monkeypatch, *times: float) -> None:
  """time.time() in the harness returns `times` in turn."""
  clock = iter(times)
  monkeypatch.setattr(pac.time, "time", lambda: next(clock))


def test_steps_per_second_after_a_resume_counts_from_the_checkpoint(tmp_path, monkeypatch):
  _fake_clock(monkeypatch, 0.0, 10.0, 100.0, 110.0)
  log = pac.EpisodeLog(str(tmp_path), resume_step=0, log_every=1000)
  log.game(500, -21.0)
  log.update(1000)  # 1000 steps in 10 s
  resumed = pac.EpisodeLog(str(tmp_path), resume_step=1500, log_every=1000)
  resumed.update(2000)  # 500 steps since the checkpoint, in 10 s
  assert log.rows[0]["steps_per_second"] == 100.0
  assert resumed.rows[-1]["steps_per_second"] == 50.0


def test_the_results_rate_is_the_whole_sittings_not_the_last_rows(tmp_path, monkeypatch):
  _fake_clock(monkeypatch, 0.0, 10.0, 12.0, 12.0)
  log = pac.EpisodeLog(str(tmp_path), resume_step=1000, log_every=1000)
  log.game(1500, -21.0)
  log.update(2000)  # 1000 steps in 10 s
  log.update(3000, last=True)  # 1000 more in 2 s
  assert log.rows[-1]["steps_per_second"] == 500.0
  assert log.sitting_rate(3000) == 2000 / 12.0
