"""What a phase of benchmarks/device.py is given, and how its figures are kept.

A phase takes a `Context` and returns its figures as a dict (the child writes them to
<out>/phases/<name>.json); `ctx.record` saves figures as they come, so a phase killed at
its time box keeps what it measured. `Skipped` records why a phase did not run. `Scale`
says how big every phase is (`SCALES`: full, smoke), and `scale_overrides` and `SMALL_PPO`
are the config fields that the smoke scale changes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
from typing import Any


class Skipped(Exception):
  """A phase that cannot run here (a missing peer, no such config); the message says why."""


@dataclasses.dataclass(frozen=True)
class Scale:
  """How big every phase is: `full` for a 16-core GPU box (under 8 minutes in all), `smoke`
  for a CPU check of every phase (under 3 minutes)."""

  budget_s: float  # the whole call, this driver included
  pong_seconds: float  # pong_fast, CleanRL, and the many-env run's first stretch
  raw_envs: tuple[int, ...]
  raw_seconds: float
  minatar_envs: tuple[int, ...]
  measure_seconds: float  # steady state per MinAtar and HTS figure
  smoke_seconds: float  # time_limit_s of each smoke run (compile included)
  hts_envs: int
  envs: int  # envs_per_learner of the Pong and smoke runs; 0: the configs' own
  network: str  # the network of every run; "": the configs' own
  startup_s: float  # run.py's imports, envs and compile before its time limit counts


SCALES = {
  "full": Scale(
    budget_s=470,
    pong_seconds=60,
    raw_envs=(16, 64, 256),
    raw_seconds=3,
    minatar_envs=(64, 4096),
    measure_seconds=3,
    smoke_seconds=8,
    hts_envs=16,
    envs=0,
    network="",
    startup_s=30,
  ),
  "smoke": Scale(
    budget_s=170,
    pong_seconds=8,
    raw_envs=(4,),  # one count runs the loop; 4 = envs, the count the ratios look up
    raw_seconds=0.25,
    minatar_envs=(8,),
    measure_seconds=0.3,
    smoke_seconds=1,
    hts_envs=2,
    envs=4,
    network="mlp",
    startup_s=40,  # a loaded 2-core CI machine took over 15 s to start the last phase
  ),
}


@dataclasses.dataclass
class Context:
  name: str
  scale: Scale
  out: str
  args: argparse.Namespace
  seconds: float  # what the driver left this phase (its time box)
  figures: dict[str, Any] = dataclasses.field(default_factory=dict)

  def record(self, **figures: Any) -> None:
    self.figures.update(figures)
    write_phase(self.out, self.name, dict(status="running", result=self.figures))

  def workdir(self, *parts: str) -> str:
    path = os.path.join(self.out, "work", self.name, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def finite(value: Any) -> Any:
  """value with NaN and infinities as None (strict JSON)."""
  if isinstance(value, float) and not math.isfinite(value):
    return None
  if isinstance(value, dict):
    return {k: finite(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [finite(v) for v in value]
  return value


def write_phase(out: str, name: str, record: dict[str, Any]) -> None:
  os.makedirs(os.path.join(out, "phases"), exist_ok=True)
  path = os.path.join(out, "phases", f"{name}.json")
  with open(path + ".tmp", "w") as f:
    json.dump(finite(record), f, indent=1, allow_nan=False)
  os.replace(path + ".tmp", path)  # the driver never reads half a file


def scale_overrides(scale: Scale) -> list[str]:
  """The smoke scale's config fields (fewer envs, a network that compiles in seconds)."""
  return ([f"envs_per_learner={scale.envs}"] if scale.envs else []) + (
    [f"network.name={scale.network}"] if scale.network else []
  )


# GFootball PPO and HTS-PPO in the smoke: 16 env steps per update instead of 128, one epoch.
SMALL_PPO = {
  "t_max": 16,
  "hts.alpha": 16,
  "ppo.epochs": 1,
  "ppo.minibatches": 2,
  "hts.microbatches": 2,
}
