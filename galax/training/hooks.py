"""What the loop does between calls, as hooks: the log line and metrics row, the per-call
callback, evaluation (+ the best checkpoint), the periodic checkpoint and the power monitor.

After every call the loop runs each hook that is `due`, in order (evaluation before the
checkpoint, so a checkpoint's step has its evaluation); when the run ends (not by a
divergence or a SIGTERM) it calls every hook's `at_end`, and `close` on every way out.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Mapping, Protocol

import jax
import numpy as np

from galax.algorithms import Algorithm
from galax.core import divergence
from galax.core.types import Metrics
from galax.evaluate import periodic
from galax.framework.update import LearnerState
from galax.parallel.layout import to_host
from galax.runtime import checkpoint as ckpt_lib
from galax.runtime import preemption
from galax.runtime import workdir as workdirs
from galax.training import energy as energy_lib
from galax.training import metrics as metrics_lib
from galax.training.header import returns_text, speed_text
from galax.training.outputs import Outputs
from galax.training.progress import Progress, Stop, StopRules
from galax.training.settings import LoopSettings
from galax.training.videos import VideoHook

OnCall = Callable[[int, int, "float | None"], None]  # steps, planned steps, seconds left


@dataclasses.dataclass
class Run:
  """What the hooks read: the run's loop settings, the state, where the run stands and the
  last call's metrics."""

  settings: LoopSettings
  state: LearnerState
  progress: Progress
  rules: StopRules
  planned_env_steps: int
  metrics: Metrics = dataclasses.field(default_factory=dict)  # the last call's, on the host
  now: float = 0.0  # when the last call ended
  stop: Stop = Stop.NONE
  message: str = ""  # a divergence's message, or the line saying what a SIGTERM's stop saved
  unchecked: Mapping[str, jax.Array] | None = None  # a call's flags not yet checked

  def time_left(self) -> tuple[int, int, int, float, float | None]:
    """`metrics.progress`'s arguments as of `now`."""
    return self.progress.clock.progress(
      self.now, self.progress.env_steps, self.planned_env_steps, self.rules.time_limit_s
    )


class Hook(Protocol):
  def due(self, run: Run) -> bool: ...

  def __call__(self, run: Run) -> None: ...

  def at_end(self, run: Run) -> None: ...

  def close(self) -> None: ...


class LogHook:
  """Every `every` env steps, and at a stop: a progress line and a metrics row (steps/s
  counts from the previous row)."""

  def __init__(
    self,
    algorithm: Algorithm,
    outputs: Outputs,
    log: Callable[[str], None],
    every: int,
    env_steps: int,
  ):
    self.algorithm, self.outputs, self.log, self.every = algorithm, outputs, log, every
    self.next = env_steps + every

  def due(self, run: Run) -> bool:
    return run.progress.env_steps >= self.next or run.stop is not Stop.NONE

  def __call__(self, run: Run) -> None:
    progress, now = run.progress, run.now
    tracker, steps, clock = progress.tracker, progress.env_steps, progress.clock
    row = dict(
      mean_return=tracker.mean_return,
      mean_length=tracker.mean_length,
      episodes=tracker.completed,
      steps_per_second=clock.row_rate(now, steps),
      learning_rate=float(self.algorithm.learning_rate(progress.updates)),
      wall_time_s=clock.wall(now),
      **metrics_lib.scalar_summary(run.metrics),
      train_time_s=clock.train(now),
      **{f"mean_return/learner{i}": t.mean_return for i, t in enumerate(progress.learner_trackers)},
    )
    self.log(
      f"steps {steps:>10d} | "
      f"{speed_text(clock.steady_steps, clock.steady_rate(), clock.compile_time)} | "
      f"{returns_text(tracker)} | loss {row.get('loss/total', float('nan')):.4f} | "
      f"{metrics_lib.progress(*run.time_left())}"
    )
    if self.outputs.writer:
      self.outputs.writer.write(steps, row)
    self.next = steps + self.every

  def at_end(self, run: Run) -> None:
    pass

  def close(self) -> None:
    pass


class CallbackHook:
  """`train`'s `on_call(env_steps, planned_env_steps, seconds_left or None)`, every call."""

  def __init__(self, on_call: OnCall):
    self.on_call = on_call

  def due(self, run: Run) -> bool:
    return True

  def __call__(self, run: Run) -> None:
    self.on_call(
      run.progress.env_steps, run.planned_env_steps, metrics_lib.time_left(*run.time_left())
    )

  def at_end(self, run: Run) -> None:
    pass

  def close(self) -> None:
    pass


