"""Test setup: 8 virtual CPU devices for multi-device tests (set before jax is imported),
and one persistent XLA compilation cache for the whole run.

Many tests compile the same programs (the same config in several tests, both xdist
workers, the subprocesses of CLI and fault-injection tests): the cache, keyed by the
program and its compile options, compiles each once per run. A cached executable is the
same binary a fresh compile gives, so bitwise checks are unaffected. The directory is a
fresh temporary one per run (never reused across runs or checkouts), removed at the end;
set GALAX_TEST_COMPILE_CACHE=off to compile everything afresh.
"""

import os
import shutil
import tempfile

import pytest

# Appended to any XLA_FLAGS of the caller's (e.g. --xla_cpu_max_isa=AVX2 to test as an
# AVX2-only host would), which must not take the 8 devices away.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                             + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

_CACHE_VAR = "GALAX_TEST_COMPILE_CACHE"


def pytest_configure(config):
  del config
  if os.environ.get(_CACHE_VAR) == "off":
    return
  if _CACHE_VAR not in os.environ:  # the controller (or a run without xdist): make it
    os.environ[_CACHE_VAR] = tempfile.mkdtemp(prefix="galax-test-xla-cache-")
    os.environ["_GALAX_TEST_CACHE_OWNER"] = str(os.getpid())
  # Workers and subprocesses inherit these; jax reads them when it is first imported.
  os.environ["JAX_COMPILATION_CACHE_DIR"] = os.environ[_CACHE_VAR]
  os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.5"
  import jax  # pylint: disable=g-import-not-at-top

  jax.config.update("jax_compilation_cache_dir", os.environ[_CACHE_VAR])
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def pytest_unconfigure(config):
  del config
  if os.environ.get("_GALAX_TEST_CACHE_OWNER") == str(os.getpid()):
    shutil.rmtree(os.environ[_CACHE_VAR], ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_env_step_outlives_its_test():
  """Waits, after each test, for every computation it dispatched that steps envs.

  envpool pools die when their owner is collected; a jitted step still running on a
  collected pool (a test that drops its outputs without waiting for them) writes into
  freed memory and crashed a later test's worker at random. envpool's custom calls are
  side-effecting, so `effects_barrier` waits for them.
  """
  yield
  import jax  # pylint: disable=g-import-not-at-top

  jax.effects_barrier()

