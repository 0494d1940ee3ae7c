"""The galax commit a run ran at, for its files (result.json, sittings.json) and results."""

from __future__ import annotations

import os
import subprocess

from galax.core.types import JsonDict


def git_info() -> JsonDict:
  """Commit and dirtiness of the galax source tree (None where it is not a git checkout)."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  try:
    commit = subprocess.run(
      ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()
    dirty = bool(
      subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
      ).stdout.strip()
    )
    return dict(commit=commit, dirty=dirty)
  except (OSError, subprocess.SubprocessError):
    return dict(commit=None, dirty=None)
