"""Run directories: a local path, or an object-store URL (`gs://bucket/run`, `s3://...`).

On a remote workdir the two kinds of files take two routes:

* **Checkpoints** (`checkpoints/`, `best/`) go straight to the store through orbax, which
  writes `gs://` and `s3://` itself (TensorStore for the arrays, etils.epath for the rest)
  and, on a store without renames, marks a finished save with its `commit_success.txt`.
  Every process of a multi-host job writes its part there, as on a shared disk.
* **galax's own files** (config.json, metrics.csv, eval.csv, result.json, tb/) are appended
  to line by line, which an object store cannot do. They are written to a local staging
  copy (`staging_dir`) and uploaded whole after every checkpoint and when the run ends
  (`Mirror.push`), so the store holds them as of the newest checkpoint. `--resume`
  downloads them first (`Mirror.pull`). Crash logs stay local, in the staging copy's logs/.

This module imports no JAX (the supervisor of multi-process runs uses it) and imports
etils.epath only for remote paths.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from typing import Iterator

from etils import epath

REMOTE_SCHEMES = {"gs": "gcsfs", "s3": "s3fs"}  # scheme: the fsspec package epath uses
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
CHECKPOINT_DIRS = ("checkpoints", "best")  # written by orbax in place, never staged
COMMIT_MARKER = "commit_success.txt"  # orbax's: the last file of a finished save
PROBE_TIMEOUT_S = 5.0  # a remote workdir's test write answers within this, or the run stops


def scheme(path: str) -> str | None:
  """`gs` for `gs://b/x`; None for a local path."""
  match = _SCHEME.match(path)
  return match.group(1).lower() if match else None


def is_remote(path: str) -> bool:
  return scheme(path) is not None


def join(workdir: str, *names: str) -> str:
  """`os.path.join` that keeps a URL's `//` (os.path.normpath would make it `gs:/b`)."""
  if not is_remote(workdir):
    return os.path.join(workdir, *names)
  return "/".join([workdir.rstrip("/"), *names])


def absolute(path: str) -> str:
  return path if is_remote(path) else os.path.abspath(path)


def staging_dir(workdir: str) -> str:
  """Where a run writes its own files: the workdir itself if local; for a URL, a local
  folder named after it under $GALAX_STAGING (default ~/.cache/galax/staging)."""
  if not is_remote(workdir):
    return workdir
  root = os.environ.get("GALAX_STAGING") or os.path.join(
    os.path.expanduser("~"), ".cache", "galax", "staging"
  )
  url = workdir.rstrip("/")
  readable = re.sub(r"[^A-Za-z0-9._-]+", "_", url)[-80:]
  return os.path.join(root, f"{readable}-{hashlib.sha1(url.encode()).hexdigest()[:8]}")


def path(location: str):
  """An `etils.epath.Path` for a local path or a URL."""
  return epath.Path(location)


CONFIG_FILE = "config.json"  # the run's config (galax/training/outputs.py writes it)


def read_config_json(workdir: str) -> dict | None:
  """The run's saved config as JSON data; None if the workdir has no config.json,
  ValueError (one line) if it is not JSON."""
  file = path(join(workdir, CONFIG_FILE))
  if not file.is_file():
    return None
  try:
    return json.loads(file.read_text())
  except ValueError as e:
    raise ValueError(f"{file} is not valid JSON ({e}).") from None


def holds_steps(directory: str) -> bool:
  """Whether a checkpoint `directory` holds any step directory (complete or not)."""
  root = path(directory)
  return root.is_dir() and any(item.name.isdigit() for item in root.iterdir())


def saved_training(workdir: str) -> bool:
  """Whether a run in `workdir` saved anything of its training: a checkpoint, a metrics row
  or a result (a divergence's). A fresh run that fails before any removes what it made."""
  local = staging_dir(workdir)
  metrics = path(join(local, "metrics.csv"))
  return (
    holds_steps(join(workdir, "checkpoints"))
    or (metrics.exists() and metrics.read_text().count("\n") > 1)
    or path(join(local, "result.json")).exists()
  )


