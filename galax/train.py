"""The training loop around an `Algorithm`: progress, metrics, checkpoints, resume.

The loop calls the jitted `step` (updates_per_call updates), pulls its metrics to the host,
and in between writes progress lines, CSV/TensorBoard rows and checkpoints. The first call
compiles; its time is reported apart from the steady-state steps/s.

With `config.eval.every_steps` > 0 it also evaluates the policy on separate envs
(`galax.evaluation`) and writes `eval.csv`. Evaluation time is excluded from
`train_time_s`, the clock of the papers' time metrics and of `config.time_limit_s`. On an
NVIDIA GPU (`config.energy`) it reports the energy used and frames per kilojoule.

Reliability: every call's metrics carry finiteness flags (galax/divergence.py); the first
non-finite loss or parameter stops the run (`Diverged`) before any save. A resumed run
falls back past damaged checkpoints, drops metric rows after its checkpoint and continues
the episode statistics and clocks stored in it; a finished run is not trained on. Ctrl-C
saves the state of the last whole call (none if the first call had not finished).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import tempfile
import threading
import time
from typing import Any, Callable

import jax
import numpy as np

from galax import checkpoint as ckpt_lib
from galax import config as config_lib
from galax import divergence
from galax import energy as energy_lib
from galax import evaluation as eval_lib
from galax import metrics as metrics_lib
from galax.algorithms import make_algorithm
from galax.algorithms.common import describe_choices
from galax.parallel.learners import to_host


class Diverged(RuntimeError):
  """Training produced a non-finite loss, metric or parameter (nothing of it was saved)."""


@dataclasses.dataclass
class TrainResult:
  env_steps: int
  updates: int
  wall_time_s: float  # incl. earlier runs if resumed
  compile_time_s: float
  steps_per_second: float  # steady state (after the first, compiling call); NaN if none
  mean_return: float  # over the last `stats_window` completed episodes
  episodes: int
  state: Any = dataclasses.field(repr=False, default=None)
  train_time_s: float = 0.0  # wall time without evaluations (incl. earlier runs if resumed)
  eval_time_s: float = 0.0  # wall time spent evaluating (this run)
  evaluations: list = dataclasses.field(default_factory=list)  # eval_lib.EvalRecord
  learner_returns: list = dataclasses.field(default_factory=list)  # with config.learner_stats
  energy: dict | None = None  # EnergyReport.summary() on NVIDIA GPUs, else None
  requested_env_steps: int = 0  # config.total_env_steps
  planned_env_steps: int = 0  # ... rounded up to whole calls of updates_per_call updates
  stopped: str = ""  # why it ended: budget, target return, time limit, diverged: ...
  diverged: bool = False

  def summary(self) -> dict[str, Any]:
    d = dataclasses.asdict(self)
    d.pop("state")
    return metrics_lib.json_safe(d)


def check_workdir(workdir: str) -> None:
  """Raises ValueError (one line) unless `workdir` is, or can be made, a writable directory."""
  if os.path.exists(workdir) and not os.path.isdir(workdir):
    raise ValueError(f"--workdir {workdir!r} is a file, not a directory.")
  try:
    os.makedirs(workdir, exist_ok=True)
    with tempfile.TemporaryFile(dir=workdir):
      pass
  except OSError as e:
    raise ValueError(f"--workdir {workdir!r} is not a writable directory "
                     f"({e.strerror or e}).") from None


def finished_reason(config: Any, total_updates: int, updates: int,
                    tracker: metrics_lib.EpisodeTracker, train_time_s: float) -> str:
  """Why a run at this point has nothing left to do ("" if it has)."""
  if updates >= total_updates:
    return f"{updates} of {total_updates} updates done"
  if config.target_return and tracker.mean_return >= config.target_return:
    return (f"target return {config.target_return} reached (running mean "
            f"{tracker.mean_return:.2f})")
  if config.time_limit_s and train_time_s >= config.time_limit_s:
    return f"time limit {config.time_limit_s}s reached"
  return ""


def diverged_message(flags: dict[str, np.ndarray], first_update: int, steps_per_update: int,
                     last_good: Callable[[], str]) -> str | None:
  """The one-line report of the first non-finite update in a call's flags, or None."""
  found = divergence.first_nonfinite(flags)
  if found is None:
    return None
  index, name, count = found
  update = first_update + index + 1
  more = f" (and {count - 1} more quantities)" if count > 1 else ""
  return (f"training diverged: update {update} (env step {update * steps_per_update}) produced "
          f"a non-finite {name}{more}; nothing from it was saved. Last good checkpoint: "
          f"{last_good()}.")


