"""GPU energy through NVML: a clean skip without a GPU, and the energy maths with a fake NVML."""

import time

import pytest

from galax.training import energy


def test_skipped_cleanly_without_a_gpu():
  monitor = energy.PowerMonitor(interval_s=0.01)
  assert not monitor.available  # the test machines have no NVIDIA GPU
  assert "GPU" in monitor.reason or "nvidia-ml-py" in monitor.reason or "NVML" in monitor.reason
  assert monitor.num_gpus == 0
  assert monitor.start() is monitor
  assert monitor.stop() is None
  with energy.PowerMonitor() as m:
    pass
  assert m.report is None


class FakeNVML:
  """Two GPUs drawing 100 W and 50 W; the energy counter advances with the clock."""

  def __init__(self, counter: bool):
    self.counter = counter
    self.t0 = time.perf_counter()
    self.watts = [100.0, 50.0]

  def nvmlDeviceGetHandleByIndex(self, i):
    return i

  def nvmlDeviceGetPowerUsage(self, handle):
    return int(self.watts[handle] * 1000)  # milliwatts

  def nvmlDeviceGetTotalEnergyConsumption(self, handle):
    if not self.counter:
      raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
    return int((time.perf_counter() - self.t0) * self.watts[handle] * 1000)  # millijoules


@pytest.mark.parametrize("counter,method", [(True, "counter"), (False, "integrated")])
def test_energy_of_a_constant_draw(counter, method):
  monitor = energy.PowerMonitor(interval_s=0.01, nvml=FakeNVML(counter), devices=[0, 1])
  assert monitor.available and monitor.num_gpus == 2
  monitor.start()
  time.sleep(0.3)
  report = monitor.stop()
  assert report.method == method
  assert report.samples >= 3
  # 150 W for the measured duration.
  assert report.energy_j == pytest.approx(150.0 * report.duration_s, rel=0.05)
  assert report.mean_power_w == pytest.approx(150.0, rel=0.05)
  assert report.peak_power_w == pytest.approx(150.0)
  # GALA's figure: frames per kilojoule (Atari: 4 frames per agent step).
  summary = report.summary(env_steps=10_000, frames_per_step=4)
  assert summary["frames_per_kj"] == pytest.approx(40_000 / (report.energy_j / 1000))
  assert summary["steps_per_kj"] == pytest.approx(summary["frames_per_kj"] / 4)


def test_skipped_cleanly_when_nvml_cannot_start(monkeypatch):
  """A GPU platform whose NVML library is missing or broken: unavailable, with the reason."""
  import types

  import jax

  monkeypatch.setattr(jax, "devices", lambda *a: [types.SimpleNamespace(platform="gpu")])

  def broken_init():
    raise OSError("libnvidia-ml.so.1: cannot open shared object file")

  fake = types.SimpleNamespace(nvmlInit=broken_init)
  monkeypatch.setitem(__import__("sys").modules, "pynvml", fake)
  monitor = energy.PowerMonitor()
  assert not monitor.available
  assert monitor.reason.startswith("NVML did not initialise")
  assert monitor.start().stop() is None
