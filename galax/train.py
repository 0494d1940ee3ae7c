"""The training loop around an `Algorithm`: progress, metrics, checkpoints, resume.

The loop calls the jitted `step` (updates_per_call updates), pulls its metrics to the host,
and in between writes progress lines, CSV/TensorBoard rows and checkpoints. The first call
compiles; its time is reported apart from the steady-state steps/s.
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
from galax import metrics as metrics_lib
from galax.algorithms import make_algorithm
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
  state = algorithm.init()
  env_steps, updates, elapsed_before = 0, 0, 0.0
  checkpointer = ckpt_lib.Checkpointer(checkpoint_dir, config.keep_checkpoints) if workdir else None
  if resume:
    state, meta = checkpointer.restore(state)
    env_steps, updates = int(meta["env_steps"]), int(meta["updates"])
    elapsed_before = float(meta.get("wall_time_s", 0.0))
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

  tracker = metrics_lib.EpisodeTracker(config.stats_window)
  per_call = algorithm.updates_per_call * algorithm.env_steps_per_update
  next_log = env_steps + config.log_every_steps
  next_ckpt = env_steps + (config.checkpoint_every_steps or float("inf"))
  start = time.perf_counter()
  compile_time, steady_start, steady_steps = 0.0, None, 0
  last = dict(time=start, steps=env_steps)

  def save():
    if checkpointer is not None:
      meta = dict(env_steps=env_steps, updates=updates,
                  wall_time_s=elapsed_before + time.perf_counter() - start)
      checkpointer.save(env_steps, state, meta)

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
      reached = config.target_return and tracker.mean_return >= config.target_return
      if env_steps >= next_log or updates >= algorithm.total_updates or reached:
        sps = (env_steps - last["steps"]) / max(now - last["time"], 1e-9)
        last.update(time=now, steps=env_steps)
        row = dict(mean_return=tracker.mean_return, mean_length=tracker.mean_length,
                   episodes=tracker.completed, steps_per_second=sps,
                   learning_rate=float(algorithm.learning_rate(updates)),
                   wall_time_s=elapsed_before + now - start,
                   **metrics_lib.scalar_summary(metrics))
        log(f"steps {env_steps:>10d} | {sps:8.0f} steps/s | return {tracker.mean_return:8.2f} "
            f"(last {len(tracker.returns)} of {tracker.completed} episodes) | "
            f"loss {row.get('loss/total', float('nan')):.4f}")
        if writer:
          writer.write(env_steps, row)
        next_log = env_steps + config.log_every_steps
      if env_steps >= next_ckpt:
        save()
        next_ckpt = env_steps + config.checkpoint_every_steps
      if reached:
        log(f"target return {config.target_return} reached at {env_steps} steps")
        break
  except BaseException:
    try:  # keep what the interrupted run had learned, if its state is still intact
      save()
    except Exception as e:  # pylint: disable=broad-except
      log(f"could not checkpoint the interrupted run: {e}")
    raise
  else:
    save()
  finally:
    if checkpointer is not None:
      checkpointer.close()
    if writer:
      writer.close()

  wall = time.perf_counter() - start
  steady_time = time.perf_counter() - steady_start if steady_start else 0.0
  result = TrainResult(
      env_steps=env_steps, updates=updates, wall_time_s=wall, compile_time_s=compile_time,
      steps_per_second=steady_steps / steady_time if steady_steps else float("nan"),
      mean_return=tracker.mean_return, episodes=tracker.completed, state=state)
  log(f"done: {env_steps} steps in {wall:.1f}s (compile {compile_time:.1f}s, "
      f"{result.steps_per_second:.0f} steps/s); mean return {tracker.mean_return:.2f} over the "
      f"last {len(tracker.returns)} episodes")
  if workdir and jax.process_index() == 0:
    with open(os.path.join(workdir, "result.json"), "w") as f:
      json.dump(result.summary(), f, indent=2)
  return result
