"""One writer per run directory: an advisory lock held for the whole run.

Two processes on one `--workdir` (a `--resume` started while the first run is alive) would
both write checkpoints and interleave metric rows. `hold(workdir)` takes an exclusive
`flock` on `<workdir>/run.lock` without waiting and writes the holder's pid and host into
it; the lock lives as long as the open file, so the kernel drops it when the holder exits,
however it ends (SIGKILL included), and no pid check can be fooled by a reused pid.

* A second process finds the lock taken and raises `WorkdirLocked` (a ValueError: one
  `error:` line naming the holder's pid and host, exit status 2) before it writes anything.
* A lock file left by a killed run still names its holder but is not locked: the next run
  takes it over and warns, naming the run it replaces.
* A run that ends normally empties the file, so the next one starts silently.
* A run that fails before writing anything (a rejected env id, a failed `--resume`)
  leaves no trace: the lock file goes, with the empty folders under it, and the workdir
  itself, with the folders above it that this run made (`hold(..., made=...)`).

Multi-host jobs share one workdir: process 0 holds the lock (train.py calls `hold` there
only). On a network filesystem the lock is as good as its `flock` (Linux's NFS client maps
it to a POSIX byte-range lock, which the server enforces across hosts).

A URL workdir (`gs://`, `s3://`; galax/runtime/workdir.py) gets weaker guarantees, because an
object store has no lock: the `flock` is taken on the run's local staging folder, which
stops a second run for the same URL on the same host; across hosts `run.lock` in the
store only *names* its writer. A run that finds it naming another run warns (it cannot
tell a live writer from a killed one) and goes on; a run that ends normally empties it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from typing import Callable, Iterator

from galax.runtime import workdir as workdirs

LOCK_FILE = "run.lock"


class WorkdirLocked(ValueError):
  """Another live process holds the run directory."""


def _holder(text: str) -> dict:
  try:
    holder = json.loads(text)
    return holder if isinstance(holder, dict) else {}
  except ValueError:
    return {}


def _describe(holder: dict) -> str:
  if not holder:
    return "an unknown process"
  return f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}"


@contextlib.contextmanager
def hold(
  workdir: str, log: Callable[[str], None] = print, made: str | None = None
) -> Iterator[None]:
  """Holds `workdir`'s lock for the duration; raises WorkdirLocked if a live run has it.
  `made`: the outermost folder of a local `workdir` that this run made (`first_missing`),
  removed again if the run fails before writing anything."""
  if not workdirs.is_remote(workdir):
    with _flock(workdir, workdir, log, made):
      yield
    return
  with _flock(workdirs.staging_dir(workdir), workdir, log), _named_in_store(workdir, log):
    yield


@contextlib.contextmanager
def _named_in_store(workdir: str, log: Callable[[str], None]) -> Iterator[None]:
  """`run.lock` in an object store: names this run; warns if it names another."""
  marker = workdirs.path(workdirs.join(workdir, LOCK_FILE))
  other = _holder(marker.read_text()) if marker.exists() else {}
  if other:
    log(
      f"warning: {workdir!r} names {_describe(other)} as its writer, which did not end "
      f"normally or is still running (an object store cannot tell which); if it runs, "
      f"stop one of the two"
    )
  marker.write_text(json.dumps(dict(pid=os.getpid(), host=socket.gethostname(), since=time.time())))
  try:
    yield
  finally:
    marker.write_text("")


@contextlib.contextmanager
def _flock(
  folder: str, workdir: str, log: Callable[[str], None], made: str | None = None
) -> Iterator[None]:
  """The `flock` on `<folder>/run.lock` (`folder`: the workdir, or a URL's staging copy).
  Whatever stops the run before it wrote anything (a Ctrl-C during this very call too)
  leaves no lock file, and none of the folders it `made`."""
  held = emptied = False
  fd = None
  try:
    os.makedirs(folder, exist_ok=True)
    fd = os.open(os.path.join(folder, LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      holder = _holder(os.pread(fd, 4096, 0).decode(errors="replace"))
      raise WorkdirLocked(
        f"--workdir {workdir!r} is in use by a running galax run ({_describe(holder)}); "
        f"wait for it to end or stop it, or choose another --workdir."
      ) from None
    held = True
    _take(fd, workdir, log)
    try:
      yield
    finally:
      os.ftruncate(fd, 0)  # ended (or failed): nothing stale to report next time
  except BaseException:
    if held or made:  # while held no other run can have taken it; a made folder is ours
      emptied = _remove_if_unused(folder)
    raise
  finally:
    if fd is not None:
      os.close(fd)  # releases the flock
    if emptied and made:
      _remove_made(folder, made)


def _take(fd: int, workdir: str, log: Callable[[str], None]) -> None:
  """Writes this process into the held lock file, warning of a holder that died."""
  stale = _holder(os.pread(fd, 4096, 0).decode(errors="replace"))
  if stale:
    log(
      f"warning: taking over the lock of {workdir!r} from {_describe(stale)}, which "
      f"ended without releasing it (killed or crashed)"
    )
  me = dict(pid=os.getpid(), host=socket.gethostname(), since=time.time())
  os.ftruncate(fd, 0)
  os.pwrite(fd, json.dumps(me).encode(), 0)
  os.fsync(fd)


def first_missing(workdir: str) -> str | None:
  """The outermost folder of local `workdir` that does not exist yet (None if it does)."""
  if workdirs.is_remote(workdir):
    return None
  folder, missing = os.path.abspath(workdir), None
  while not os.path.exists(folder):
    folder, missing = os.path.dirname(folder), folder
  return missing


def _remove_made(folder: str, made: str) -> None:
  """Removes `folder` and its parents up to `made`, while they are empty."""
  folder, made = os.path.abspath(folder), os.path.abspath(made)
  with contextlib.suppress(OSError):
    while True:
      os.rmdir(folder)
      if folder == made or len(folder) <= len(made):
        return
      folder = os.path.dirname(folder)


def _remove_if_unused(folder: str) -> bool:
  """Removes the lock file and the empty folders under `folder` if that is all it holds (a
  run that failed before writing anything); says whether it did."""
  tree = list(os.walk(folder, topdown=False))
  if any(files not in ([LOCK_FILE] if root == folder else [], []) for root, _, files in tree):
    return False
  with contextlib.suppress(FileNotFoundError):  # stopped before it made the lock file
    os.unlink(os.path.join(folder, LOCK_FILE))
  for root, _, _ in tree:
    if root != folder:
      os.rmdir(root)
  return True