def last_good(directory: str | None) -> str:
  """The newest committed step directory under a checkpoint `directory`, read from the
  files alone (no orbax manager, no collective: usable when a multi-process job failed)."""
  steps = []
  if directory and is_remote(directory):
    if path(directory).is_dir():
      steps = [
        int(item.name)
        for item in path(directory).iterdir()
        if item.name.isdigit() and (item / COMMIT_MARKER).exists()
      ]
  elif directory and os.path.isdir(directory):
    steps = [
      int(name)
      for name in os.listdir(directory)
      if name.isdigit() and os.path.exists(os.path.join(directory, name, COMMIT_MARKER))
    ]
  return join(absolute(directory), str(max(steps))) if steps else "none was saved"


def check(workdir: str) -> None:
  """Raises ValueError (one line) unless `workdir` is, or can be made, a writable directory
  (a URL: writable in its store, with a writable local staging folder)."""
  if is_remote(workdir):
    check_remote(workdir)
    workdir = staging_dir(workdir)
  if os.path.exists(workdir) and not os.path.isdir(workdir):
    raise ValueError(f"--workdir {workdir!r} is a file, not a directory.")
  try:
    os.makedirs(workdir, exist_ok=True)
    with tempfile.TemporaryFile(dir=workdir):
      pass
  except OSError as e:
    raise ValueError(
      f"--workdir {workdir!r} is not a writable directory ({e.strerror or e})."
    ) from None


# What marks a workdir as holding a run, and what `--overwrite` deletes (not logs/, which a
# multi-process job's supervisor fills before training starts, nor unknown files).
RUN_MARKERS = ("config.json", "metrics.csv", "result.json", "checkpoints")
RUN_FILES = (
  *RUN_MARKERS,
  "eval.csv",
  "tb",
  "best",
  "checkpoints.damaged",
  "config_changes.json",
  "sittings.json",
  "wandb",
  "wandb_id.txt",
  "videos",
)


def earlier_run(workdir: str) -> list[str]:
  """The files of an earlier run in `workdir` (an empty checkpoints/ does not count)."""
  found = []
  for name in RUN_MARKERS:
    item = path(join(workdir, name))
    if item.is_file() or (item.is_dir() and any(True for _ in item.iterdir())):
      found.append(name)
  return found


def start_afresh(workdir: str, overwrite: bool) -> None:
  """Without `overwrite`, ValueError (one line) if `workdir` holds an earlier run, which a
  new run would mix with its own files; with it, deletes that run's files."""
  found = earlier_run(workdir)
  if found and not overwrite:
    raise ValueError(
      f"--workdir {workdir!r} already holds a run ({', '.join(found)}); "
      f"continue it with --resume, start afresh with --overwrite (deletes "
      f"that run's files), or choose another --workdir."
    )
  if not overwrite:
    return
  root = path(workdir)
  for item in [root / name for name in RUN_FILES] + list(root.glob("eval_step*.json")):
    if item.is_dir():
      item.rmtree()
    elif item.exists():
      item.unlink()


