"""What a run says before its first call: the algorithm and its learner layout, the
execution plan (galax/plan.py), and how the step budget rounds to whole calls."""

from __future__ import annotations

from typing import Mapping

from galax.algorithms import Algorithm


def header_lines(algorithm: Algorithm, planned: Mapping[str, int]) -> list[str]:
  """The header; `planned` holds the requested and planned env steps (`TrainResult`'s)."""
  config, layout, plan = algorithm.config, algorithm.layout, algorithm.plan
  sharded = "+sharded_state" if config.optimizer.sharded_state else ""
  lines = [f"{config.algorithm} (combine={config.combine}{sharded}) on {config.env.id}: "
           f"{layout.num_learners} learner(s) x {layout.envs_per_learner} envs on "
           f"{layout.num_devices} {plan.platform} device(s); "
           f"{algorithm.total_updates} updates of {algorithm.env_steps_per_update} steps",
           f"plan: {plan.describe()}"]
  if planned["planned_env_steps"] != planned["requested_env_steps"]:
    lines.append(f"total_env_steps={config.total_env_steps} rounds up to "
                 f"{planned['planned_env_steps']} env steps (whole calls of "
                 f"updates_per_call={config.updates_per_call} updates)")
  return lines
