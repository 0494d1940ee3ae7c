"""A lost peer in a multi-process job: one line, the trace in a log file, a bounded exit.

When a process of a `jax.distributed` job dies (killed, out of memory, a lost host),
nothing can be saved any more: checkpoints are written collectively. A survivor learns
of it in one of two ways, and galax turns both into the same exit:

* Its next collective fails (`JaxRuntimeError`, e.g. "Gloo collective permute failed ...
  Connection reset by peer"), within a second where the dead process's sockets close.
  Left alone, the survivor would try to save, print a traceback, then abort in JAX's
  shutdown with a C++ fatal-error trace.
* It waits in a collective that never completes (a host that vanished closes nothing).
  `watch`'s thread then finds the peer's heartbeat (a counter in the coordination
  service's key-value store) silent for `peer_timeout_s`, or the store itself gone with
  process 0. JAX's own heartbeat timeout, after which its client aborts the process, is
  set above galax's (`jax_heartbeat_timeout`).

Either way `exit_lost_peer` / the watchdog:

1. writes what happened (the traceback, or the heartbeats seen) to
   `<workdir>/logs/process<i>.crash.log`;
2. prints one line to stderr, naming this process, the lost process where known, the
   failure, the last good checkpoint and the restart command;
3. exits at once with `EXIT_LOST_PEER` (75, EX_TEMPFAIL: "try again"), skipping the
   interpreter's shutdown, where JAX's distributed client would abort.

JAX's client can still abort first (process 0's death ends every client's error polling
at once); run.py's supervisor (galax/runtime/supervise.py) then prints the line instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
import traceback
from typing import Callable, Iterator, NoReturn

import jax
from jax._src import distributed

EXIT_LOST_PEER = 75  # EX_TEMPFAIL (sysexits.h): restart the job with --resume
PEER_TIMEOUT_S = 30  # galax's default: a peer silent this long is lost
JAX_HEARTBEAT_TIMEOUT_S = 100  # JAX's default, after which its client aborts

_exiting = threading.Lock()  # one line, whichever thread notices first
_where: dict[str, Callable[[], str] | str | None] = dict(workdir=None, last_good=None)
_settings = dict(timeout_s=float(PEER_TIMEOUT_S), period_s=2.0)


def collective_failed(error: BaseException) -> bool:
  """Whether `error` is a runtime failure of a multi-process job (a collective or the
  distributed runtime), after which no process can checkpoint."""
  return jax.process_count() > 1 and isinstance(error, jax.errors.JaxRuntimeError)


def _unhealthy(message: str) -> list[int]:
  """The process ids the coordination service's error names ("... unhealthy (stopped
  sending heartbeats):\n1\n...")."""
  found = re.search(r"unhealthy[^:]*:\s*([\d\s,]+)", message)
  return sorted({int(x) for x in re.findall(r"\d+", found.group(1))}) if found else []


def _who(message: str) -> str:
  lost = _unhealthy(message)
  if lost:
    return f"lost process{'es' if len(lost) > 1 else ''} {', '.join(map(str, lost))}"
  unanswered = "send RPC" in message or "unavailable" in message.lower()
  if "coordination service" in message and unanswered:
    return "lost process 0 (the coordination service does not answer)"
  return "a peer process is likely lost"


def write_log(text: str, workdir: str | None) -> str:
  """Writes `text` to the workdir's (else the temp dir's) crash log; returns its path."""
  directory = os.path.join(workdir, "logs") if workdir else os.environ.get("TMPDIR", "/tmp")
  path = os.path.join(directory, f"process{jax.process_index()}.crash.log")
  try:
    os.makedirs(directory, exist_ok=True)
    with open(path, "w") as f:
      f.write(text)
  except OSError as e:
    return f"(could not write a log: {e})"
  return path


def _exit(what: str, log_text: str, workdir: str | None, last_good: str) -> NoReturn:
  _exiting.acquire()  # a second thread waits here until the process is gone
  log_path = write_log(log_text, workdir)
  line = (
    f"error: process {jax.process_index()} of {jax.process_count()}: {what}; last good "
    f"checkpoint: {last_good}; trace: {log_path}; restart every process with --resume"
  )
  sys.stdout.flush()
  sys.stderr.write(line + "\n")
  sys.stderr.flush()
  os._exit(EXIT_LOST_PEER)  # skip JAX's shutdown abort


