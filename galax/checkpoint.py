"""Orbax checkpoints of the learner state (not of the envs, whose C++ state lives in envpool).

On resume the learners get back their parameters, optimizer state, sampling keys and
counters; envs start fresh episodes.
"""

from __future__ import annotations

import os
from typing import Any

import orbax.checkpoint as ocp


def _saveable(state: Any) -> dict[str, Any]:
  return dict(params=state.params, opt_state=state.opt_state, action_keys=state.action_keys,
              update_count=state.update_count, extra=state.extra)


class Checkpointer:
  """Saves and restores `LearnerState`s (minus env state) under `directory`."""

  def __init__(self, directory: str, keep: int = 3):
    self.directory = os.path.abspath(directory)
    self._manager = ocp.CheckpointManager(
        self.directory, options=ocp.CheckpointManagerOptions(max_to_keep=keep, create=True))

  def save(self, env_steps: int, state: Any, meta: dict[str, Any]) -> None:
    self._manager.save(env_steps, args=ocp.args.Composite(
        state=ocp.args.StandardSave(_saveable(state)), meta=ocp.args.JsonSave(meta)))
    self._manager.wait_until_finished()

  def latest_step(self) -> int | None:
    return self._manager.latest_step()

  def restore(self, template_state: Any) -> tuple[Any, dict[str, Any]]:
    """Restores the latest checkpoint into a fresh state (same shapes and shardings)."""
    step = self._manager.latest_step()
    if step is None:
      raise FileNotFoundError(f"No checkpoint found in {self.directory}.")
    restored = self._manager.restore(step, args=ocp.args.Composite(
        state=ocp.args.StandardRestore(_saveable(template_state)), meta=ocp.args.JsonRestore()))
    state = template_state.replace(**restored["state"])
    return state, dict(restored["meta"])

  def close(self) -> None:
    self._manager.close()


def check_resume_dir(directory: str) -> None:
  """Raises a clear error if `--resume` points at no checkpoints."""
  if not os.path.isdir(directory):
    raise FileNotFoundError(f"--resume: checkpoint directory {directory!r} does not exist.")
  if not any(name.isdigit() for name in os.listdir(directory)):
    raise FileNotFoundError(f"--resume: {directory!r} holds no checkpoints.")
