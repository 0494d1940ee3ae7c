"""The training loop around an `Algorithm`: progress, metrics, checkpoints, resume.

The loop calls the jitted `step` (updates_per_call updates), pulls its metrics to the host,
updates the run's `Progress` (galax/training/progress.py) and runs the hooks that are due
(galax/training/hooks.py: progress lines and metrics rows, evaluation, checkpoints), until
`Progress.stop_reason` says why it ends. The first call compiles; its time is reported
apart from the steady-state steps/s (galax/training/clock.py). The loop reads `LoopSettings`.

With `config.eval.every_steps` > 0 it also evaluates the policy on separate envs
(`galax.evaluate.periodic`; `eval.csv`), outside `train_time_s`. On an NVIDIA GPU
(`config.energy`) it reports the energy used and frames per kilojoule.

Reliability: every call's metrics carry finiteness flags (galax/core/divergence.py); the first
non-finite loss or parameter stops the run (`Diverged`) before any save. A resumed run
falls back past damaged checkpoints, drops metric rows after its checkpoint and continues
the episode statistics and clocks stored in it, and the end of its lr anneal; a finished
run is not trained on. Ctrl-C and SIGTERM (preemption) let the current call finish and save
it (runtime/preemption.py); a second Ctrl-C, or one in the sitting's first (compiling) call,
stops at once with nothing new saved.
One process at a time writes a workdir (runtime/lock.py: process 0 holds its lock).
"""

from __future__ import annotations

import contextlib
import time
from typing import Callable

import jax
from ml_collections import ConfigDict

import galax.config as config_lib
from galax.algorithms import Algorithm
from galax.config import Config, make_algorithm
from galax.config import resume as resume_lib
from galax.core import divergence
from galax.core.divergence import Diverged
from galax.evaluate import evaluator as eval_lib
from galax.parallel.layout import to_host
from galax.runtime import checkpoint as ckpt_lib
from galax.runtime import lock as workdir_lock
from galax.runtime import peers, preemption
from galax.runtime import workdir as workdirs
from galax.training import metrics as metrics_lib
from galax.training import tracking
from galax.training.header import done_lines, header_lines
from galax.training.hooks import (
  CallbackHook,
  CheckpointHook,
  EnergyHook,
  EvaluationHook,
  Hook,
  LogHook,
  OnCall,
  Run,
  evaluation_hook,
)
from galax.training.outputs import Outputs
from galax.training.progress import Progress, Stop, StopRules
from galax.training.result import TrainResult
from galax.training.settings import LoopSettings, loop_settings


def train(
  config: Config | ConfigDict,
  workdir: str | None = None,
  resume: bool = False,
  log: Callable[[str], None] = print,
  on_call: OnCall | None = None,
  overwrite: bool = False,
) -> TrainResult:
  """Trains `config` (typed, or a ConfigDict: see galax/config/schema.py); writes metrics and
  checkpoints to `workdir`.

  `on_call(env_steps, planned_env_steps, seconds_left or None)` after every call (e.g. a
  progress bar: galax/training/terminal_bar.py). A fresh run (not `resume`) into a workdir that
  holds a run is refused, unless `overwrite` deletes that run's files first.

  Raises `Diverged` (after writing result.json) at the first non-finite update, and
  `preemption.Preempted` (a SystemExit, status 143) after a SIGTERM's checkpoint.
  """
  config = config_lib.from_data(config)  # typed, read once: a value's type is checked here
  config_lib.validate(config)
  if config.capture_video and not workdir:
    raise ValueError("config.capture_video=True writes <workdir>/videos: give a workdir.")
  if config.track and jax.process_index() == 0:
    tracking.check(config.track_mode)  # before anything is made
  made = workdir_lock.first_missing(workdir) if workdir else None  # removed if nothing starts
  if workdir:
    workdirs.check(workdir)  # before the (slow) envs and compilation
  holds_lock = bool(workdir) and jax.process_index() == 0  # one writer per workdir
  with (
    workdir_lock.hold(workdir, log, made) if holds_lock else contextlib.nullcontext(),
    peers.watch(
      workdir and workdirs.staging_dir(workdir),
      lambda: workdirs.last_good(_checkpoint_dir(workdir)),
    ),
    preemption.watch() as preempted,
    preemption.ctrl_c_noted(),
  ):
    saved = workdirs.read_config_json(workdir) if resume and workdir else None
    kept, notes = resume_lib.kept_schedule(saved, config)  # a resume keeps the lr anneal's end
    as_json = config_lib.typed.json_data(kept)
    changes = _prepare(as_json, saved, notes, workdir, resume, overwrite, holds_lock, log)
    if changes is None:  # a fresh start (or a resume with no checkpoint): its own length
      as_json = config_lib.typed.json_data(config)
    else:
      config = kept
    try:
      algorithm = make_algorithm(config)  # the config goes no further (but config.json):
      settings = loop_settings(config, algorithm.setup.settings)
      return _train(algorithm, settings, as_json, workdir, changes, log, preempted, on_call)
    except jax.errors.JaxRuntimeError as e:
      if peers.collective_failed(e):  # a lost peer: nothing can be saved (galax/runtime/peers.py)
        peers.exit_lost_peer(
          e, workdir and workdirs.staging_dir(workdir), workdirs.last_good(_checkpoint_dir(workdir))
        )
      raise
    except BaseException:
      if holds_lock and changes is None and not workdirs.saved_training(workdir):
        workdirs.start_afresh(workdir, overwrite=True)  # a failed start leaves nothing behind
      raise


