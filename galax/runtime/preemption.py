"""Preemption: SIGTERM stops a run after its current call, with a checkpoint of that call.

Preemptible TPUs and Spot VMs, SLURM's time limit and Kubernetes evictions send SIGTERM
and, after a grace period, SIGKILL. While `train` runs it holds a `watch()`; the loop asks
`Watch.reached(call)` after each whole call (a jitted call is never cut short, the first,
compiling one included), and when it says so the run saves that call's state, writes
result.json (`stopped: "preempted"`), prints one `preempted: ...` line and raises
`Preempted`, a SystemExit with status `EXIT_PREEMPTED` (143 = 128 + SIGTERM, what a shell
reports for a process that SIGTERM killed).

* One process: a Python handler sets a flag (in the main thread; the previous handler is
  restored when the run ends). A second SIGTERM sets it again and cuts nothing short.
* Several processes (`jax.distributed`): every process must stop after the same call, as
  checkpoints are written collectively. `jax.distributed.initialize()` installs JAX's own
  SIGTERM handler (a C++ flag, polled once a second); the process that gets the signal
  posts a notice to the coordination service, and a background protocol on every process
  sets the sync point to the call after the furthest process's current one.
  `reached_preemption_sync_point(call)` is a local check until then: no collective per
  call. galax installs no Python handler there, as it would replace JAX's. Call numbers
  count this run's calls (1, 2, ...), the same on every process, as the protocol needs.
* Several processes with JAX's preemption service off (`jax_enable_preemption_service`):
  a Python flag as for one process, gathered from all processes after every call (one
  small extra all-gather per call).

Before `train` starts (imports, `jax.distributed.initialize`), SIGTERM ends a process at
once: nothing has been trained yet.

Ctrl-C (SIGINT) raises KeyboardInterrupt, after the current call too (`ctrl_c_at_call_end`:
a call holds the run's state, donated to its jitted updates), except in a sitting's first,
compiling call and when pressed twice; the loop then saves the call's state (hooks.py
`CheckpointHook.save_on_stop`). Writes hold it back until they end (`sigint_deferred`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Callable, Iterator, Protocol

import jax
import numpy as np
from jax.experimental import multihost_utils

EXIT_PREEMPTED = 128 + signal.SIGTERM  # 143


class Preempted(SystemExit):
  """The run stopped after a SIGTERM (its state saved, if it had a workdir).

  A SystemExit: uncaught, the process exits with status 143 and no traceback (the run
  has printed its one line, `message`); `except Exception` does not swallow it.
  """

  def __init__(self, message: str):
    super().__init__(EXIT_PREEMPTED)
    self.message = message


class Watch(Protocol):
  """Whether the run must stop and save after call `call` (1, 2, ... of this run; every
  process asks after every call, with the same numbers)."""

  def reached(self, call: int) -> bool: ...


class _Never:
  """Outside the main thread no handler can be installed: SIGTERM keeps its default action."""

  def reached(self, call: int) -> bool:
    del call
    return False


class _LocalFlag:
  """One process: set by the SIGTERM handler."""

  def __init__(self):
    self.received = False

  def handle(self, signum, frame) -> None:
    del signum, frame
    self.received = True

  def reached(self, call: int) -> bool:
    del call
    return self.received


class _GatheredFlag(_LocalFlag):
  """Several processes without JAX's preemption service: any process's flag stops all."""

  def reached(self, call: int) -> bool:
    del call
    return bool(np.any(multihost_utils.process_allgather(np.int32(self.received))))


class _SyncPoint:
  """Several processes: JAX's preemption sync point (its own SIGTERM handler)."""

  def reached(self, call: int) -> bool:
    return multihost_utils.reached_preemption_sync_point(call)


def _jax_preemption_service() -> bool:
  """Whether jax.distributed started its preemption sync manager (and SIGTERM handler).

  Asked through the public call, which raises RuntimeError without one; call 0 is the
  count the manager starts from, so asking it changes nothing.
  """
  try:
    multihost_utils.reached_preemption_sync_point(0)
  except RuntimeError:
    return False
  return True