class CheckpointHook:
  """Checkpoints every `every` env steps (0: never) and at the end; saves what it can when
  a run is interrupted (`save_on_stop`)."""

  def __init__(
    self,
    checkpointer: ckpt_lib.Checkpointer | None,
    directory: str | None,
    outputs: Outputs,
    every: int,
    env_steps: int,
  ):
    self.checkpointer, self.directory = checkpointer, directory
    self.outputs, self.every = outputs, every
    self.next = env_steps + every if every and checkpointer else float("inf")

  def due(self, run: Run) -> bool:
    return run.progress.env_steps >= self.next

  def __call__(self, run: Run) -> None:
    self.save(run)
    self.next = run.progress.env_steps + self.every

  def at_end(self, run: Run) -> None:
    self.save(run)

  def save(self, run: Run, deliver_ctrl_c: bool = True) -> None:
    """Checkpoints the state, whole: a Ctrl-C meanwhile waits until the write is done, then
    is raised (`deliver_ctrl_c`) or dropped (`preemption.sigint_deferred`)."""
    steps = run.progress.env_steps
    if self.checkpointer is not None and self.checkpointer.latest_step() != steps:
      with preemption.sigint_deferred(deliver_ctrl_c):
        self.checkpointer.save(steps, run.state, run.progress.to_meta(time.perf_counter()))
      self.outputs.push()  # galax's own files as of this checkpoint (a URL workdir)

  def last_good(self) -> str:
    step = self.checkpointer.latest_step() if self.checkpointer else None
    return self.checkpointer.step_dir(step) if step is not None else "none was saved"

  def save_on_stop(self, why: str, run: Run) -> str:
    """Saves the last whole call's state after an interruption; says what it did."""
    steps, last_good = run.progress.env_steps, self.last_good
    if self.checkpointer is None:
      return f"{why} at env step {steps} (no workdir: nothing saved)"
    if steps == run.progress.start_steps:
      return (
        f"{why} before the first call finished: nothing new to save (latest checkpoint: "
        f"{last_good()})"
      )
    if ckpt_lib.donated(run.state):  # a second Ctrl-C stopped a call that had taken the state
      return (
        f"{why} mid-call: the call held the state, nothing since the latest checkpoint is "
        f"saved ({last_good()})"
      )
    if run.unchecked is not None and divergence.first_nonfinite(to_host(run.unchecked)):
      return f"{why}: the last call was not finite, not saved (latest checkpoint: {last_good()})"
    try:
      self.save(run, deliver_ctrl_c=False)  # a second Ctrl-C: the run is ending anyway
    except Exception as e:
      return f"{why}: could not checkpoint ({e}); latest checkpoint: {last_good()}"
    return f"{why}: saved checkpoint at step {steps} in {self.directory}; rerun with --resume"

  def close(self) -> None:
    if self.checkpointer is not None:
      self.checkpointer.close()


class EvaluationHook:
  """Evaluates the policy on its own envs (galax/evaluate/periodic.py `EvalHook`, which
  writes eval.csv and times itself) every `eval.every_steps` and at the end, and keeps the
  best evaluation's state in <workdir>/best."""

  def __init__(
    self,
    evals: periodic.EvalHook,
    best: ckpt_lib.BestCheckpoint | None,
    outputs: Outputs,
    log: Callable[[str], None],
    env_steps: int,
  ):
    self.evals, self.best, self.outputs, self.log = evals, best, outputs, log
    self.next = evals.next_due(env_steps)

  def due(self, run: Run) -> bool:
    return run.progress.env_steps >= self.next

  def __call__(self, run: Run) -> None:
    self.evaluate(run)
    self.next = self.evals.next_due(run.progress.env_steps)

  def at_end(self, run: Run) -> None:
    if self.evals.last_env_steps != run.progress.env_steps:
      self.evaluate(run)  # the final policy

  def evaluate(self, run: Run) -> None:
    progress, now = run.progress, time.perf_counter()
    records = self.evals.run(
      run.state.params, progress.env_steps, progress.clock.train(now), progress.clock.wall(now)
    )
    means = [r.mean_return for r in records]
    if self.best is not None:  # every process: the save is collective
      with preemption.sigint_deferred(True):
        self.best.offer(
          float(np.mean(means)) if means else float("nan"),
          progress.env_steps,
          run.state,
          progress.to_meta(time.perf_counter()),
        )
    if not records:
      return
    self.log(periodic.eval_line(progress.env_steps, records))
    if self.outputs.writer:
      self.outputs.writer.write_scalars(
        progress.env_steps, {"eval/mean_return": float(np.mean(means))}
      )

  def close(self) -> None:
    self.evals.close()
    if self.best is not None:
      self.best.close()


def evaluation_hook(
  algorithm: Algorithm, run: Run, outputs: Outputs, resume: bool, log: Callable[[str], None]
) -> EvaluationHook:
  """The run's `EvaluationHook`: its evaluations (with videos, `capture_video`) and, with a
  workdir, its best checkpoint (`evaluate --step=best`)."""
  num_learners = algorithm.layout.num_learners
  settings, apply_fn = run.settings.eval, algorithm.network.apply
  videos = (
    VideoHook(settings, apply_fn, num_learners, outputs.local, outputs.writer)
    if run.settings.capture_video
    else None
  )
  evals = periodic.EvalHook(settings, apply_fn, num_learners, outputs.local, resume, log, videos)
  best = (
    ckpt_lib.BestCheckpoint(
      workdirs.join(outputs.workdir, "best"),
      algorithm.env.state_restorable,
      periodic.best_mean_return(evals.records),
    )
    if outputs.workdir
    else None
  )
  return EvaluationHook(evals, best, outputs, log, run.progress.env_steps)


class EnergyHook:
  """Samples the GPUs' power from the first call to the end (`config.energy`); `report`
  holds the energy used once closed."""

  def __init__(self, log: Callable[[str], None]):
    self.monitor = energy_lib.PowerMonitor()
    self.report: energy_lib.EnergyReport | None = None
    if self.monitor.available:
      log(f"energy: sampling the power of {self.monitor.num_gpus} GPU(s) through NVML")
    self.monitor.start()

  def due(self, run: Run) -> bool:
    return False

  def __call__(self, run: Run) -> None:
    pass

  def at_end(self, run: Run) -> None:
    pass

  def close(self) -> None:
    self.report = self.monitor.stop()
