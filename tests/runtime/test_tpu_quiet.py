"""With the tpu extra's libtpu installed on a machine without a TPU, galax's commands print
none of libtpu's lines (galax/runtime/jax_quiet.py).

Plain JAX, there, loads libtpu at the first backend use to try a TPU backend, and libtpu
prints five lines (`could not determine TPU accelerator type`, `E0000 ... INVALID_ARGUMENT`,
a source location trace) before JAX falls back to the CPU. `jax_quiet.import_jax` makes
that backend fail at once, without loading libtpu.

The first test needs no libtpu: it replaces JAX's TPU client maker with one that prints a
line, as libtpu would, and checks that galax never calls it (plain JAX does). The others
run the real commands with libtpu (about 220 MB), installed once with pip into
~/.cache/galax/test-plugins/tpu (--no-deps --target) and put on PYTHONPATH; they are
skipped where pip cannot fetch it or where the machine has a TPU.
"""

import os
import subprocess
import sys

import pytest
from run_helpers import ROOT, pip_installed

LIBTPU = "libtpu==0.0.48.*"  # what jax[tpu]==0.11.2 (pyproject's tpu extra) pins
TARGET = os.path.join(os.path.expanduser("~"), ".cache", "galax", "test-plugins", "tpu")
TPU_LINES = ("libtpu", "TPU_", "tpu", "INVALID_ARGUMENT", "Source Location Trace")

# Stands in for libtpu: JAX's TPU backend factory calls xla_bridge.make_tpu_client, which
# would load libtpu (and print its lines). Argument: "galax" imports jax through galax.
_PROBE = """
import sys
from jax._src import xla_bridge

def make_tpu_client(*args, **kwargs):
  print("LIBTPU WOULD LOAD HERE", file=sys.stderr)
  raise RuntimeError("no TPU")

xla_bridge.make_tpu_client = make_tpu_client
if sys.argv[1] == "galax":
  from galax.runtime import jax_quiet
  jax = jax_quiet.import_jax()
else:
  import jax
print(jax.devices()[0].platform)
"""


def _env(**extra):
  env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "JAX_PLATFORM_NAME")}
  env.update(extra)  # JAX_PLATFORMS unset: JAX tries every backend it knows, as users' runs do
  return env


def _probe(how):
  return subprocess.run(
    [sys.executable, "-c", _PROBE, how],
    capture_output=True,
    text=True,
    cwd=ROOT,
    env=_env(),
    timeout=120,
  )


def _has_tpu() -> bool:
  from jax._src import hardware_utils

  return hardware_utils.num_available_tpu_chips_and_device_id()[0] > 0


def test_galax_never_tries_the_tpu_backend_without_a_tpu():
  if _has_tpu():
    pytest.skip("this machine has a TPU: the backend should start")
  plain = _probe("plain")
  assert plain.returncode == 0 and "LIBTPU WOULD LOAD HERE" in plain.stderr, plain.stderr
  quiet = _probe("galax")
  assert quiet.returncode == 0, quiet.stderr
  assert quiet.stdout.strip() == "cpu" and "LIBTPU WOULD LOAD HERE" not in quiet.stderr, (
    quiet.stderr
  )


@pytest.fixture(scope="module")
def libtpu_path():
  if _has_tpu():
    pytest.skip("this machine has a TPU: libtpu would start")
  return pip_installed(TARGET, (LIBTPU,))


def _run(libtpu_path, *args):
  return subprocess.run(
    [sys.executable, *args],
    capture_output=True,
    text=True,
    cwd=ROOT,
    env=_env(PYTHONPATH=libtpu_path),
    timeout=600,
  )


def _tpu_lines(stderr: str) -> list[str]:
  return [line for line in stderr.splitlines() if any(word in line for word in TPU_LINES)]


@pytest.mark.slow
def test_libtpu_is_noisy_without_galax(libtpu_path):
  """The premise: plain JAX with libtpu prints libtpu's lines here."""
  proc = _run(libtpu_path, "-c", "import jax; jax.devices()")
  assert _tpu_lines(proc.stderr), proc.stderr


@pytest.mark.slow
def test_a_cpu_run_and_its_evaluation_print_no_libtpu_line(libtpu_path, tmp_path):
  workdir = str(tmp_path / "run")
  train = _run(
    libtpu_path,
    "run.py",
    "--config.total_env_steps=2000",
    "--config.target_return=0",
    f"--workdir={workdir}",
  )
  assert train.returncode == 0, train.stderr
  assert not _tpu_lines(train.stderr), train.stderr
  evaluate = _run(libtpu_path, "-m", "galax.evaluate", f"--workdir={workdir}", "--episodes=2")
  assert evaluate.returncode == 0, evaluate.stderr
  assert not _tpu_lines(evaluate.stderr), evaluate.stderr
  assert "mean return" in evaluate.stdout
