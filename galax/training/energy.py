"""GPU energy during training, read through NVML (nvidia-ml-py), as in GALA Fig. 1f-g / 3.

`PowerMonitor` samples the power draw of the GPUs a job uses in a background thread. The
energy is the difference of NVML's cumulative energy counter (millijoules since driver
load, Volta and newer) where the GPU has one, else the trapezoidal integral of the power
samples. `EnergyReport.frames_per_kj(frames)` gives GALA's efficiency figure.

Where there is no NVIDIA GPU (jax's platform is not "gpu", nvidia-ml-py is not installed,
or NVML does not initialise) the monitor is *unavailable*: `start`/`stop` do nothing and
`stop` returns None, with the reason in `.reason`. Nothing else changes.

Which GPUs: those named by CUDA_VISIBLE_DEVICES (indices or UUIDs), else all that NVML
sees. Energy is summed over them.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Any, Sequence

import jax


@dataclasses.dataclass
class EnergyReport:
  energy_j: float  # summed over the monitored GPUs
  duration_s: float
  mean_power_w: float  # energy_j / duration_s
  peak_power_w: float  # highest summed power sample
  samples: int
  method: str  # "counter" (NVML total energy) | "integrated" (power samples)
  gpus: int

  def frames_per_kj(self, frames: float) -> float:
    return frames / (self.energy_j / 1000.0) if self.energy_j > 0 else float("nan")

  def summary(self, env_steps: int, frames_per_step: int = 1) -> dict[str, float]:
    return dict(
      energy_kj=self.energy_j / 1000.0,
      mean_power_w=self.mean_power_w,
      peak_power_w=self.peak_power_w,
      steps_per_kj=self.frames_per_kj(env_steps),
      frames_per_kj=self.frames_per_kj(env_steps * frames_per_step),
      power_samples=self.samples,
      method=self.method,
      gpus=self.gpus,
    )


def _load_nvml() -> tuple[Any, str]:
  """(the pynvml module, "") if NVML is usable here, else (None, why not)."""
  try:
    platform = jax.devices()[0].platform
  except Exception as e:
    return None, f"no jax devices ({e})"
  if platform != "gpu":
    return None, f"no GPU (jax platform {platform!r})"
  try:
    import pynvml
  except ImportError:
    return None, "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
  try:
    pynvml.nvmlInit()
  except Exception as e:
    return None, f"NVML did not initialise ({e})"
  return pynvml, ""


def _handles(nvml: Any, visible: str | None) -> list[Any]:
  if not visible:
    return [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
  handles = []
  for item in visible.split(","):
    item = item.strip()
    if item.isdigit():
      handles.append(nvml.nvmlDeviceGetHandleByIndex(int(item)))
    elif item:
      handles.append(nvml.nvmlDeviceGetHandleByUUID(item))
  return handles


class PowerMonitor:
  """Samples GPU power every `interval_s` seconds between `start()` and `stop()`.

  Args:
    interval_s: sampling period of the background thread.
    nvml: an initialised pynvml-like module (for tests); None loads the real one if a GPU
      is present.
    devices: NVML device indices to monitor; None = CUDA_VISIBLE_DEVICES or all.
  """

  def __init__(
    self, interval_s: float = 0.1, nvml: Any = None, devices: Sequence[int] | None = None
  ):
    self.interval_s = interval_s
    self.reason = ""
    if nvml is None:
      nvml, self.reason = _load_nvml()
    self._nvml = nvml
    self._handles: list[Any] = []
    if nvml is not None:
      try:
        self._handles = (
          [nvml.nvmlDeviceGetHandleByIndex(i) for i in devices]
          if devices is not None
          else _handles(nvml, os.environ.get("CUDA_VISIBLE_DEVICES"))
        )
      except Exception as e:
        self.reason = f"NVML could not open the GPUs ({e})"
        self._handles = []
      if not self._handles and not self.reason:
        self.reason = "NVML lists no GPUs"
    self._thread: threading.Thread | None = None
    self._stop = threading.Event()
    self._samples: list[tuple[float, float]] = []  # (time, summed watts)
    self._counter_start: list[int] | None = None
    self._t0 = 0.0

  @property
  def available(self) -> bool:
    return bool(self._handles)

  @property
  def num_gpus(self) -> int:
    return len(self._handles)

  def _power_w(self) -> float:
    return sum(self._nvml.nvmlDeviceGetPowerUsage(h) for h in self._handles) / 1000.0

  def _counters_mj(self) -> list[int] | None:
    try:
      return [int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in self._handles]
    except Exception:  # pre-Volta GPUs have no counter
      return None

  def _sample_loop(self) -> None:
    while not self._stop.wait(self.interval_s):
      self._samples.append((time.perf_counter(), self._power_w()))

  def start(self) -> "PowerMonitor":
    if not self.available:
      return self
    self._samples = []
    self._stop.clear()
    self._counter_start = self._counters_mj()
    self._t0 = time.perf_counter()
    self._samples.append((self._t0, self._power_w()))
    self._thread = threading.Thread(target=self._sample_loop, name="galax-power", daemon=True)
    self._thread.start()
    return self

  def stop(self) -> EnergyReport | None:
    if not self.available or self._thread is None:
      return None
    self._stop.set()
    self._thread.join()
    self._thread = None
    end = time.perf_counter()
    self._samples.append((end, self._power_w()))
    counters = self._counters_mj()
    duration = end - self._t0
    times, watts = (list(x) for x in zip(*self._samples))
    if self._counter_start is not None and counters is not None:
      energy = sum(b - a for a, b in zip(self._counter_start, counters)) / 1000.0
      method = "counter"
    else:
      energy = float(
        sum(
          (t1 - t0) * (w0 + w1) / 2
          for t0, t1, w0, w1 in zip(times[:-1], times[1:], watts[:-1], watts[1:])
        )
      )
      method = "integrated"
    return EnergyReport(
      energy_j=energy,
      duration_s=duration,
      mean_power_w=energy / duration if duration > 0 else float("nan"),
      peak_power_w=max(watts),
      samples=len(watts),
      method=method,
      gpus=len(self._handles),
    )

  def __enter__(self) -> "PowerMonitor":
    return self.start()

  def __exit__(self, *exc) -> None:
    self.report = self.stop()
