"""The suite's fast-compile XLA flags (set by tests/conftest.py for every test and
subprocess), and `compiler_options`: XLA compile options for the programs a test jits,
in place of those flags. Imports no JAX until used (conftest imports it first)."""

import contextlib
import functools

# LLVM at level 0 (tests/README.md). jax 0.11's XLA:CPU has no other emitter for fusions:
# `--xla_cpu_use_fusion_emitters=false`, which the suite set under jax 0.10, is no flag there.
FAST_COMPILE_FLAGS = ("--xla_backend_optimization_level=0",)


def fast_compile_flags(xla_flags: str) -> list[str]:
  """The flags of `xla_flags` that set what FAST_COMPILE_FLAGS set (whatever the value)."""
  names = {flag.split("=")[0] for flag in FAST_COMPILE_FLAGS}
  return [flag for flag in xla_flags.split() if flag.split("=")[0] in names]


@contextlib.contextmanager
def compiler_options(**options):
  """Inside, every top-level `jax.jit` compiles with `options` (XLA DebugOptions fields,
  e.g. `xla_backend_optimization_level=3`). jax refuses compiler options on a jit nested
  in another's trace, which keeps the outer's."""
  import jax

  jit = jax.jit

  class WithOptions:
    """A jitted function with the options where it is called at the top level."""

    def __init__(self, fun, *args, **kwargs):
      self._plain = jit(fun, *args, **kwargs)
      self._with_options = jit(fun, *args, compiler_options=options, **kwargs)

    def __call__(self, *args, **kwargs):
      try:
        return self._with_options(*args, **kwargs)
      except ValueError as e:
        if "top-level" not in str(e):
          raise
        return self._plain(*args, **kwargs)

    def __get__(self, obj, objtype=None):  # a jitted method (gymnax's) binds as jax's do
      return self if obj is None else functools.partial(self, obj)

    def __getattr__(self, name):
      return getattr(self._with_options, name)

  jax.jit = WithOptions
  try:
    yield
  finally:
    jax.jit = jit