def exit_lost_peer(error: BaseException, workdir: str | None, last_good: str) -> NoReturn:
  """A failed collective: says so in one line (stderr), the trace in a log; exits 75."""
  text = " ".join(str(error).split())
  _exit(
    f"a collective failed, {_who(text)} ({text[:200]}{'...' if len(text) > 200 else ''})",
    "".join(traceback.format_exception(error)),
    workdir,
    last_good,
  )


class _Watchdog:
  """Heartbeats through the coordination service's key-value store, watched by a thread.

  Every `period_s` this process bumps its counter `galax/heartbeat/<i>` and reads all
  counters in one call. A peer whose counter has not moved for `timeout_s` (by this
  process's clock) is lost; a store that does not answer means process 0 is lost. A
  process that leaves `train` writes "done", and is never counted as lost after that.
  """

  PREFIX = "galax/heartbeat/"

  def __init__(self, client, timeout_s: float, period_s: float):
    self.client, self.timeout_s, self.period_s = client, timeout_s, period_s
    self.me, self.n = jax.process_index(), jax.process_count()
    self.stopping = threading.Event()
    self.thread = threading.Thread(target=self._run, name="galax-peer-watchdog", daemon=True)

  def _key(self, process: int) -> str:
    return f"{self.PREFIX}{process}"

  def _run(self) -> None:
    seen: dict[int, tuple[str, float]] = {}  # peer -> (last value, local time it changed)
    start, beat = time.monotonic(), 0
    while not self.stopping.wait(self.period_s if beat else 0.0):
      beat += 1
      try:
        self.client.key_value_set(self._key(self.me), str(beat), allow_overwrite=True)
        values = dict(self.client.key_value_dir_get(self.PREFIX))
      except Exception as e:  # the service is gone
        if not self.stopping.is_set():
          _on_lost(
            f"the coordination service does not answer: lost process 0 "
            f"({' '.join(str(e).split())[:160]})",
            repr(e),
          )
        return
      now = time.monotonic()
      for peer in range(self.n):
        value = values.get(self._key(peer))
        if peer == self.me or value == "done":
          continue
        if value is not None and seen.get(peer, (None,))[0] != value:
          seen[peer] = (value, now)
        silent = now - seen.get(peer, (None, start))[1]
        if silent > self.timeout_s and not self.stopping.is_set():
          _on_lost(
            f"lost process {peer}: no heartbeat for {silent:.0f}s "
            f"(peer_timeout_s={self.timeout_s:g})",
            f"heartbeats seen: {values}",
          )

  def stop(self) -> None:
    self.stopping.set()
    self.thread.join()
    try:
      self.client.key_value_set(self._key(self.me), "done", allow_overwrite=True)
    except Exception:  # the job is ending anyway
      pass


def _on_lost(what: str, log_text: str) -> None:
  last_good = _where["last_good"]
  _exit(what, log_text, _where["workdir"], last_good() if callable(last_good) else "unknown")


@contextlib.contextmanager
def watch(workdir: str | None, last_good: Callable[[], str]) -> Iterator[None]:
  """While `train` runs: a lost peer ends this process with one line (module docstring)."""
  _where.update(workdir=workdir, last_good=last_good)
  client = distributed.global_state.client
  if jax.process_count() == 1 or client is None:
    yield
    return
  watchdog = _Watchdog(client, _settings["timeout_s"], _settings["period_s"])
  watchdog.thread.start()
  try:
    yield
  finally:
    watchdog.stop()


def initialize(
  coordinator_address: str | None = None,
  num_processes: int | None = None,
  process_id: int | None = None,
  peer_timeout_s: float = PEER_TIMEOUT_S,
) -> None:
  """`jax.distributed.initialize`, with galax's lost-peer watchdog set to `peer_timeout_s`.

  JAX's own heartbeat timeout (after which its client aborts the process with a C++
  trace) is set well above it, so that galax's line comes first.
  """
  if peer_timeout_s <= 0:
    raise ValueError(f"peer_timeout_s must be > 0, got {peer_timeout_s}.")
  _settings.update(timeout_s=float(peer_timeout_s), period_s=min(2.0, peer_timeout_s / 4))
  jax.distributed.initialize(
    coordinator_address=coordinator_address,
    num_processes=num_processes,
    process_id=process_id,
    heartbeat_timeout_seconds=jax_heartbeat_timeout(peer_timeout_s),
  )


def jax_heartbeat_timeout(peer_timeout_s: float) -> int:
  """JAX's heartbeat timeout for a galax peer timeout: its default, or twice galax's."""
  return int(max(JAX_HEARTBEAT_TIMEOUT_S, 2 * peer_timeout_s))
