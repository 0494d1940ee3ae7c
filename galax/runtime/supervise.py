"""Multi-process runs under a thin supervisor: one `error:` line on the terminal, whatever
the runtime does.

JAX's distributed client aborts its process with a C++ fatal-error trace when the
coordination service fails; where process 0 (which hosts the service) dies, that abort
comes at once, before any Python code can speak. So `run.py` runs a multi-process job's
training in a child process (`run_child`), and this parent, which imports no JAX:

* passes the child's stdout (the progress log) through to the terminal;
* writes the child's stderr (XLA/JAX warnings, tracebacks, C++ traces) to
  `<workdir>/logs/process<i>.stderr.log`, showing only galax's own one-line messages
  (`error:`, `warning:`, `preempted:`) on the terminal;
* forwards SIGTERM (preemption) to the child; the child dies with the parent (SIGKILL);
* when the child dies from a signal (a C++ abort), prints the one line galax could not:
  what killed it, the last good checkpoint, the log, and the restart command.

Exit status: the child's own (0, 2, 3, 75, 130, 143: see galax/config/cli.py); 75 for an abort
of JAX's distributed runtime (a lost peer or coordinator); 128 + N for other signals.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from typing import IO, Sequence

from galax.runtime import workdir as workdirs

CHILD_ENV = "GALAX_SUPERVISED_CHILD"  # set in the child: it trains instead of supervising
EXIT_LOST_PEER = 75  # as galax/runtime/peers.py (kept free of JAX imports here)
_SHOWN = ("error:", "warning:", "preempted:")
_PR_SET_PDEATHSIG = 1


def is_child() -> bool:
  return os.environ.get(CHILD_ENV) == "1"


def virtual_cpu_devices(xla_flags: str | None = None) -> int:
  """The CPU devices XLA_FLAGS asks for (--xla_force_host_platform_device_count), else 1.

  Several learners on one CPU run their collectives between these virtual devices; XLA:CPU
  aborts the process (a C++ fatal error) when one misses a rendezvous, so such a run is
  supervised as a multi-process one is."""
  flags = os.environ.get("XLA_FLAGS", "") if xla_flags is None else xla_flags
  count = 1
  for word in flags.split():
    name, _, value = word.partition("=")
    if name == "--xla_force_host_platform_device_count" and value.isdigit():
      count = int(value)
  return count


def _die_with_parent() -> None:
  """In the child, before exec: the kernel kills it (SIGKILL) when the parent dies."""
  try:
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
  except (OSError, AttributeError):  # not Linux: a killed parent leaves the child running
    pass


def _pump(stream: IO[str], log: IO[str], shown: list[str]) -> None:
  for line in stream:
    log.write(line)
    log.flush()
    if line.startswith(_SHOWN):
      shown.append(line)
      sys.stderr.write(line)
      sys.stderr.flush()


def _last_fatal(log_path: str) -> str:
  """The C++ fatal line ("F1125 ... client.h:80] Terminating process ...") in the log."""
  try:
    with open(log_path, errors="replace") as f:
      lines = [l for l in f if l[:1] == "F" and l[1:5].isdigit() and "] " in l]
  except OSError:
    return ""
  return " ".join(lines[-1].split("] ", 1)[1].split()) if lines else ""


def describe_death(signum: int, fatal: str) -> tuple[str, int]:
  """(what happened, exit status) for a child killed by signal `signum`."""
  name = signal.Signals(signum).name if signum in signal.Signals.__members__.values() else signum
  if "distributed service" in fatal or "coordination service" in fatal:
    who = (
      "lost process 0 (the coordination service does not answer)"
      if "send RPC to coordination service" in fatal
      else "a peer process was lost"
    )
    return (f"JAX's distributed runtime aborted ({name}): {who} ({fatal[:160]})", EXIT_LOST_PEER)
  if "rendezvous" in fatal.lower() or "Termination timeout" in fatal:
    return (
      f"a collective between devices timed out ({name}): XLA:CPU gives up when one device"
      f" misses it for 40 s ({fatal[:160]})",
      128 + int(signum),
    )
  return (
    f"the training process died from {name}" + (f" ({fatal[:160]})" if fatal else ""),
    128 + int(signum),
  )


def run_child(argv: Sequence[str], workdir: str, process: str, job: bool = True) -> int:
  """Runs `python argv` as the supervised child; returns the exit status to use. `job`: one
  process of a multi-process job (the restart line names every process)."""
  log_dir = os.path.join(workdirs.staging_dir(workdir), "logs")  # local, also for a URL
  os.makedirs(log_dir, exist_ok=True)
  log_path = os.path.join(log_dir, f"process{process}.stderr.log")
  with open(log_path, "a") as log:
    child = subprocess.Popen(
      [sys.executable, *argv],
      env=dict(os.environ, **{CHILD_ENV: "1"}),
      stderr=subprocess.PIPE,
      text=True,
      errors="replace",
      preexec_fn=_die_with_parent,
    )
    previous = {
      s: signal.signal(s, lambda signum, _: child.send_signal(signum))
      for s in (signal.SIGTERM, signal.SIGHUP)
    }
    # Ctrl-C reaches the child from the terminal itself; the parent waits for it.
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, lambda *_: None)
    shown: list[str] = []
    pump = threading.Thread(target=_pump, args=(child.stderr, log, shown), daemon=True)
    pump.start()
    status = child.wait()
    pump.join()
    for s, handler in previous.items():
      signal.signal(s, handler)
  if status > 0 and status not in (130, 143) and not shown:  # a traceback, kept in the log
    sys.stderr.write(f"error: process {process}: exited with status {status}; trace: {log_path}\n")
    sys.stderr.flush()
  if status >= 0:
    return status
  what, status = describe_death(-status, _last_fatal(log_path))
  sys.stdout.flush()
  sys.stderr.write(
    f"error: process {process}: {what}; last good checkpoint: "
    f"{workdirs.last_good(workdirs.join(workdir, 'checkpoints'))}; trace: "
    f"{log_path}; " + ("restart every process with --resume\n" if job else "rerun with --resume\n")
  )
  sys.stderr.flush()
  return status
