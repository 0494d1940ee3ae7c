"""What a run says: before its first call, the algorithm and its learner layout, the
execution plan (galax/framework/plan.py), what stops the run, how the step budget and the
logging cadence round to whole calls, and a network that does not suit the observations; then
its progress and done lines.

Both lines give one steps/s figure, `RunClock.steady_rate`: env steps per second of
training time since the compiling first call (metrics.csv's `steps_per_second` is the rate
since the previous row).
"""

from __future__ import annotations

import math
from typing import Mapping

import jax

from galax.algorithms import Algorithm, spec_for
from galax.training.metrics import EpisodeTracker
from galax.training.result import TrainResult
from galax.training.settings import LoopSettings

# Above this many values an image is no MLP input (MinAtar's 10x10x4, 400, is PureJaxRL's
# MLP case; Atari's 4x84x84 is 28,224).
MLP_IMAGE_VALUES = 4096

# The plan's unit_call in plain words (galax/algorithms/hts/ordering.py); HTS-RL uses it.
UNIT_CALL = dict(
  isolated="each HTS learner unit is compiled as its own XLA computation, so results are "
  "bitwise the same wherever it is scheduled among the env steps",
  inline="HTS learner units are compiled together with the work around them: faster "
  "convolution gradients on CPU; results can differ in the last bit between schedules",
)


def header_lines(algorithm: Algorithm, loop: LoopSettings, planned: Mapping[str, int]) -> list[str]:
  """The header; `planned` holds the requested and planned env steps (`TrainResult`'s)."""
  run, layout, plan = algorithm.setup.settings, algorithm.layout, algorithm.plan
  sharded = "+sharded_state" if run.optimizer.sharded_state else ""
  lines = [
    f"{run.algorithm} (combine={run.combine.kind}{sharded}) on {run.env.id}: "
    f"{layout.num_learners} learner(s) x {layout.envs_per_learner} envs on "
    f"{layout.num_devices} {plan.platform} device(s); "
    f"{algorithm.total_updates} updates of {algorithm.env_steps_per_update} steps",
    f"plan: {plan.describe()} (each field: galax/framework/plan.py)",
  ]
  visible = jax.device_count()
  if 1 < layout.num_learners and layout.num_devices < visible:  # several learners, idle devices
    lines.append(
      f"devices: {layout.num_devices} of the {visible} visible carry learners, "
      f"{visible - layout.num_devices} idle (num_learners={layout.num_learners}; a multiple of "
      f"{visible} uses them all)"
    )
  unit_call = getattr(plan, "unit_call", None)
  if spec_for(run.algorithm).segment_units and unit_call in UNIT_CALL:  # HTS segments
    lines.append(f"unit_call={unit_call}: {UNIT_CALL[unit_call]}")
  lines.append(stop_line(loop, planned["planned_env_steps"]))
  if planned["planned_env_steps"] != planned["requested_env_steps"]:
    lines.append(
      f"total_env_steps={loop.total_env_steps} rounds up to "
      f"{planned['planned_env_steps']} env steps (whole calls of "
      f"updates_per_call={run.updates_per_call} updates)"
    )
  per_call = algorithm.updates_per_call * algorithm.env_steps_per_update
  for field, every in (
    ("log_every_steps", loop.log_every_steps),
    ("checkpoint_every_steps", loop.checkpoint_every_steps),
    ("eval.every_steps", loop.eval.every_steps),
  ):
    if every > 0 and every % per_call:
      lines.append(
        f"{field}={every} rounds up to every {math.ceil(every / per_call) * per_call}"
        f" env steps (whole calls of {per_call} env steps)"
      )
  batch = run.env.batch_size
  if 0 < batch < layout.envs_per_learner:
    lines.append(
      f"envs: envpool async, {batch} of {layout.envs_per_learner} envs per step "
      "(whichever are ready): not bit-reproducible"
    )
  return lines + _network_warning(algorithm)


def stop_line(loop: LoopSettings, planned_env_steps: int) -> str:
  """What ends the run, whichever comes first: its step budget, its return target (a score
  on one env: a target carried over from another env's config would stop it early) and its
  training-time limit."""
  stops = [f"{planned_env_steps} env steps"]
  if loop.target_return:
    stops.append(
      f"a running mean return >= {loop.target_return:g} over the last {loop.stats_window} "
      "episodes (target_return)"
    )
  if loop.time_limit_s:
    stops.append(f"{loop.time_limit_s:g} s of training time this sitting (time_limit_s)")
  first = ", whichever comes first" if len(stops) > 1 else ""
  return f"stops at: {'; '.join(stops)}{first}"


def _network_warning(algorithm: Algorithm) -> list[str]:
  shape = tuple(algorithm.env.spec.obs_shape)
  run = algorithm.setup.settings
  if run.network.name != "mlp" or len(shape) < 2:
    return []
  values = math.prod(shape)
  if values <= MLP_IMAGE_VALUES:
    return []
  return [
    f"warning: network.name='mlp' flattens {run.env.id}'s "
    f"{'x'.join(map(str, shape))} images into {values} inputs; a convolutional network "
    f"learns from them far better (--config.network.name=archnips or archnature)"
  ]


def returns_text(tracker: EpisodeTracker) -> str:
  if not tracker.completed:
    return "no finished episode yet"
  return (
    f"return {tracker.mean_return:8.2f} (last {len(tracker.returns)} of "
    f"{tracker.completed} episodes)"
  )


def speed_text(steady_steps: int, rate: float, compile_time: float) -> str:
  """The steps/s of both lines, or the compile time while only the first call ran."""
  return f"{rate:8.0f} steps/s" if steady_steps else f"compile {compile_time:6.1f}s"


def done_lines(
  result: TrainResult, wall: float, steady_steps: int, tracker: EpisodeTracker
) -> list[str]:
  """The last lines: steps, time, speed and return; the energy where it was measured."""
  speed = f"{result.steps_per_second:.0f} steps/s" if steady_steps else "one call: no steady rate"
  returns = (
    f"mean return {tracker.mean_return:.2f} over the last {len(tracker.returns)} episodes"
    if tracker.completed
    else "no finished episode yet"
  )
  lines = [
    f"done: {result.env_steps} steps in {wall:.1f}s (compile "
    f"{result.compile_time_s:.1f}s, {speed}); {returns}"
  ]
  if result.energy:
    energy = result.energy
    lines.append(
      f"energy: {energy['energy_kj']:.1f} kJ, mean {energy['mean_power_w']:.0f} W, "
      f"{energy['frames_per_kj']:.0f} frames/kJ"
    )
  return lines
