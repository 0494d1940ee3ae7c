"""Orbax checkpoints of the learner state, and of the env state where it is a pytree.

On resume the learners get back their parameters, optimizer state, sampling keys and
counters. The envs depend on the backend:

* gymnax (`Env.state_restorable`): the env state (gymnax's states, per-env keys, pending
  actions, running episode returns) is saved too, in its own item `envs`, so a resumed
  run is the uninterrupted run, bit for bit.
* envpool: its C++ env state cannot be saved; the envs start fresh episodes from their
  seeds (the same ones every time, so a resume from a given checkpoint is deterministic,
  but it is not the uninterrupted run).

The metadata (`meta`) carries the loop's counters, clocks and running episode statistics.

A save is atomic: orbax writes `<step>.orbax-checkpoint-tmp-*`, writes
`commit_success.txt` into it and renames it to `<step>`, so a kill during a save leaves
at most a tmp directory (ignored, and removed by the next run; a save that fails removes
its own), never a `<step>` directory that looks complete (on an object store, which cannot
rename, orbax writes `commit_success.txt` last instead). `restore` treats a step without
`commit_success.txt`, or one whose files fail to restore (truncated, edited), as damaged: it
moves it aside to `<directory>.damaged/` with a warning and falls back to the next newest.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import TYPE_CHECKING, Callable, Iterator

import jax
import numpy as np
from absl import logging
from jax.experimental import multihost_utils

from galax.core.types import JsonDict, PyTree
from galax.runtime import workdir as workdirs

# orbax.checkpoint is imported by the functions that save and restore: it took 0.23 s of
# every command's start-up (this module comes with `import galax`), --help's too (issue 73).
if TYPE_CHECKING:
  import orbax.checkpoint as ocp

  from galax.framework.update import LearnerState

COMMIT_MARKER = workdirs.COMMIT_MARKER
# The saved state's layout, in the metadata. 2: the combiner's state saved on its own
# (`LearnerState.combiner`); 1 (no number saved): inside `extra`.
FORMAT = 2
ENVS_ITEM = "envs"  # the env state, where the envs' state is a pytree (gymnax)


class FormatError(ValueError):
  """A whole checkpoint of another layout: not damage, so it is left where it is."""


class MismatchError(FormatError):
  """A readable checkpoint of another program's shapes (another config): left in place."""


def _key_path(path: tuple) -> str:
  """'opt_state/1/0/nu/params/Dense_0/bias': the same for a restored tree (dicts, lists)
  and the state it restores into (dataclasses, named tuples)."""
  names = (getattr(k, "key", getattr(k, "name", getattr(k, "idx", k))) for k in path)
  return "/".join(map(str, names))


def _shapes(tree: PyTree) -> dict[str, tuple[int, ...]]:
  return {_key_path(p): tuple(np.shape(leaf)) for p, leaf in jax.tree.leaves_with_path(tree)}


def _mismatch(stored: dict, wanted: dict) -> str | None:
  """The first few arrays whose presence or shape differs, in words; None if all fit."""
  found = [
    f"{key}: saved {stored.get(key, 'none')}, here {wanted.get(key, 'none')}"
    for key in sorted(set(stored) | set(wanted))
    if stored.get(key) != wanted.get(key)
  ]
  if not found:
    return None
  more = f"; {len(found) - 3} more" if len(found) > 3 else ""
  return "; ".join(found[:3]) + more


def _saveable(state: LearnerState) -> dict[str, PyTree]:
  return dict(
    params=state.params,
    opt_state=state.opt_state,
    action_keys=state.action_keys,
    update_count=state.update_count,
    combiner=state.combiner,
    extra=state.extra,
  )


def donated(state: PyTree) -> bool:
  """Whether any array of `state` was handed to a jitted call (donated, so deleted)."""
  return any(isinstance(x, jax.Array) and x.is_deleted() for x in jax.tree.leaves(state))


def _one_line(error: BaseException) -> str:
  text = " ".join(str(error).split())
  return f"{type(error).__name__}: {text[:160]}" if text else type(error).__name__


def _manager(directory: str, keep: int) -> ocp.CheckpointManager:
  """orbax's manager of `directory`, minus its own look at JAX's preemption sync point.

  `save` asks `reached_preemption_sync_point(step)` with the env step: that would become
  the call counter the sync protocol reads, and the sync point (that counter + 1) would
  never be reached by galax's call numbers (galax/runtime/preemption.py). galax decides itself
  when a preemption saves.
  """
  import orbax.checkpoint as ocp

  class Manager(ocp.CheckpointManager):
    def reached_preemption(self, step: int) -> bool:
      del step
      return False

  options = ocp.CheckpointManagerOptions(
    max_to_keep=keep, create=True, cleanup_tmp_directories=True
  )
  return Manager(directory, options=options)