@contextlib.contextmanager
def watch() -> Iterator[Watch]:
  """SIGTERM, noted for `Watch.reached` while the block runs (see the module docstring)."""
  if jax.process_count() > 1 and _jax_preemption_service():
    yield _SyncPoint()
    return
  if threading.current_thread() is not threading.main_thread():
    yield _Never()
    return
  flag = _GatheredFlag() if jax.process_count() > 1 else _LocalFlag()
  previous = signal.signal(signal.SIGTERM, flag.handle)
  try:
    yield flag
  finally:
    # None: a handler installed outside Python, which Python cannot put back.
    signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


_ctrl_c_pending = False  # a Ctrl-C came while `ctrl_c_noted` held (see there)


@contextlib.contextmanager
def ctrl_c_noted() -> Iterator[None]:
  """Ctrl-C raises KeyboardInterrupt as usual, and is noted too (main thread only).

  Python raises it in whatever Python code runs when the signal comes. During a compile
  that can be jax's garbage-collection callback, whose exceptions Python prints and drops
  ("Exception ignored in: _xla_gc_callback"): the run went on to its end. The loop calls
  `raise_dropped_ctrl_c` after each call, so a dropped one still stops the run there.
  """
  global _ctrl_c_pending
  if threading.current_thread() is not threading.main_thread():
    yield
    return

  def handle(signum, frame):
    global _ctrl_c_pending
    del signum, frame
    _ctrl_c_pending = True
    raise KeyboardInterrupt

  def unraisable(hook_args):  # the dropped KeyboardInterrupt: noted, so not printed
    if not isinstance(hook_args.exc_value, KeyboardInterrupt):
      previous_hook(hook_args)

  previous, previous_hook = signal.signal(signal.SIGINT, handle), sys.unraisablehook
  sys.unraisablehook = unraisable
  try:
    yield
  finally:
    signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
    sys.unraisablehook = previous_hook
    _ctrl_c_pending = False


WAITING_LINE = (
  "Ctrl-C: stopping when this call ends, to save it (Ctrl-C again stops at once, unsaved)"
)


class CallWindow:
  """A call's Ctrl-C (`ctrl_c_at_call_end`): the first is noted and said, a second raises
  KeyboardInterrupt at once until `settled` (the call has returned its state)."""

  def __init__(self, say: Callable[[str], None]):
    self.say, self.received, self.urgent = say, 0, True

  def handle(self, signum, frame) -> None:
    del signum, frame
    self.received += 1
    if self.received == 1:
      self.say(WAITING_LINE)
    elif self.urgent:
      raise KeyboardInterrupt  # the user insists: this call's state is lost

  def settled(self) -> None:
    """From here to the window's end a second Ctrl-C waits too: the run's state and its
    counters change together."""
    self.urgent = False


@contextlib.contextmanager
def ctrl_c_at_call_end(say: Callable[[str], None]) -> Iterator[CallWindow]:
  """Ctrl-C during a call takes effect when the call ends (main thread only).

  A call donates the run's state to its jitted update (`compile_step`): a KeyboardInterrupt
  raised inside it, where the main thread wakes from each update's dispatch, leaves the
  run holding deleted arrays and its new state lost. So the first Ctrl-C is noted (`say`
  tells the user) and raised as the window closes, once the run holds the call's state; a
  second one before `CallWindow.settled` stops at once, without that state.
  """
  window = CallWindow(say)
  if threading.current_thread() is not threading.main_thread():
    yield window
    return
  previous = signal.signal(signal.SIGINT, window.handle)
  try:
    yield window
  finally:
    signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
  if window.received:
    signal.raise_signal(signal.SIGINT)  # to the restored handler: KeyboardInterrupt


def raise_dropped_ctrl_c() -> None:
  """KeyboardInterrupt if a Ctrl-C came since the last call (see `ctrl_c_noted`)."""
  global _ctrl_c_pending
  if _ctrl_c_pending:
    _ctrl_c_pending = False
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigint_deferred(deliver: bool = True):
  """Holds Ctrl-C back while a write runs (main thread only), so that it cannot cut the
  write short: a checkpoint, or TensorBoard's event queue (whose lock a Ctrl-C can strand).
  With `deliver`, a Ctrl-C that came meanwhile is raised once the write is done (a periodic
  save: the run must still stop); without, it is dropped (the save of a run that is
  already stopping)."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  received = []
  previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
  try:
    yield
  finally:
    signal.signal(signal.SIGINT, previous)
  if received and deliver:
    signal.raise_signal(signal.SIGINT)  # to the restored handler: KeyboardInterrupt