def _prepare(
  config_json: dict,
  saved: dict | None,
  notes: dict[str, str],
  workdir: str | None,
  resume: bool,
  overwrite: bool,
  holds_lock: bool,
  log: Callable[[str], None],
) -> list[resume_lib.Change] | None:
  """Before the (slow) build: a resume's changes to the `saved` config (None: a fresh run),
  with their `notes`, ValueError (one line) for any a resume may not make; a fresh run's
  workdir emptied, where it may be."""
  if resume:
    found = [] if saved is None else resume_lib.changes(saved, config_json, notes)
    changes = resume_lib.check(found, workdir and workdirs.join(workdir, workdirs.CONFIG_FILE))
    if ckpt_lib.has_checkpoints(_checkpoint_dir(workdir)):
      return changes
    log(f"--resume: {workdir} has no checkpoint yet; starting the run afresh")
    overwrite = True  # stopped before its first checkpoint: nothing to lose
  if holds_lock:  # never mix two runs' files
    workdirs.start_afresh(workdir, overwrite)
  return None


def _checkpoint_dir(workdir: str | None) -> str | None:
  return workdirs.join(workdir, "checkpoints") if workdir else None


def _train(
  algorithm: Algorithm,
  settings: LoopSettings,
  config_json: dict,
  workdir: str | None,
  changes: list[resume_lib.Change] | None,
  log: Callable[[str], None],
  preempted: preemption.Watch,
  on_call: OnCall | None,
) -> TrainResult:
  """Trains afresh (`changes` None) or resumes, making `changes` to `config_json`."""
  s = settings
  try:
    run = Run(
      s,
      algorithm.init(),
      Progress(s.stats_window, algorithm.layout.num_learners if s.learner_stats else 0),
      StopRules(algorithm.total_updates, s.target_return, s.time_limit_s),
      _planned(algorithm, s)["planned_env_steps"],
    )
    checkpoint_dir = _checkpoint_dir(workdir)
    saver = CheckpointHook(
      ckpt_lib.Checkpointer(
        checkpoint_dir, s.keep_checkpoints, with_envs=algorithm.env.state_restorable
      )
      if workdir
      else None,
      checkpoint_dir,
      Outputs(workdir),
      s.checkpoint_every_steps,
      0,
    )
  except BaseException:
    algorithm.env.close()
    raise
  hooks: list[Hook] = [saver]
  try:  # whatever happens from here on (a failed restore or header too), close everything
    if changes is not None and (finished := _restore(algorithm, run, saver, log)):
      return finished
    hooks = _open(algorithm, config_json, run, saver, changes, log, on_call)
    _loop(algorithm, run, hooks, saver, preempted, log)
  finally:
    for hook in hooks:
      hook.close()
    algorithm.env.close()  # waits for the run's env steps (a pool collected under one crashed)
    saver.outputs.close()
  return _finish(algorithm, run, saver.outputs, hooks, log)