def _shapes_of_metadata(tree: PyTree) -> dict[str, object]:
  """The array metadata (with `.shape`) of a stored tree, by key path."""
  leaves = jax.tree.leaves_with_path(tree, is_leaf=lambda x: hasattr(x, "shape"))
  return {_key_path(p): leaf for p, leaf in leaves if hasattr(leaf, "shape")}


@contextlib.contextmanager
def quiet_orbax() -> Iterator[None]:
  level = logging.get_verbosity()
  logging.set_verbosity(logging.ERROR)
  try:
    yield
  finally:
    logging.set_verbosity(level)


class Checkpointer:
  """Saves and restores `LearnerState`s under `directory`, with the env state if
  `with_envs` (envs whose state is a pytree; see the module docstring)."""

  def __init__(self, directory: str, keep: int = 3, with_envs: bool = False):
    self.directory = workdirs.absolute(directory)
    self.with_envs = with_envs
    self._manager = _manager(self.directory, keep)

  def save(self, env_steps: int, state: LearnerState, meta: JsonDict) -> None:
    """Saves `state` as step `env_steps`; ValueError, before anything is written, if its
    arrays were donated to a jitted call."""
    import orbax.checkpoint as ocp

    if donated(state):
      raise ValueError(f"the state of step {env_steps} was handed to a jitted call (donated)")
    meta = dict(meta, checkpoint_format=FORMAT, env_state_saved=self.with_envs)
    items = dict(state=ocp.args.StandardSave(_saveable(state)), meta=ocp.args.JsonSave(meta))
    if self.with_envs:
      items[ENVS_ITEM] = ocp.args.StandardSave(state.env_state)
    try:
      self._manager.save(env_steps, args=ocp.args.Composite(**items))
      self._manager.wait_until_finished()
    except BaseException:
      self._remove_unfinished(env_steps)
      raise

  def _remove_unfinished(self, step: int, tries: int = 5) -> None:
    """A failed save's tmp directory, which orbax leaves: removed, so that nothing
    half-written stays beside the checkpoints (process 0 writes it). orbax's writer threads
    may still add a file meanwhile: a removal that meets one is tried again."""
    if jax.process_index() != 0:
      return
    for _ in range(tries):
      try:
        for tmp in workdirs.path(self.directory).glob(f"{step}.orbax-checkpoint-tmp*"):
          tmp.rmtree(missing_ok=True)
        return
      except OSError:
        time.sleep(0.2)

  def latest_step(self) -> int | None:
    return self._manager.latest_step()

  def step_dir(self, step: int) -> str:
    return workdirs.join(self.directory, str(step))

  def restore(
    self, template_state: LearnerState, warn: Callable[[str], None] = print
  ) -> tuple[LearnerState, JsonDict]:
    """Restores the newest checkpoint that restores into a fresh state (same shapes).

    Damaged newer ones are moved aside with a warning; raises FileNotFoundError naming
    the directory if none restores, and `FormatError` (leaving it in place) for the newest
    whole checkpoint if another galax version's layout wrote it.
    """
    import orbax.checkpoint as ocp

    steps = sorted(self._manager.all_steps(), reverse=True)
    if not steps:
      raise FileNotFoundError(f"No checkpoint found in {self.directory}.")
    problems = []
    for step in steps:
      try:
        if not workdirs.path(workdirs.join(self.step_dir(step), COMMIT_MARKER)).exists():
          raise FileNotFoundError(f"no {COMMIT_MARKER} (an unfinished save)")
        meta = self._checked_meta(step)
        self._check_shapes(step, template_state)
        items = dict(state=ocp.args.StandardRestore(_saveable(template_state)))
        if self.with_envs and meta.get("env_state_saved"):
          items[ENVS_ITEM] = ocp.args.StandardRestore(template_state.env_state)
        restored = self._manager.restore(step, args=ocp.args.Composite(**items))
      except FormatError:
        raise
      except Exception as e:  # any damage: fall back
        problems.append(f"{step}: {_one_line(e)}")
        aside = self._move_aside(step)
        warn(
          f"warning: checkpoint {self.step_dir(step)} is damaged ({_one_line(e)}); "
          f"moved it to {aside} and trying the next newest"
        )
        continue
      state = template_state.replace(**restored["state"])
      if ENVS_ITEM in items:
        state = state.replace(env_state=restored[ENVS_ITEM])
      return state, meta
    raise FileNotFoundError(
      f"--resume: no checkpoint in {self.directory} restores ({'; '.join(problems)})."
    )

  def _checked_meta(self, step: int) -> JsonDict:
    """The step's metadata, read before its state: `FormatError` for another layout (the
    state would not fit the template), ValueError if it names another env step."""
    import orbax.checkpoint as ocp

    restored = self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))
    meta = dict(restored["meta"])
    found = int(meta.get("checkpoint_format", 1))
    if found != FORMAT:
      raise FormatError(
        f"--resume: checkpoint {self.step_dir(step)} has layout {found}, this galax reads "
        f"layout {FORMAT} (galax/runtime/checkpoint.py FORMAT); resume it with the galax version "
        "that wrote it, or start a new run in another workdir."
      )
    if int(meta["env_steps"]) != step:
      raise ValueError(f"its metadata says env step {meta['env_steps']}")
    return meta

  def _check_shapes(self, step: int, template_state: LearnerState) -> None:
    """`MismatchError` if the step's arrays, read from its metadata, are not the shapes
    of `template_state`: a whole checkpoint of another program, not damage."""
    import orbax.checkpoint as ocp

    path = workdirs.join(self.step_dir(step), "state")
    with quiet_orbax():  # it notes a metadata file that galax never writes
      tree = ocp.StandardCheckpointer().metadata(path)
    tree = getattr(tree, "item_metadata", tree)
    tree = getattr(tree, "tree", tree)
    stored = {k: tuple(v.shape) for k, v in _shapes_of_metadata(tree).items()}
    if not stored:
      raise ValueError("its metadata lists no arrays")  # damage: moved aside
    found = _mismatch(stored, _shapes(_saveable(template_state)))
    if found:
      raise MismatchError(
        f"--resume: checkpoint {self.step_dir(step)} holds arrays of other shapes than "
        f"this run's program ({found}): it was saved with another config or galax "
        "version; nothing was moved. Resume with the run's own config (--workdir and "
        "--resume, no --config), or start another run (another --workdir, or --overwrite)."
      )

  def _move_aside(self, step: int) -> str:
    """Moves a damaged step out of orbax's view (so that it can be saved again)."""
    aside_dir = workdirs.path(self.directory + ".damaged")
    aside_dir.mkdir(parents=True, exist_ok=True)
    target, k = aside_dir / str(step), 1
    while target.exists():
      target, k = aside_dir / f"{step}.{k}", k + 1
    workdirs.path(self.step_dir(step)).rename(target)
    self._manager.reload()
    return str(target)

  def close(self) -> None:
    self._manager.close()