def check_remote(workdir: str) -> None:
  """ValueError (one line) unless `workdir` is a URL galax can write: a known scheme, its
  filesystem package installed, and a probe object written and deleted."""
  name = scheme(workdir)
  if name not in REMOTE_SCHEMES:
    raise ValueError(
      f"--workdir {workdir!r}: galax writes to local paths, gs:// and s3:// (not {name}://)."
    )
  package = REMOTE_SCHEMES[name]
  try:
    __import__(package)
  except ImportError:
    raise ValueError(
      f"--workdir {workdir!r} needs the {package} package (pip install "
      f"{package}; for gs://, galax's 'gcs' extra installs it)."
    ) from None
  client_log = logging.getLogger(package)
  level = client_log.level
  client_log.setLevel(logging.CRITICAL)  # its retries log tracebacks; the line below says it
  failed: list[Exception] = []
  # In a thread: without a network the client retries for about a minute before it fails.
  prober = threading.Thread(target=_probe, args=(workdir, failed), daemon=True)
  prober.start()
  prober.join(PROBE_TIMEOUT_S)
  client_log.setLevel(max(level, logging.ERROR))  # no "no default credentials" per call
  if prober.is_alive():
    raise ValueError(
      f"--workdir {workdir!r}: the store did not answer a test write within "
      f"{PROBE_TIMEOUT_S:.0f} s (no network, or no credentials?)."
    )
  if failed:
    text = " ".join(str(failed[0]).split())[:160]
    raise ValueError(f"--workdir {workdir!r} is not writable ({type(failed[0]).__name__}: {text}).")


def _probe(workdir: str, failed: list[Exception]) -> None:
  """Writes and deletes a probe object; appends the error to `failed` if that fails."""
  try:
    probe = path(join(workdir, ".galax-write-probe"))
    probe.write_text("probe")
    probe.unlink()
  except Exception as e:  # auth, network, no bucket...
    failed.append(e)


def _local_files(root: str) -> Iterator[str]:
  """Relative paths of the staged files (not the lock or crash logs)."""
  for folder, dirs, files in os.walk(root):
    dirs[:] = [d for d in dirs if not (folder == root and d in ("logs", *CHECKPOINT_DIRS))]
    for name in files:
      relative = os.path.relpath(os.path.join(folder, name), root)
      if relative != "run.lock" and not name.endswith(".tmp"):
        yield relative


class Mirror:
  """galax's own files of a run: written under `local`, uploaded to `workdir` by `push`
  where the workdir is a URL (every method is a no-op for a local workdir)."""

  def __init__(self, workdir: str):
    self.workdir, self.remote = workdir, is_remote(workdir)
    self.local = staging_dir(workdir)
    self._pushed: dict[str, tuple[int, int]] = {}  # relative path: (size, mtime_ns) sent

  def prepare(self, resume: bool) -> None:
    """Empties the staging copy (a cache), then on `--resume` fills it from the store."""
    if not self.remote:
      return
    os.makedirs(self.local, exist_ok=True)
    for relative in list(_local_files(self.local)):
      os.remove(os.path.join(self.local, relative))
    if resume:
      self.pull()

  def pull(self) -> None:
    remote = path(self.workdir)
    if not remote.exists():
      return
    for item in _remote_files(remote):
      relative = str(item.relative_to(remote))
      target = os.path.join(self.local, relative)
      os.makedirs(os.path.dirname(target), exist_ok=True)
      with open(target, "wb") as f:
        f.write(item.read_bytes())
      self._pushed[relative] = _signature(target)

  def push(self) -> None:
    """Uploads the staged files that changed since the last push."""
    if not self.remote:
      return
    remote = path(self.workdir)
    for relative in _local_files(self.local):
      source = os.path.join(self.local, relative)
      signature = _signature(source)
      if self._pushed.get(relative) == signature:
        continue
      target = remote / relative
      target.parent.mkdir(parents=True, exist_ok=True)
      with open(source, "rb") as f:
        target.write_bytes(f.read())
      self._pushed[relative] = signature


def _remote_files(root, top: bool = True) -> Iterator:
  """The staged kind of files under a remote `root` (epath has no recursive glob on GCS)."""
  for item in root.iterdir():
    if item.is_dir():
      if not (top and item.name in (*CHECKPOINT_DIRS, "logs")):
        yield from _remote_files(item, top=False)
    elif not (top and item.name == "run.lock"):
      yield item


def _signature(file: str) -> tuple[int, int]:
  stat = os.stat(file)
  return stat.st_size, stat.st_mtime_ns
