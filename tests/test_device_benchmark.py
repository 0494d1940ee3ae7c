"""benchmarks/device.py: the one-call accelerator benchmark, run at its CPU smoke scale;
phases that fail, run past their time box or do not fit the budget are recorded as such."""

import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SCRIPT = os.path.join(ROOT, "benchmarks", "device.py")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import device  # noqa: E402  pylint: disable=g-import-not-at-top

STATUSES = {"ok", "skipped", "failed", "timeout", "out of budget"}


def _run(tmp_path, *flags, timeout=300):
  return subprocess.run([sys.executable, SCRIPT, f"--out={tmp_path}", *flags],
                        capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def _summary(tmp_path):
  with open(tmp_path / "summary.json") as f:
    return json.load(f)


@pytest.mark.slow
def test_the_smoke_scale_records_every_phase_in_under_3_minutes(tmp_path):
  start = time.monotonic()
  proc = _run(tmp_path, "--scale=smoke")
  wall = time.monotonic() - start
  assert proc.returncode == 0, proc.stderr[-3000:]
  summary = _summary(tmp_path)
  assert list(summary["phases"]) == list(device.PHASES)
  for name, record in summary["phases"].items():
    assert record["status"] in STATUSES, (name, record)
    assert isinstance(record["result"], dict), name
  assert summary["phases"]["env"]["status"] == "ok", summary["phases"]["env"]
  assert summary["phases"]["env"]["result"]["devices"]
  markdown = (tmp_path / "summary.md").read_text()
  for name in device.PHASES:
    assert f"| {name} |" in markdown
  assert wall < 180, f"{wall:.0f} s:\n{proc.stdout}"


@pytest.mark.slow
def test_a_failing_or_timed_out_phase_is_recorded_and_the_rest_go_on(tmp_path):
  # A config that does not exist: run.py stops with one line, the phase fails with it.
  proc = _run(tmp_path / "a", "--scale=smoke", "--phases=pong_many_to_18,env",
              "--many_config=no_such_config", "--budget_s=60")
  assert proc.returncode == 0, proc.stderr[-3000:]
  phases = _summary(tmp_path / "a")["phases"]
  assert phases["pong_many_to_18"]["status"] == "failed"
  assert "galax exited with 2" in phases["pong_many_to_18"]["note"]
  # A 6 s box cannot hold MinAtar PPO (imports, compile, 64 updates a call): it is stopped,
  # and nothing is left for env.
  proc = _run(tmp_path / "b", "--scale=smoke", "--phases=minatar_galax,env", "--budget_s=11")
  assert proc.returncode == 0, proc.stderr[-3000:]
  phases = _summary(tmp_path / "b")["phases"]
  assert phases["minatar_galax"]["status"] == "timeout"
  assert phases["env"]["status"] == "out of budget"
  assert "| minatar_galax | timeout |" in (tmp_path / "b" / "summary.md").read_text()


@pytest.mark.parametrize("flags, message", [
    (["--scale=huge"], "error: --scale='huge': choose one of full, smoke"),
    (["--phases=env,nope"], "error: unknown phase 'nope': choose from env, raw_envpool"),
    (["--budget_s=-1"], "error: --budget_s=-1 must be >= 0"),
])
def test_bad_input_is_one_error_line(tmp_path, flags, message):
  proc = _run(tmp_path, *flags, timeout=60)
  assert proc.returncode == 2
  assert proc.stderr.strip().startswith(message), proc.stderr
  assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_an_unwritable_out_is_one_error_line(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("")
  proc = subprocess.run([sys.executable, SCRIPT, f"--out={blocker}/sub"], capture_output=True,
                        text=True, cwd=ROOT, timeout=60)
  assert proc.returncode == 2
  assert proc.stderr.strip().startswith(f"error: --out={blocker}/sub: cannot create it")
  assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
