"""The training loop around an `Algorithm`: progress, metrics, checkpoints, resume.

The loop calls the jitted `step` (updates_per_call updates), pulls its metrics to the host,
and in between writes progress lines, CSV/TensorBoard rows and checkpoints. The first call
compiles; its time is reported apart from the steady-state steps/s.

With `config.eval.every_steps` > 0 it also evaluates the policy on separate envs
(`galax.evaluation`) and writes `eval.csv`. Evaluation time is excluded from
`train_time_s`, the clock of the papers' time metrics and of `config.time_limit_s`. On an
NVIDIA GPU (`config.energy`) it reports the energy used and frames per kilojoule.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import Any, Callable

import jax
import numpy as np

from galax import checkpoint as ckpt_lib
from galax import config as config_lib
from galax import energy as energy_lib
from galax import evaluation as eval_lib
from galax import metrics as metrics_lib
from galax.algorithms import make_algorithm
from galax.algorithms.common import describe_choices
from galax.parallel.learners import to_host


@dataclasses.dataclass
class TrainResult:
  env_steps: int
  updates: int
  wall_time_s: float
  compile_time_s: float
  steps_per_second: float  # steady state (after the first, compiling call)
  mean_return: float  # over the last `stats_window` completed episodes
  episodes: int
  state: Any = dataclasses.field(repr=False, default=None)
  train_time_s: float = 0.0  # wall time without evaluations (incl. earlier runs if resumed)
  eval_time_s: float = 0.0  # wall time spent evaluating (this run)
  evaluations: list = dataclasses.field(default_factory=list)  # eval_lib.EvalRecord
  learner_returns: list = dataclasses.field(default_factory=list)  # with config.learner_stats
  energy: dict | None = None  # EnergyReport.summary() on NVIDIA GPUs, else None

  def summary(self) -> dict[str, Any]:
    d = dataclasses.asdict(self)
    d.pop("state")
    return d


def train(config: Any, workdir: str | None = None, resume: bool = False,
          log: Callable[[str], None] = print) -> TrainResult:
  """Trains `config` (see galax/config.py); writes metrics and checkpoints to `workdir`."""
  config_lib.validate(config)
  checkpoint_dir = os.path.join(workdir, "checkpoints") if workdir else None
  if resume:
    if not workdir:
      raise ValueError("--resume needs a --workdir holding earlier checkpoints.")
    ckpt_lib.check_resume_dir(checkpoint_dir)

  algorithm = make_algorithm(config)
  config = algorithm.config  # with the 'auto' choices resolved (common.resolve_auto)
  state = algorithm.init()
  env_steps, updates, elapsed_before, train_before = 0, 0, 0.0, 0.0
  checkpointer = ckpt_lib.Checkpointer(checkpoint_dir, config.keep_checkpoints) if workdir else None
  if resume:
    state, meta = checkpointer.restore(state)
    env_steps, updates = int(meta["env_steps"]), int(meta["updates"])
    elapsed_before = float(meta.get("wall_time_s", 0.0))
    train_before = float(meta.get("train_time_s", elapsed_before))
    log(f"resumed from {checkpoint_dir} at {env_steps} env steps")
  writer = None
  if workdir and jax.process_index() == 0:
    writer = metrics_lib.MetricsWriter(workdir, config.tensorboard, append=resume)
    with open(os.path.join(workdir, "config.json"), "w") as f:
      f.write(config.to_json_best_effort(indent=2))

  layout = algorithm.layout
  log(f"{config.algorithm} on {config.env.id}: {layout.num_learners} learner(s) x "
      f"{layout.envs_per_learner} envs on {layout.num_devices} {jax.devices()[0].platform} "
      f"device(s); {algorithm.total_updates} updates of {algorithm.env_steps_per_update} steps")
  log(f"resolved: {describe_choices(config)}")

  tracker = metrics_lib.EpisodeTracker(config.stats_window)
  learner_trackers = ([metrics_lib.EpisodeTracker(config.stats_window)
                       for _ in range(layout.num_learners)] if config.learner_stats else [])
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
  start = time.perf_counter()
  compile_time, steady_start, steady_steps = 0.0, None, 0
  last = dict(time=train_before, steps=env_steps)  # on the training clock (no evaluations)

  def train_time(now: float) -> float:
    return train_before + now - start - (evals.eval_time_s if evals else 0.0)

  def save():
    if checkpointer is not None:
      now = time.perf_counter()
      meta = dict(env_steps=env_steps, updates=updates,
                  wall_time_s=elapsed_before + now - start, train_time_s=train_time(now))
      checkpointer.save(env_steps, state, meta)

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
  try:
    while updates < algorithm.total_updates:
      call_start = time.perf_counter()
      state, metrics = algorithm.step(state)
      metrics = to_host(metrics)
      now = time.perf_counter()
      if steady_start is None:
        compile_time, steady_start = now - call_start, now
      else:
        steady_steps += per_call
      updates += algorithm.updates_per_call
      env_steps += per_call
      episodes = metrics.pop("episodes")
      tracker.add(episodes["over"], episodes["returns"], episodes["lengths"])
      for i, learner_tracker in enumerate(learner_trackers):
        learner_tracker.add(*(metrics_lib.learner_slice(episodes[k], i, len(learner_trackers))
                              for k in ("over", "returns", "lengths")))
      reached = config.target_return and tracker.mean_return >= config.target_return
      out_of_time = config.time_limit_s and train_time(now) >= config.time_limit_s
      if (env_steps >= next_log or updates >= algorithm.total_updates or reached
          or out_of_time):
        sps = (env_steps - last["steps"]) / max(train_time(now) - last["time"], 1e-9)
        last.update(time=train_time(now), steps=env_steps)
        row = dict(mean_return=tracker.mean_return, mean_length=tracker.mean_length,
                   episodes=tracker.completed, steps_per_second=sps,
                   learning_rate=float(algorithm.learning_rate(updates)),
                   wall_time_s=elapsed_before + now - start,
                   **metrics_lib.scalar_summary(metrics),
                   train_time_s=train_time(now),
                   **{f"mean_return/learner{i}": t.mean_return
                      for i, t in enumerate(learner_trackers)})
        log(f"steps {env_steps:>10d} | {sps:8.0f} steps/s | return {tracker.mean_return:8.2f} "
            f"(last {len(tracker.returns)} of {tracker.completed} episodes) | "
            f"loss {row.get('loss/total', float('nan')):.4f}")
        if writer:
          writer.write(env_steps, row)
        next_log = env_steps + config.log_every_steps
      if env_steps >= next_eval:
        evaluate()
        next_eval = evals.next_due(env_steps)
      if env_steps >= next_ckpt:
        save()
        next_ckpt = env_steps + config.checkpoint_every_steps
      if reached:
        log(f"target return {config.target_return} reached at {env_steps} steps")
        break
      if out_of_time:
        log(f"time limit {config.time_limit_s}s reached at {env_steps} steps")
        break
  except BaseException:
    try:  # keep what the interrupted run had learned, if its state is still intact
      save()
    except Exception as e:  # pylint: disable=broad-except
      log(f"could not checkpoint the interrupted run: {e}")
    raise
  else:
    if evals and evals.last_env_steps != env_steps:
      evaluate()  # the final policy
    save()
  finally:
    energy = monitor.stop() if monitor is not None else None
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
      env_steps=env_steps, updates=updates, wall_time_s=wall, compile_time_s=compile_time,
      steps_per_second=steady_steps / steady_time if steady_steps else float("nan"),
      mean_return=tracker.mean_return, episodes=tracker.completed, state=state,
      train_time_s=train_time(time.perf_counter()),
      eval_time_s=evals.eval_time_s if evals else 0.0,
      evaluations=list(evals.records) if evals else [],
      learner_returns=[t.mean_return for t in learner_trackers],
      energy=energy.summary(env_steps, eval_lib.frames_per_step(config)) if energy else None)
  log(f"done: {env_steps} steps in {wall:.1f}s (compile {compile_time:.1f}s, "
      f"{result.steps_per_second:.0f} steps/s); mean return {tracker.mean_return:.2f} over the "
      f"last {len(tracker.returns)} episodes")
  if result.energy:
    log(f"energy: {result.energy['energy_kj']:.1f} kJ, mean {result.energy['mean_power_w']:.0f} W,"
        f" {result.energy['frames_per_kj']:.0f} frames/kJ")
  if workdir and jax.process_index() == 0:
    with open(os.path.join(workdir, "result.json"), "w") as f:
      json.dump(result.summary(), f, indent=2)
  return result