@contextlib.contextmanager
def _sigint_deferred():
  """Ignores Ctrl-C while a checkpoint is written (main thread only)."""
  if threading.current_thread() is not threading.main_thread():
    yield
    return
  previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
  try:
    yield
  finally:
    signal.signal(signal.SIGINT, previous)


def train(config: Any, workdir: str | None = None, resume: bool = False,
          log: Callable[[str], None] = print) -> TrainResult:
  """Trains `config` (see galax/config.py); writes metrics and checkpoints to `workdir`.

  Raises `Diverged` (after writing result.json) at the first non-finite update.
  """
  config_lib.validate(config)
  if workdir:
    check_workdir(workdir)  # before the (slow) envs and compilation
  checkpoint_dir = os.path.join(workdir, "checkpoints") if workdir else None
  if resume:
    if not workdir:
      raise ValueError("--resume needs a --workdir holding earlier checkpoints.")
    ckpt_lib.check_resume_dir(checkpoint_dir)

  algorithm = make_algorithm(config)
  config = algorithm.config  # with the 'auto' choices resolved (common.resolve_auto)
  state = algorithm.init()
  layout = algorithm.layout
  tracker = metrics_lib.EpisodeTracker(config.stats_window)
  learner_trackers = ([metrics_lib.EpisodeTracker(config.stats_window)
                       for _ in range(layout.num_learners)] if config.learner_stats else [])
  env_steps, updates, elapsed_before, train_before = 0, 0, 0.0, 0.0
  checkpointer = ckpt_lib.Checkpointer(checkpoint_dir, config.keep_checkpoints) if workdir else None
  planned = dict(requested_env_steps=int(config.total_env_steps),
                 planned_env_steps=algorithm.total_updates * algorithm.env_steps_per_update)
  if resume:
    state, meta = checkpointer.restore(state, warn=log)
    env_steps, updates = int(meta["env_steps"]), int(meta["updates"])
    elapsed_before = float(meta.get("wall_time_s", 0.0))
    train_before = float(meta.get("train_time_s", elapsed_before))
    tracker.load_json(meta.get("tracker"))
    for t, saved in zip(learner_trackers, meta.get("learner_trackers") or []):
      t.load_json(saved)
    log(f"resumed from {checkpointer.step_dir(env_steps)} at {env_steps} env steps")
    done = finished_reason(config, algorithm.total_updates, updates, tracker, train_before)
    if done:
      log(f"nothing to do: the run in {workdir} is already finished ({done})"
          + ("; raise config.total_env_steps to train on" if "updates done" in done else ""))
      checkpointer.close()
      return TrainResult(env_steps=env_steps, updates=updates, wall_time_s=elapsed_before,
                         compile_time_s=0.0, steps_per_second=float("nan"),
                         mean_return=tracker.mean_return, episodes=tracker.completed,
                         state=state, train_time_s=train_before,
                         stopped=f"already finished: {done}", **planned)
  writer = None
  if workdir and jax.process_index() == 0:
    writer = metrics_lib.MetricsWriter(workdir, config.tensorboard,
                                       resume_step=env_steps if resume else None)
    if resume:
      metrics_lib.truncate_csv(os.path.join(workdir, "eval.csv"), env_steps)
    with open(os.path.join(workdir, "config.json"), "w") as f:
      f.write(config.to_json_best_effort(indent=2))

  log(f"{config.algorithm} on {config.env.id}: {layout.num_learners} learner(s) x "
      f"{layout.envs_per_learner} envs on {layout.num_devices} {jax.devices()[0].platform} "
      f"device(s); {algorithm.total_updates} updates of {algorithm.env_steps_per_update} steps")
  log(f"resolved: {describe_choices(config)}")
  if planned["planned_env_steps"] != planned["requested_env_steps"]:
    log(f"total_env_steps={config.total_env_steps} rounds up to {planned['planned_env_steps']}"
        f" env steps (whole calls of updates_per_call={config.updates_per_call} updates)")
  if workdir:
    log(f"workdir {os.path.abspath(workdir)}")

  evals = None
  if config.eval.every_steps > 0:
    evals = eval_lib.EvalHook(config, algorithm.network.apply, layout.num_learners, workdir,
                              resume, log)
  next_eval = evals.next_due(env_steps) if evals else float("inf")
  monitor = energy_lib.PowerMonitor() if config.energy else None
  if monitor is not None and monitor.available:
    log(f"energy: sampling the power of {monitor.num_gpus} GPU(s) through NVML")
  per_call = algorithm.updates_per_call * algorithm.env_steps_per_update
  next_log = env_steps + config.log_every_steps
  next_ckpt = env_steps + (config.checkpoint_every_steps or float("inf"))
  start, start_steps = time.perf_counter(), env_steps
  compile_time, steady_start, steady_steps = 0.0, None, 0
  last = dict(time=train_before, steps=env_steps)  # on the training clock (no evaluations)
  unchecked = None  # the finiteness flags of a call not yet checked on the host
  stopped = "budget"

  def train_time(now: float) -> float:
    return train_before + now - start - (evals.eval_time_s if evals else 0.0)

  def last_good() -> str:
    step = checkpointer.latest_step() if checkpointer else None
    return checkpointer.step_dir(step) if step is not None else "none was saved"

  def save():
    if checkpointer is not None and checkpointer.latest_step() != env_steps:
      now = time.perf_counter()
      meta = dict(env_steps=env_steps, updates=updates,
                  wall_time_s=elapsed_before + now - start, train_time_s=train_time(now),
                  tracker=tracker.to_json(),
                  learner_trackers=[t.to_json() for t in learner_trackers])
      checkpointer.save(env_steps, state, meta)

  def save_on_stop(why: str) -> str:
    """Saves the last whole call's state after an interruption; says what it did."""
    if checkpointer is None:
      return f"{why} at env step {env_steps} (no workdir: nothing saved)"
    if env_steps == start_steps:
      return (f"{why} before the first call finished: nothing new to save (latest checkpoint: "
              f"{last_good()})")
    if unchecked is not None and divergence.first_nonfinite(to_host(unchecked)):
      return f"{why}: the last call was not finite, not saved (latest checkpoint: {last_good()})"
    try:
      with _sigint_deferred():
        save()
    except Exception as e:  # pylint: disable=broad-except  (e.g. state donated mid-call)
      return f"{why}: could not checkpoint ({e}); latest checkpoint: {last_good()}"
    return f"{why}: saved checkpoint at step {env_steps} in {checkpoint_dir}; rerun with --resume"

  def evaluate():
    now = time.perf_counter()
    records = evals.run(state.params, env_steps, train_time(now), elapsed_before + now - start)
    if not records:
      return
    means = [r.mean_return for r in records]
    if len(records) == 1:
      who = "average params" if records[0].learner < 0 else f"learner {records[0].learner}"
    else:
      who = f"{len(records)} learners (min {min(means):.2f}, max {max(means):.2f})"
    log(f"eval  {env_steps:>10d} | return {np.mean(means):8.2f} over "
        f"{len(records[0].returns)} episodes | {who}")
    if writer:
      writer.write_scalars(env_steps, {"eval/mean_return": float(np.mean(means))})

  if monitor is not None:
    monitor.start()
  diverged = None
  try:
    while updates < algorithm.total_updates:
      call_start = time.perf_counter()
      state, metrics = algorithm.step(state)
      updates += algorithm.updates_per_call
      env_steps += per_call
      unchecked = metrics.get(divergence.FLAGS_KEY, {})
      metrics = to_host(metrics)
      diverged = diverged_message(metrics.pop(divergence.FLAGS_KEY, {}),
                                  updates - algorithm.updates_per_call,
                                  algorithm.env_steps_per_update, last_good)
      if diverged:
        stopped = diverged
        break
      unchecked = None
      now = time.perf_counter()
      if steady_start is None:
        compile_time, steady_start = now - call_start, now
      else:
        steady_steps += per_call
      episodes = metrics.pop("episodes")
      tracker.add(episodes["over"], episodes["returns"], episodes["lengths"])
      for i, learner_tracker in enumerate(learner_trackers):
        learner_tracker.add(*(metrics_lib.learner_slice(episodes[k], i, len(learner_trackers))
                              for k in ("over", "returns", "lengths")))
      reached = config.target_return and tracker.mean_return >= config.target_return
      out_of_time = config.time_limit_s and train_time(now) >= config.time_limit_s
      if (env_steps >= next_log or updates >= algorithm.total_updates or reached
          or out_of_time):
        # The compiling call counts in no steps/s figure (NaN if it is all there is).
        sps = ((env_steps - last["steps"]) / max(train_time(now) - last["time"], 1e-9)
               if steady_steps else float("nan"))
        last.update(time=train_time(now), steps=env_steps)
        row = dict(mean_return=tracker.mean_return, mean_length=tracker.mean_length,
                   episodes=tracker.completed, steps_per_second=sps,
                   learning_rate=float(algorithm.learning_rate(updates)),
                   wall_time_s=elapsed_before + now - start,
                   **metrics_lib.scalar_summary(metrics),
                   train_time_s=train_time(now),
                   **{f"mean_return/learner{i}": t.mean_return
                      for i, t in enumerate(learner_trackers)})
        speed = f"{sps:8.0f} steps/s" if steady_steps else f"compile {compile_time:6.1f}s"
        log(f"steps {env_steps:>10d} | {speed} | return {tracker.mean_return:8.2f} "
            f"(last {len(tracker.returns)} of {tracker.completed} episodes) | "
            f"loss {row.get('loss/total', float('nan')):.4f}")
        if writer:
          writer.write(env_steps, row)
        next_log = env_steps + config.log_every_steps
      if not steady_steps:
        last.update(time=train_time(now), steps=env_steps)
      if env_steps >= next_eval:
        evaluate()
        next_eval = evals.next_due(env_steps)
      if env_steps >= next_ckpt:
        save()
        next_ckpt = env_steps + config.checkpoint_every_steps
      if reached:
        log(f"target return {config.target_return} reached at {env_steps} steps")
        stopped = "target return"
        break
      if out_of_time:
        log(f"time limit {config.time_limit_s}s reached at {env_steps} steps")
        stopped = "time limit"
        break
  except KeyboardInterrupt:
    log(save_on_stop("interrupted"))
    raise
  except BaseException:  # keep what the run had learned, if its state is still intact
    log(save_on_stop("stopped by an error"))
    raise
  else:
    if not diverged:
      if evals and evals.last_env_steps != env_steps:
        evaluate()  # the final policy
      save()
  finally:
    energy = monitor.stop() if monitor is not None else None
    algorithm.env.close()  # waits for the run's env steps (a pool collected under one crashed)
    if evals:
      evals.close()
    if checkpointer is not None:
      checkpointer.close()
    if writer:
      writer.close()

  wall = time.perf_counter() - start
  # Evaluations all run after the first (compiling) call, so the steady clock drops them all.
  steady_time = (time.perf_counter() - steady_start - (evals.eval_time_s if evals else 0.0)
                 if steady_start else 0.0)
  result = TrainResult(
      env_steps=env_steps, updates=updates, wall_time_s=elapsed_before + wall,
      compile_time_s=compile_time,
      steps_per_second=steady_steps / steady_time if steady_steps else float("nan"),
      mean_return=tracker.mean_return, episodes=tracker.completed, state=state,
      train_time_s=train_time(time.perf_counter()),
      eval_time_s=evals.eval_time_s if evals else 0.0,
      evaluations=list(evals.records) if evals else [],
      learner_returns=[t.mean_return for t in learner_trackers],
      energy=energy.summary(env_steps, eval_lib.frames_per_step(config)) if energy else None,
      stopped=stopped, diverged=bool(diverged), **planned)
  if workdir and jax.process_index() == 0:
    metrics_lib.write_json(os.path.join(workdir, "result.json"), result.summary())
  if diverged:
    raise Diverged(diverged)
  speed = f"{result.steps_per_second:.0f} steps/s" if steady_steps else "one call: no steady rate"
  log(f"done: {env_steps} steps in {wall:.1f}s (compile {compile_time:.1f}s, {speed}); "
      f"mean return {tracker.mean_return:.2f} over the last {len(tracker.returns)} episodes")
  if result.energy:
    log(f"energy: {result.energy['energy_kj']:.1f} kJ, mean {result.energy['mean_power_w']:.0f} W,"
        f" {result.energy['frames_per_kj']:.0f} frames/kJ")
  return result