class BestCheckpoint:
  """The state at the best evaluation so far, in `<directory>/<step>` (only that one kept).

  `offer` saves when `score` (the mean evaluation return) beats every earlier one. Under
  multi-host JAX only process 0 evaluates: it decides, and every process learns the
  decision (a broadcast) and takes part in the collective save. `python -m galax.evaluate
  --step=best` reads it.
  """

  def __init__(self, directory: str, with_envs: bool, best_so_far: float = float("-inf")):
    self.best = best_so_far
    self._checkpointer = Checkpointer(directory, keep=1, with_envs=with_envs)

  def offer(self, score: float, env_steps: int, state: LearnerState, meta: JsonDict) -> bool:
    better = math.isfinite(score) and score > self.best
    if jax.process_count() > 1:
      better = bool(multihost_utils.broadcast_one_to_all(np.int32(better)))
    if better:
      self.best = score
      if self._checkpointer.latest_step() != env_steps:
        self._checkpointer.save(env_steps, state, dict(meta, eval_mean_return=score))
    return better

  def close(self) -> None:
    self._checkpointer.close()


def has_checkpoints(directory: str | None) -> bool:
  """Whether `--resume` finds checkpoints to continue from in `directory`. False where the
  run has none yet (stopped before its first save: it starts afresh); ValueError (one
  line) where there is no run, or only checkpoints moved aside as damaged (it says where)."""
  if directory is None:
    raise ValueError("--resume needs a --workdir holding earlier checkpoints.")
  if workdirs.holds_steps(directory):
    return True
  damaged = workdirs.path(directory + ".damaged")
  moved = sorted(item.name for item in damaged.iterdir()) if damaged.is_dir() else []
  if moved:
    raise FileNotFoundError(
      f"--resume: {directory} holds no checkpoints; {len(moved)} damaged one(s) were moved "
      f"to {damaged} ({', '.join(moved)}): move one back into {directory} to try it again, "
      "or start afresh with --overwrite."
    )
  run_dir = workdirs.path(directory).parent
  if not (run_dir / workdirs.CONFIG_FILE).exists():
    raise FileNotFoundError(
      f"--resume: {run_dir} holds no run to continue: start one without --resume."
    )
  return False
