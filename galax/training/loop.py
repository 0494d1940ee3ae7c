"""The training loop around an `Algorithm`: progress, metrics, checkpoints, resume.

The loop calls the jitted `step` (updates_per_call updates), pulls its metrics to the host,
and in between writes progress lines, CSV/TensorBoard rows and checkpoints. The first call
compiles; its time is reported apart from the steady-state steps/s (galax/training/clock.py).

With `config.eval.every_steps` > 0 it also evaluates the policy on separate envs
(`galax.evaluate.evaluator`; `eval.csv`), outside `train_time_s`. On an NVIDIA GPU
(`config.energy`) it reports the energy used and frames per kilojoule.

Reliability: every call's metrics carry finiteness flags (galax/core/divergence.py); the first
non-finite loss or parameter stops the run (`Diverged`) before any save. A resumed run
falls back past damaged checkpoints, drops metric rows after its checkpoint and continues
the episode statistics and clocks stored in it; a finished run is not trained on. Ctrl-C
saves the state of the last whole call (none if the first call had not finished); SIGTERM
(preemption) lets the current call finish, saves it and exits 143 (galax/runtime/preemption.py). One
process at a time writes a workdir (galax/runtime/lock.py: process 0 holds its lock).
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Callable, Mapping

import jax
import numpy as np
from ml_collections import ConfigDict

from galax import config as config_lib
from galax.algorithms import Algorithm, make_algorithm
from galax.algorithms.algorithm import LearnerState
from galax.core import divergence
from galax.core.divergence import Diverged
from galax.core.types import JsonDict, Metrics
from galax.evaluate import evaluator as eval_lib
from galax.parallel.layout import to_host
from galax.runtime import checkpoint as ckpt_lib
from galax.runtime import lock as workdir_lock
from galax.runtime import peers, preemption
from galax.runtime import workdir as rundir
from galax.training import energy as energy_lib
from galax.training import metrics as metrics_lib
from galax.training import tracking
from galax.training.clock import RunClock
from galax.training.header import done_lines, header_lines, returns_text, speed_text
from galax.training.progress import OnCall
from galax.training.result import TrainResult, finished_reason
from galax.training.videos import VideoHook


def train(config: ConfigDict, workdir: str | None = None, resume: bool = False,
          log: Callable[[str], None] = print, on_call: OnCall | None = None,
          overwrite: bool = False) -> TrainResult:
  """Trains `config` (see galax/config/__init__.py); writes metrics and checkpoints to `workdir`.

  `on_call(env_steps, planned_env_steps, seconds_left or None)` after every call (e.g. a
  progress bar: galax/training/progress.py). A fresh run (not `resume`) into a workdir that
  holds a run is refused, unless `overwrite` deletes that run's files first.

  Raises `Diverged` (after writing result.json) at the first non-finite update, and
  `preemption.Preempted` (a SystemExit, status 143) after a SIGTERM's checkpoint.
  """
  config_lib.validate(config)
  if config.capture_video and not workdir:
    raise ValueError("config.capture_video=True writes <workdir>/videos: give a workdir.")
  if config.track and jax.process_index() == 0:
    tracking.check(config.track_mode)  # before anything is made
  made = workdir_lock.first_missing(workdir) if workdir else None  # removed if nothing starts
  if workdir:
    rundir.check(workdir)  # before the (slow) envs and compilation
  holds_lock = bool(workdir) and jax.process_index() == 0  # one writer per workdir
  with (workdir_lock.hold(workdir, log, made) if holds_lock else contextlib.nullcontext(),
        peers.watch(workdir and rundir.staging_dir(workdir),
                    lambda: rundir.last_good(_checkpoint_dir(workdir))),
        preemption.watch() as preempted):
    try:
      if resume:  # before the (slow) build
        ckpt_lib.check_resume_dir(_checkpoint_dir(workdir))
      elif holds_lock:  # never mix two runs' files
        rundir.start_afresh(workdir, overwrite)
      return _train(make_algorithm(config), workdir, resume, log, preempted, on_call)
    except jax.errors.JaxRuntimeError as e:
      if peers.collective_failed(e):  # a lost peer: nothing can be saved (galax/runtime/peers.py)
        peers.exit_lost_peer(e, workdir and rundir.staging_dir(workdir),
                             rundir.last_good(_checkpoint_dir(workdir)))
      raise


def _checkpoint_dir(workdir: str | None) -> str | None:
  return rundir.join(workdir, "checkpoints") if workdir else None


def _train(algorithm: Algorithm, workdir: str | None, resume: bool,
           log: Callable[[str], None], preempted: preemption.Watch,
           on_call: OnCall | None) -> TrainResult:
  checkpoint_dir = _checkpoint_dir(workdir)
  try:
    run = _Run(algorithm, workdir, checkpoint_dir, log, on_call)
  except BaseException:
    algorithm.env.close()
    raise
  try:  # whatever happens from here on (a failed restore or header too), close the envs
    if resume and (done := run.restore()):
      return run.already_finished(done)
    run.prepare(resume)
    if run.monitor is not None:
      run.monitor.start()
    _loop(run, preempted, log, workdir, checkpoint_dir)
  finally:
    run.close()
  return run.finish()


def _loop(run: _Run, preempted: preemption.Watch, log: Callable[[str], None],
          workdir: str | None, checkpoint_dir: str | None) -> None:
  """Calls until the run is done or stops; saves on every way out that keeps its state."""
  try:
    while run.updates < run.algorithm.total_updates:
      if run.call():  # diverged, or reached the target return or time limit
        break
      if (run.updates < run.algorithm.total_updates  # else the run is done: it ends as usual
          and preempted.reached((run.env_steps - run.start_steps) // run.per_call)):
        run.stopped = preemption.STOPPED
        break
  except KeyboardInterrupt:
    log(run.save_on_stop("interrupted"))
    raise
  except BaseException as e:  # keep what the run had learned, if its state is still intact
    if peers.collective_failed(e):  # no collective save can finish: exit now
      peers.exit_lost_peer(e, rundir.staging_dir(workdir) if workdir else None,
                           rundir.last_good(checkpoint_dir))
    log(run.save_on_stop("stopped by an error"))
    raise
  if run.stopped == preemption.STOPPED:
    run.preempted = run.save_on_stop(preemption.STOPPED)
    log(run.preempted)
  elif not run.diverged:
    if run.evals and run.evals.last_env_steps != run.env_steps:
      run.evaluate()  # the final policy
    run.save()


class _Run:
  """One `train` run's mutable state (counters, clocks, trackers, outputs) and its steps."""

  def __init__(self, algorithm: Algorithm, workdir: str | None, checkpoint_dir: str | None,
               log: Callable[[str], None], on_call: OnCall | None = None):
    config: ConfigDict = algorithm.config
    self.algorithm, self.config, self.log, self.on_call = algorithm, config, log, on_call
    self.workdir, self.checkpoint_dir = workdir, checkpoint_dir
    self.files = rundir.Mirror(workdir) if workdir else None  # staged for a URL: rundir.py
    self.state: LearnerState = algorithm.init()
    self.tracker = metrics_lib.EpisodeTracker(config.stats_window)
    self.learner_trackers = ([metrics_lib.EpisodeTracker(config.stats_window)
                              for _ in range(algorithm.layout.num_learners)]
                             if config.learner_stats else [])
    self.checkpointer = (ckpt_lib.Checkpointer(checkpoint_dir, config.keep_checkpoints,
                                               with_envs=algorithm.env.state_restorable)
                         if workdir else None)
    self.planned = dict(requested_env_steps=int(config.total_env_steps),
                        planned_env_steps=algorithm.total_updates * algorithm.env_steps_per_update)
    self.per_call = algorithm.updates_per_call * algorithm.env_steps_per_update  # env steps
    self.env_steps, self.updates = 0, 0  # `restore` continues a checkpoint's counts, clocks
    self.clock = RunClock(eval_time=lambda: self.eval_time_s)
    # Set by `prepare` (the writer on process 0 with a workdir only).
    self.writer: metrics_lib.MetricsWriter | None = None
    self.evals: eval_lib.EvalHook | None = None
    self.monitor: energy_lib.PowerMonitor | None = None
    self.next_log = self.next_ckpt = self.next_eval = float("inf")
    self.start_steps = 0  # this sitting's first env step
    self.unchecked: Mapping[str, jax.Array] | None = None  # a call's flags not yet checked
    self.stopped = "budget"
    self.diverged: str | None = None  # the divergence message, which ends the run
    self.preempted: str | None = None  # the line saying what a SIGTERM's stop saved
    self.best: ckpt_lib.BestCheckpoint | None = None
    self.energy: energy_lib.EnergyReport | None = None  # the monitor's, once stopped

  def restore(self) -> str:
    """Continues from the newest good checkpoint; says why nothing is left to do ("" if not)."""
    self.state, meta = self.checkpointer.restore(self.state, warn=self.log)
    self.env_steps, self.updates = int(meta["env_steps"]), int(meta["updates"])
    self.clock.elapsed_before = float(meta.get("wall_time_s", 0.0))
    self.clock.train_before = float(meta.get("train_time_s", self.clock.elapsed_before))
    self.tracker.load_json(meta.get("tracker"))
    for t, saved in zip(self.learner_trackers, meta.get("learner_trackers") or []):
      t.load_json(saved)
    self.log(f"resumed from {self.checkpointer.step_dir(self.env_steps)} at "
             f"{self.env_steps} env steps")
    config = self.config
    return finished_reason(self.algorithm.total_updates, self.updates, self.tracker,
                           self.clock.train_before, config.target_return, config.time_limit_s)

  def already_finished(self, done: str) -> TrainResult:
    self.log(f"nothing to do: the run in {self.workdir} is already finished ({done})"
             + ("; raise config.total_env_steps to train on" if "updates done" in done else ""))
    return TrainResult.nothing_done(self.env_steps, self.updates, self.clock, self.tracker,
                                    self.state, f"already finished: {done}", self.planned)

  def prepare(self, resume: bool) -> None:
    """Writes config.json and the header lines; opens the writer and hooks; starts the clocks."""
    config, algorithm = self.config, self.algorithm
    files_dir = self.files.local if self.files else None
    if self.files and jax.process_index() == 0:
      self.files.prepare(resume)
      tracker = (tracking.WandbTracker(config.track_project, config.track_entity,
                                       config.track_mode, config.to_dict(), files_dir,
                                       self.workdir, resume) if config.track else None)
      self.writer = metrics_lib.MetricsWriter(files_dir, config.tensorboard,
                                              resume_step=self.env_steps if resume else None,
                                              tracker=tracker)
      if resume:
        metrics_lib.truncate_csv(os.path.join(files_dir, "eval.csv"), self.env_steps)
      with open(os.path.join(files_dir, "config.json"), "w") as f:
        f.write(config.to_json_best_effort(indent=2))
    for line in header_lines(algorithm, self.planned):
      self.log(line)
    if self.workdir:
      self.log(f"workdir {rundir.absolute(self.workdir)}")
    if config.eval.every_steps > 0:
      settings, apply_fn = algorithm.setup.settings.eval, algorithm.network.apply
      videos = (VideoHook(settings, apply_fn, algorithm.layout.num_learners, files_dir,
                          self.writer) if config.capture_video else None)
      self.evals = eval_lib.EvalHook(settings, apply_fn, algorithm.layout.num_learners,
                                     files_dir, resume, self.log, videos)
      self.next_eval = self.evals.next_due(self.env_steps)
      if self.workdir:  # the best evaluation's state, <workdir>/best (evaluate --step=best)
        self.best = ckpt_lib.BestCheckpoint(
            rundir.join(self.workdir, "best"), algorithm.env.state_restorable,
            eval_lib.best_mean_return(self.evals.records))
    self.monitor = energy_lib.PowerMonitor() if config.energy else None
    if self.monitor is not None and self.monitor.available:
      self.log(f"energy: sampling the power of {self.monitor.num_gpus} GPU(s) through NVML")
    self.next_log = self.env_steps + config.log_every_steps
    self.next_ckpt = self.env_steps + (config.checkpoint_every_steps or float("inf"))
    self.start_steps = self.env_steps
    self.clock.begin(time.perf_counter(), self.env_steps)

  @property
  def eval_time_s(self) -> float:
    return self.evals.eval_time_s if self.evals else 0.0

  def last_good(self) -> str:
    step = self.checkpointer.latest_step() if self.checkpointer else None
    return self.checkpointer.step_dir(step) if step is not None else "none was saved"

  def save(self, deliver_ctrl_c: bool = True) -> None:
    """Checkpoints the state, whole: a Ctrl-C meanwhile waits until the write is done, then
    is raised (`deliver_ctrl_c`) or dropped (`ckpt_lib.sigint_deferred`)."""
    if self.checkpointer is not None and self.checkpointer.latest_step() != self.env_steps:
      with ckpt_lib.sigint_deferred(deliver_ctrl_c):
        self.checkpointer.save(self.env_steps, self.state, self.meta())
      if jax.process_index() == 0:
        self.files.push()  # galax's own files as of this checkpoint (a URL workdir)

  def meta(self) -> JsonDict:
    """What a checkpoint keeps besides the state: counters, clocks, episode statistics."""
    now = time.perf_counter()
    return dict(env_steps=self.env_steps, updates=self.updates, wall_time_s=self.clock.wall(now),
                train_time_s=self.clock.train(now), tracker=self.tracker.to_json(),
                learner_trackers=[t.to_json() for t in self.learner_trackers])

  def save_on_stop(self, why: str) -> str:
    """Saves the last whole call's state after an interruption; says what it did."""
    steps, last_good = self.env_steps, self.last_good
    if self.checkpointer is None:
      return f"{why} at env step {steps} (no workdir: nothing saved)"
    if steps == self.start_steps:
      return (f"{why} before the first call finished: nothing new to save (latest checkpoint: "
              f"{last_good()})")
    if self.unchecked is not None and divergence.first_nonfinite(to_host(self.unchecked)):
      return f"{why}: the last call was not finite, not saved (latest checkpoint: {last_good()})"
    try:
      self.save(deliver_ctrl_c=False)  # a second Ctrl-C: the run is ending anyway
    except Exception as e:  # pylint: disable=broad-except  (e.g. state donated mid-call)
      return f"{why}: could not checkpoint ({e}); latest checkpoint: {last_good()}"
    return f"{why}: saved checkpoint at step {steps} in {self.checkpoint_dir}; rerun with --resume"

  def evaluate(self) -> None:
    now = time.perf_counter()
    records = self.evals.run(self.state.params, self.env_steps, self.clock.train(now),
                             self.clock.wall(now))
    means = [r.mean_return for r in records]
    if self.best is not None:  # every process: the save is collective
      with ckpt_lib.sigint_deferred(True):
        self.best.offer(float(np.mean(means)) if means else float("nan"), self.env_steps,
                        self.state, self.meta())
    if not records:
      return
    self.log(eval_lib.eval_line(self.env_steps, records))
    if self.writer:
      self.writer.write_scalars(self.env_steps, {"eval/mean_return": float(np.mean(means))})

  def call(self) -> bool:
    """One call of `step` and its bookkeeping; True if the run stops here."""
    config, algorithm = self.config, self.algorithm
    call_start = time.perf_counter()
    self.state, metrics = algorithm.step(self.state)
    self.updates += algorithm.updates_per_call
    self.env_steps += self.per_call
    self.unchecked = metrics.get(divergence.FLAGS_KEY, {})
    metrics = to_host(metrics)
    self.diverged = divergence.report(metrics.pop(divergence.FLAGS_KEY, {}),
                                     self.updates - algorithm.updates_per_call,
                                     algorithm.env_steps_per_update, self.last_good)
    if self.diverged:
      self.stopped = self.diverged
      return True
    self.unchecked = None
    now = time.perf_counter()
    self.clock.called(call_start, now, self.env_steps, self.per_call)
    metrics_lib.add_episodes(self.tracker, self.learner_trackers, metrics.pop("episodes"))
    reached = config.target_return and self.tracker.mean_return >= config.target_return
    out_of_time = config.time_limit_s and self.clock.train(now) >= config.time_limit_s
    if (self.env_steps >= self.next_log or self.updates >= algorithm.total_updates or reached
        or out_of_time):
      self.log_row(metrics, now)
    if self.on_call:
      self.on_call(self.env_steps, self.planned["planned_env_steps"],
                   metrics_lib.time_left(*self.progress(now)))
    if self.env_steps >= self.next_eval:
      self.evaluate()
      self.next_eval = self.evals.next_due(self.env_steps)
    if self.env_steps >= self.next_ckpt:
      self.save()
      self.next_ckpt = self.env_steps + config.checkpoint_every_steps
    if reached:
      self.log(f"target return {config.target_return} reached at {self.env_steps} steps")
      self.stopped = "target return"
    elif out_of_time:
      self.log(f"time limit {config.time_limit_s}s reached at {self.env_steps} steps")
      self.stopped = "time limit"
    return bool(reached or out_of_time)

  def progress(self, now: float) -> tuple[int, int, int, float, float | None]:
    return self.clock.progress(now, self.env_steps, self.planned["planned_env_steps"],
                               self.config.time_limit_s)

  def log_row(self, metrics: Metrics, now: float) -> None:
    """A progress line and a metrics row; steps/s counts from the previous row."""
    tracker, steps = self.tracker, self.env_steps
    sps = self.clock.row_rate(now, steps)  # NaN while only the compiling call ran
    row = dict(mean_return=tracker.mean_return, mean_length=tracker.mean_length,
               episodes=tracker.completed, steps_per_second=sps,
               learning_rate=float(self.algorithm.learning_rate(self.updates)),
               wall_time_s=self.clock.wall(now),
               **metrics_lib.scalar_summary(metrics),
               train_time_s=self.clock.train(now),
               **{f"mean_return/learner{i}": t.mean_return
                  for i, t in enumerate(self.learner_trackers)})
    clock = self.clock
    self.log(f"steps {steps:>10d} | "
             f"{speed_text(clock.steady_steps, clock.steady_rate(), clock.compile_time)} | "
             f"{returns_text(tracker)} | loss {row.get('loss/total', float('nan')):.4f} | "
             f"{metrics_lib.progress(*self.progress(now))}")
    if self.writer:
      self.writer.write(steps, row)
    self.next_log = steps + self.config.log_every_steps

  def close(self) -> None:
    """Stops the power monitor; closes the envs, evaluation, checkpointer and writer."""
    self.energy = self.monitor.stop() if self.monitor is not None else None
    self.algorithm.env.close()  # waits for the run's env steps (a pool collected under one crashed)
    if self.evals:
      self.evals.close()
    if self.checkpointer is not None:
      self.checkpointer.close()
    if self.best is not None:
      self.best.close()
    if self.writer:
      self.writer.close()

  def finish(self) -> TrainResult:
    """The run's TrainResult, also in result.json; raises Diverged after writing it."""
    energy, tracker, steps = self.energy, self.tracker, self.env_steps
    now, clock = time.perf_counter(), self.clock
    result = TrainResult(
        env_steps=steps, updates=self.updates, wall_time_s=clock.wall(now),
        compile_time_s=clock.compile_time, steps_per_second=clock.steady_rate(),
        mean_return=tracker.mean_return, episodes=tracker.completed, state=self.state,
        train_time_s=clock.train(now), eval_time_s=self.eval_time_s,
        evaluations=list(self.evals.records) if self.evals else [],
        learner_returns=[t.mean_return for t in self.learner_trackers],
        energy=(energy.summary(steps, eval_lib.frames_per_step(self.algorithm.setup.env_settings))
                if energy else None),
        stopped=self.stopped, diverged=bool(self.diverged), **self.planned)
    if self.files and jax.process_index() == 0:
      metrics_lib.write_json(os.path.join(self.files.local, "result.json"), result.summary())
      self.files.push()
    if self.diverged:
      raise Diverged(self.diverged)
    if self.preempted:
      raise preemption.Preempted(self.preempted)
    for line in done_lines(result, now - clock.start, clock.steady_steps, tracker):
      self.log(line)
    return result