def _loop(
  algorithm: Algorithm,
  run: Run,
  hooks: list[Hook],
  saver: CheckpointHook,
  preempted: preemption.Watch,
  log: Callable[[str], None],
) -> None:
  """Calls until the run stops; saves on every way out that keeps its state."""
  progress, per_call = run.progress, _steps_per_call(algorithm)
  try:
    while run.stop is Stop.NONE:
      _call(algorithm, run, saver.last_good, log)
      if run.stop is Stop.DIVERGED:
        return  # nothing of this call is saved
      for hook in hooks:
        if hook.due(run):
          hook(run)
      if run.stop in (Stop.TARGET_RETURN, Stop.TIME_LIMIT):
        log(f"{progress.stop_text(run.stop, run.rules)} at {progress.env_steps} steps")
      elif (
        run.stop is Stop.NONE  # a run whose budget is done ends as usual
        and preempted.reached((progress.env_steps - progress.start_steps) // per_call)
      ):
        run.stop = Stop.PREEMPTED
  except KeyboardInterrupt:
    log(saver.save_on_stop("interrupted", run))
    raise
  except BaseException as e:  # keep what the run had learned, if its state is still intact
    if peers.collective_failed(e):  # no collective save can finish: exit now
      peers.exit_lost_peer(e, saver.outputs.local, saver.last_good())
    log(saver.save_on_stop("stopped by an error", run))
    raise
  if run.stop is Stop.PREEMPTED:
    run.message = saver.save_on_stop(Stop.PREEMPTED.value, run)
    log(run.message)
    return
  for hook in hooks:
    hook.at_end(run)


def _call(
  algorithm: Algorithm, run: Run, last_good: Callable[[], str], log: Callable[[str], None]
) -> None:
  """One call of `step`: the state, progress, metrics and stop reason after it. The step
  donates the state: a Ctrl-C takes effect once the run holds the call's new state, except
  in the sitting's first (compiling) call, which it stops at once (nothing new to lose)."""
  progress, call_start = run.progress, time.perf_counter()
  first = progress.env_steps == progress.start_steps
  with contextlib.nullcontext() if first else preemption.ctrl_c_at_call_end(log) as window:
    state, metrics = algorithm.step(run.state)
    if window:
      window.settled()
    run.state = state
    progress.advance(algorithm.updates_per_call, _steps_per_call(algorithm))
    run.unchecked = metrics.get(divergence.FLAGS_KEY, {})
  preemption.raise_dropped_ctrl_c()  # after the state is the call's (see ctrl_c_noted)
  metrics = to_host(metrics)
  run.message = (
    divergence.report(
      metrics.pop(divergence.FLAGS_KEY, {}),
      progress.updates - algorithm.updates_per_call,
      algorithm.env_steps_per_update,
      last_good,
    )
    or ""
  )
  if run.message:
    run.stop = Stop.DIVERGED
    return
  run.unchecked = None
  run.now = time.perf_counter()
  progress.clock.called(call_start, run.now, progress.env_steps, _steps_per_call(algorithm))
  metrics_lib.add_episodes(progress.tracker, progress.learner_trackers, metrics.pop("episodes"))
  run.metrics = metrics
  run.stop = progress.stop_reason(run.rules, progress.clock.sitting(run.now))


def _restore(
  algorithm: Algorithm, run: Run, saver: CheckpointHook, log: Callable[[str], None]
) -> TrainResult | None:
  """Continues from the newest good checkpoint; the result if nothing is left to do."""
  progress, checkpointer = run.progress, saver.checkpointer
  run.state, meta = checkpointer.restore(run.state, warn=log)
  progress.load_meta(meta)
  log(f"resumed from {checkpointer.step_dir(progress.env_steps)} at {progress.env_steps} env steps")
  saver.next = progress.env_steps + (run.settings.checkpoint_every_steps or float("inf"))
  stop = progress.stop_reason(run.rules, 0.0)  # the time limit is each sitting's
  if stop is Stop.NONE:
    return None
  done = progress.stop_text(stop, run.rules)
  if stop is Stop.TARGET_RETURN:
    done += f" (running mean {progress.tracker.mean_return:.2f})"
  log(
    f"nothing to do: the run in {saver.outputs.workdir} is already finished ({done})"
    + ("; raise config.total_env_steps to train on" if stop is Stop.BUDGET else "")
  )
  return TrainResult.nothing_done(
    progress.env_steps,
    progress.updates,
    progress.clock,
    progress.tracker,
    run.state,
    f"already finished: {done}",
    _planned(algorithm, run.settings),
  )


def _steps_per_call(algorithm: Algorithm) -> int:
  return algorithm.updates_per_call * algorithm.env_steps_per_update


def _planned(algorithm: Algorithm, settings: LoopSettings) -> dict[str, int]:
  return dict(
    requested_env_steps=settings.total_env_steps,
    planned_env_steps=algorithm.total_updates * algorithm.env_steps_per_update,
  )


def _open(
  algorithm: Algorithm,
  config_json: dict,
  run: Run,
  saver: CheckpointHook,
  changes: list[resume_lib.Change] | None,
  log: Callable[[str], None],
  on_call: OnCall | None,
) -> list[Hook]:
  """Writes config.json (and a resume's changes) and the header lines; the hooks; starts
  the clocks."""
  settings, progress, outputs = run.settings, run.progress, saver.outputs
  outputs.open(config_json, settings, changes, progress.env_steps)
  for change in changes or []:
    log(f"resume changes {change} from env step {progress.env_steps} (config_changes.json)")
  for line in header_lines(algorithm, settings, _planned(algorithm, settings)):
    log(line)
  if outputs.workdir:
    log(f"workdir {workdirs.absolute(outputs.workdir)}")
  every = settings.log_every_steps
  hooks: list[Hook] = [LogHook(algorithm, outputs, log, every, progress.env_steps)]
  if on_call:
    hooks.append(CallbackHook(on_call))
  if settings.eval.every_steps > 0:
    evaluation = evaluation_hook(algorithm, run, outputs, changes is not None, log)
    progress.clock.eval_time = lambda: evaluation.evals.eval_time_s
    hooks.append(evaluation)
  hooks.append(saver)
  if settings.energy:
    hooks.append(EnergyHook(log))
  progress.start_steps = progress.env_steps
  progress.clock.begin(time.perf_counter(), progress.env_steps)
  return hooks


def _finish(
  algorithm: Algorithm, run: Run, outputs: Outputs, hooks: list[Hook], log: Callable[[str], None]
) -> TrainResult:
  """The run's TrainResult, also in result.json; raises Diverged after writing it."""
  progress, now = run.progress, time.perf_counter()
  clock, tracker, steps = progress.clock, progress.tracker, progress.env_steps
  evals = next((h.evals for h in hooks if isinstance(h, EvaluationHook)), None)
  energy = next((h.report for h in hooks if isinstance(h, EnergyHook)), None)
  frames_per_step = eval_lib.frames_per_step(algorithm.setup.env_settings)
  diverged = run.stop is Stop.DIVERGED
  result = TrainResult(
    env_steps=steps,
    updates=progress.updates,
    wall_time_s=clock.wall(now),
    compile_time_s=clock.compile_time,
    steps_per_second=clock.steady_rate(),
    mean_return=tracker.mean_return,
    episodes=tracker.completed,
    state=run.state,
    train_time_s=clock.train(now),
    eval_time_s=evals.eval_time_s if evals else 0.0,
    evaluations=list(evals.records) if evals else [],
    learner_returns=[t.mean_return for t in progress.learner_trackers],
    energy=energy.summary(steps, frames_per_step) if energy else None,
    stopped=run.message if diverged else run.stop.value,
    diverged=diverged,
    git=outputs.git,
    **_planned(algorithm, run.settings),
  )
  outputs.write_result(result.summary())
  if diverged:
    raise Diverged(run.message)
  if run.stop is Stop.PREEMPTED:
    raise preemption.Preempted(run.message)
  for line in done_lines(result, now - clock.start, clock.steady_steps, tracker):
    log(line)
  return result
