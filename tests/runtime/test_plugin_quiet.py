"""With the gpu-aot extra's CUDA plugin installed on a machine without an NVIDIA driver,
galax's commands still answer bad input in one line (galax/runtime/jax_quiet.py).

The plugin wheels (about 180 MB) are installed once with pip into
~/.cache/galax/test-plugins/gpu-aot (--no-deps --target) and put on PYTHONPATH for the
commands; the test is skipped where pip cannot fetch them or where there is a driver.
"""

import os
import subprocess
import sys

import pytest
from run_helpers import ROOT, pip_installed

PLUGINS = ("jax-cuda12-plugin==0.11.2", "jax-cuda12-pjrt==0.11.2")  # pyproject's gpu-aot
TARGET = os.path.join(os.path.expanduser("~"), ".cache", "galax", "test-plugins", "gpu-aot")


@pytest.fixture(scope="module")
def plugin_path():
  if os.path.exists("/proc/driver/nvidia/version"):
    pytest.skip("an NVIDIA driver is present: the plugin would start")
  return pip_installed(TARGET, PLUGINS)


def _run(plugin_path, *args):
  env = dict(os.environ, PYTHONPATH=plugin_path)
  return subprocess.run(
    [sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300
  )


@pytest.mark.slow
def test_the_plugin_is_noisy_without_galax(plugin_path):
  """The premise: plain `import jax` and a backend print the plugin's lines here."""
  proc = _run(plugin_path, "-c", "import jax; jax.devices()")
  assert "cudart_stub.cc" in proc.stderr or "Unable to load CUDA" in proc.stderr, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
  "args,message",
  [
    (["run.py", "--workdir=/dev/null/x"], "is not a writable directory"),
    (
      [
        "run.py",
        "--config=minatar_ppo",
        "--config.network.name=mlp",
        "--config.network.activation=gelu",
      ],
      "config.network.activation='gelu' is not one of",
    ),
    (["-m", "galax.evaluate", "--workdir=/nonexistent"], "has no config.json"),
  ],
)
def test_bad_input_is_one_line_with_the_plugin(plugin_path, tmp_path, args, message):
  if "--workdir" not in " ".join(args):
    args = [*args, f"--workdir={tmp_path}"]
  proc = _run(plugin_path, *args)
  lines = proc.stderr.strip().splitlines()
  assert proc.returncode == 2 and len(lines) == 1 and message in lines[0], proc.stderr
