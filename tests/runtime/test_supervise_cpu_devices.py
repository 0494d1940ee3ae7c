"""Several learners on one CPU's virtual devices run supervised (galax/runtime/supervise.py):
XLA:CPU aborts a process whose collective misses its rendezvous, and the user gets one line."""

import signal

from galax.runtime import supervise

RENDEZVOUS = (
  "[id=1] Termination timeout for `collective permute RendezvousKey{run_id=RunId: -1,"
  " global_devices=[0, 1, 2, 3], num_local_participants=4}` of 40 seconds exceeded. Exiting"
  " to ensure a consistent program state."
)


def test_the_virtual_device_count_is_read_from_xla_flags():
  assert supervise.virtual_cpu_devices("") == 1
  assert supervise.virtual_cpu_devices("--xla_force_host_platform_device_count=4") == 4
  flags = "--xla_cpu_max_isa=AVX2 --xla_force_host_platform_device_count=8 --other=1"
  assert supervise.virtual_cpu_devices(flags) == 8
  assert supervise.virtual_cpu_devices("--xla_force_host_platform_device_count=x") == 1


def test_a_missed_rendezvous_is_named_in_one_line():
  what, status = supervise.describe_death(signal.SIGABRT, RENDEZVOUS)
  assert what.startswith("a collective between devices timed out (SIGABRT)")
  assert status == 128 + signal.SIGABRT
  assert "\n" not in what


def test_a_single_process_run_is_told_to_rerun_not_to_restart_every_process(
  tmp_path, monkeypatch, capsys
):
  """The child aborts (SIGABRT) after writing XLA's fatal line: the parent prints one line."""
  script = tmp_path / "child.py"
  script.write_text(
    "import os, signal, sys\n"
    f"sys.stderr.write('F1207 12:59:38.739470 5138 rendezvous.cc:161] {RENDEZVOUS}\\n')\n"
    "sys.stderr.flush()\n"
    "os.kill(os.getpid(), signal.SIGABRT)\n"
  )
  status = supervise.run_child([str(script)], str(tmp_path / "run"), "0", job=False)
  err = capsys.readouterr().err.strip().splitlines()
  assert status == 128 + signal.SIGABRT
  assert len(err) == 1 and err[0].startswith("error: process 0: a collective between devices")
  assert err[0].endswith("rerun with --resume")


def test_a_child_that_fails_without_a_line_of_its_own_gets_one(tmp_path, capsys):
  """An unexpected traceback goes to the log; the terminal still gets one line."""
  script = tmp_path / "child.py"
  script.write_text(
    "import sys\nsys.stderr.write('Traceback (most recent call last):\\n')\nsys.exit(1)\n"
  )
  status = supervise.run_child([str(script)], str(tmp_path / "run"), "0", job=False)
  err = capsys.readouterr().err.strip().splitlines()
  assert status == 1
  assert len(err) == 1 and err[0].startswith("error: process 0: exited with status 1; trace: ")
