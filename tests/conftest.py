"""Test setup: 8 virtual CPU devices for multi-device tests (set before jax is imported),
and one persistent XLA compilation cache for the whole run.

Many tests compile the same programs (the same config in several tests, both xdist
workers, the subprocesses of CLI and fault-injection tests): the cache, keyed by the
program and its compile options, compiles each once per run. A cached executable is the
same binary a fresh compile gives, so bitwise checks are unaffected. The directory is a
fresh temporary one per run (never reused across runs or checkouts), removed at the end;
set GALAX_TEST_COMPILE_CACHE=off to compile everything afresh.
"""

import ast
import functools
import os
import shutil
import sys
import tempfile
import threading

import pytest
from xla_options import FAST_COMPILE_FLAGS, compiler_options

# Appended to any XLA_FLAGS of the caller's (e.g. --xla_cpu_max_isa=AVX2 to test as an
# AVX2-only host would), which must not take the 8 devices away.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
  ).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# Compiles are most of the suite's time. The suite compiles faster with LLVM at level 0
# instead of 3 (`GALAX_TEST_XLA_OPTIMIZE=1` keeps XLA's default): under jax 0.11.2, the 31
# golden cases (mostly compile) took 88 s instead of 115 s on 2 cores (2026-11-28). jax
# 0.10's second switch, XLA:CPU's older elemental fusion emitters, is gone in 0.11. Results
# agree with the default within the golden tolerance, not bitwise, so GALAX_GOLDEN_BITWISE=1
# keeps the default too. Workers and subprocesses inherit the flag; tests that run one
# program for many steps ask for `optimized_xla` (level 3).
XLA_DEFAULT_OPTIMIZATION = 3
if not (
  "xla_backend_optimization_level" in os.environ["XLA_FLAGS"]
  or os.environ.get("GALAX_TEST_XLA_OPTIMIZE") == "1"
  or os.environ.get("GALAX_GOLDEN_BITWISE") == "1"
):
  os.environ["XLA_FLAGS"] += " " + " ".join(FAST_COMPILE_FLAGS)

_CACHE_VAR = "GALAX_TEST_COMPILE_CACHE"


def _serialize_ast_parse():
  """One `ast.parse` at a time in this process, on CPythons with gh-106905.

  Before 3.11.8 and 3.12.2, the AST constructor's recursion counter is shared by all
  threads; two threads parsing at once (a garbage collection in one lets the other run)
  leave it unbalanced and raise `SystemError: AST constructor recursion depth mismatch`.
  pytest parses a test's file to format its failure, and Python 3.11's traceback module
  parses each line it underlines: a failing test's report, formatted while the gs://
  emulator's server thread printed a BrokenPipeError, raised it in pytest itself
  (INTERNALERROR), which killed an xdist worker and lost the rest of its tests.
  """
  if not (
    (3, 11) <= sys.version_info[:3] < (3, 11, 8) or (3, 12) <= sys.version_info[:3] < (3, 12, 2)
  ):
    return
  parse, lock = ast.parse, threading.RLock()

  @functools.wraps(parse)
  def serialized(*args, **kwargs):
    with lock:
      return parse(*args, **kwargs)

  ast.parse = serialized


_serialize_ast_parse()


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
  import jax

  jax.config.update("jax_compilation_cache_dir", os.environ[_CACHE_VAR])
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def pytest_unconfigure(config):
  del config
  if os.environ.get("_GALAX_TEST_CACHE_OWNER") == str(os.getpid()):
    shutil.rmtree(os.environ[_CACHE_VAR], ignore_errors=True)


@pytest.fixture
def optimized_xla():
  """The programs this test jits compiled at XLA's default LLVM level (3):
  for tests that run one program for many steps, where optimizing pays for its compile."""
  with compiler_options(xla_backend_optimization_level=XLA_DEFAULT_OPTIMIZATION):
    yield


@pytest.fixture(autouse=True)
def _no_env_step_outlives_its_test():
  """Waits, after each test, for every computation it dispatched that steps envs.

  envpool pools die when their owner is collected; a jitted step still running on a
  collected pool (a test that drops its outputs without waiting for them) writes into
  freed memory and crashed a later test's worker at random. envpool's custom calls are
  side-effecting, so `effects_barrier` waits for them.
  """
  yield
  import jax

  jax.effects_barrier()


# --- scheduling under `-n 2` (`--dist loadgroup`, pyproject.toml) ------------------------
#
# Each test is its own unit of work, handed to whichever worker is free, except the tests
# that share a module-scoped fixture or a per-process cache of runs: those go to one worker
# as one group (else each worker builds the shared run, or rebuilds it after tests of other
# modules tore it down). Groups are handed out first, the largest first; then the tests
# marked slow (the longest of them first), then the rest, so that short tests fill the end
# of the run instead of one long test running alone on one worker.

# Modules that share runs through a cache of their own (not a fixture), by group.
_CACHE_GROUPS = {
  "test_golden_updates.py": "golden",  # cached_run_case: a mutation reuses its case's run
  "test_hts.py": "hts",  # delay_off_run, shared with test_hts_gradient_point
  "test_hts_gradient_point.py": "hts",
  "test_ppo_metrics.py": "ppo_metrics",  # _compiled
}
# The longest single tests (over ~40 s on 2 busy cores), started before the other slow ones.
_LONGEST = (
  "test_device_benchmark.py::test_every_phase_of_the_smoke_scale",
  "test_pong_learning.py::",
  "test_experiments_claims.py::test_claim_command",
  "test_reliability.py::test_fault_injection_small",
  "test_notebooks.py::test_notebook_runs",
  "test_lost_peer.py::test_the_survivor",
  "test_preemption.py::test_two_processes",
)


def _group(item):
  module = item.path.name
  if module in _CACHE_GROUPS:
    return _CACHE_GROUPS[module]
  fixtures = getattr(item, "_fixtureinfo", None)
  for defs in fixtures.name2fixturedefs.values() if fixtures else ():
    if any(d.scope in ("module", "session") and d.baseid.endswith(module) for d in defs):
      return module.removesuffix(".py")
  return None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
  del config
  for item in items:
    group = _group(item)
    if group:
      item.add_marker(pytest.mark.xdist_group(group))

  def order(item):
    longest = any(key in item.nodeid for key in _LONGEST)
    return (not longest, item.get_closest_marker("slow") is None)

  items.sort(key=order)  # stable: the collection order within each class


def pytest_collection_finish(session):
  """In an xdist worker under `--dist loadgroup`: each grouped test's id carries its group,
  which is what xdist's scheduler reads. With pytest 9, xdist 3.8's rename of the id has no
  effect, and every group's shared runs were built on both workers, silently."""
  config = session.config
  if not (os.environ.get("PYTEST_XDIST_WORKER") and getattr(config.option, "loadgroup", False)):
    return
  items = session.items
  lost = [i.nodeid for i in items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
  if lost:
    raise pytest.UsageError(
      f"pytest-xdist ignored the test groups (e.g. {lost[0]}): install pytest<9 (pyproject.toml)"
    )
