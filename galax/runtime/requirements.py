"""The Python and jax versions galax runs on, checked when `galax` is imported.

galax needs jax 0.11.x: XLA:CPU there computes the convolution gradients of an Atari update
2.1x faster than jax 0.10's (docs/benchmarks.md), and gymnax 1.0 needs jax < 0.12. jax 0.11
needs Python 3.12 or newer. An older Python or another jax gets one line naming what to
install, read from the installed packages' metadata without importing jax.
"""

from __future__ import annotations

import os
import re
import sys
from importlib import metadata

PYTHON = (3, 12)
JAX_SERIES = (0, 11)  # jax >= 0.11.2, < 0.12 (pyproject.toml)
JAX_MIN = (0, 11, 2)
INSTALL_HINT = "pip install -e '.[test]' in a venv of Python >= 3.12 (README)"


def _release(version: str) -> tuple[int, ...]:
  """(0, 11, 2) of "0.11.2", "0.11.2rc1" or "0.11.2.dev20260101"."""
  return tuple(int(n) for n in re.findall(r"^\d+(?:\.\d+)*", version)[0].split("."))


def problem(python: tuple[int, ...] | None = None, jax_version: str | None = None) -> str | None:
  """What is wrong with this interpreter or its jax, in one line; None if nothing is."""
  python = python or tuple(sys.version_info[:3])
  if python[:2] < PYTHON:
    found = ".".join(map(str, python))
    return (
      f"galax needs Python >= {PYTHON[0]}.{PYTHON[1]} (jax 0.11), this is Python {found}: "
      f"{INSTALL_HINT}; with pyenv, `pyenv install 3.12` (the checkout's .python-version "
      "selects it)"
    )
  if jax_version is None:
    try:
      jax_version = metadata.version("jax")
    except metadata.PackageNotFoundError:
      return f"galax needs jax 0.11.x, which is not installed: {INSTALL_HINT}"
  release = _release(jax_version)
  if release[:2] != JAX_SERIES or release < JAX_MIN:
    return (
      f"galax needs jax >= 0.11.2, < 0.12 (found jax {jax_version}): "
      f"pip install 'jax>=0.11.2,<0.12' (or {INSTALL_HINT})"
    )
  return None


def _is_command() -> bool:
  """Whether this process is one of galax's commands (`galax`, run.py, `python -m galax...`):
  `python -m` imports the package while argv[0] is still '-m'."""
  return bool(sys.argv) and os.path.basename(sys.argv[0]) in ("galax", "run.py", "-m")


def check() -> None:
  """A command prints the problem as one `error:` line and exits 2; an import raises."""
  message = problem()
  if message is None:
    return
  if _is_command():
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)
  raise ImportError(message)
