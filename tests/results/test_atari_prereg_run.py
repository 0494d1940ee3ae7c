"""`python -m experiments.atari_prereg run`: a SIGTERM to it reaches the run it started, so
the run saves its checkpoint instead of training on orphaned, and the queue stops there."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from galax.runtime.preemption import EXIT_PREEMPTED

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Stands in for run.py: records that it started, and on SIGTERM that it "saved" and exits
# as a preempted galax run does.
FAKE_RUN = """
import os, signal, sys, time
name = [a for a in sys.argv if a.startswith("--workdir=")][0].split("=", 1)[1]
def saved(*_):
  open(name + ".saved", "w").close()
  sys.exit({code})
signal.signal(signal.SIGTERM, saved)
open(name + ".started", "w").close()
time.sleep(60)
"""

DRIVER = """
import sys
from experiments import atari_prereg
atari_prereg.ROOT, atari_prereg.RUNS_DIR = sys.argv[1], sys.argv[1]
atari_prereg.registered = lambda: dict(first=[], second=[])
atari_prereg.run(["first", "second"])
"""


def _wait_for(path: str, seconds: float) -> bool:
  end = time.monotonic() + seconds
  while time.monotonic() < end:
    if os.path.exists(path):
      return True
    time.sleep(0.05)
  return False


def test_sigterm_reaches_the_run_and_stops_the_queue(tmp_path):
  with open(tmp_path / "run.py", "w") as f:
    f.write(FAKE_RUN.format(code=EXIT_PREEMPTED))
  log = tmp_path / "driver.log"
  with open(log, "w") as out_file:  # a file, not a pipe: an orphaned run would hold a pipe open
    driver = subprocess.Popen(
      [sys.executable, "-c", textwrap.dedent(DRIVER), str(tmp_path)],
      cwd=ROOT,
      stdout=out_file,
      stderr=subprocess.STDOUT,
    )
  try:
    assert _wait_for(str(tmp_path / "first.started"), 60), log.read_text()
    driver.send_signal(signal.SIGTERM)
    driver.wait(timeout=30)
    out = log.read_text()
    assert _wait_for(str(tmp_path / "first.saved"), 5), out
    assert driver.returncode == EXIT_PREEMPTED, out
    assert not os.path.exists(tmp_path / "second.started"), out
    assert "first: preempted (checkpoint saved)" in out
  finally:
    driver.kill()
    subprocess.run(["pkill", "-f", str(tmp_path / "run.py")], check=False)
