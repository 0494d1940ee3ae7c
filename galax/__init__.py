"""galax: distributed actor-critic RL (PAAC/A2C, all-reduce A2C, GALA, HTS-RL, BA3C, A3C,
IMPALA) in JAX on envpool."""

__version__ = "0.1.0"


def __getattr__(name: str):
  """`galax.load_policy` (galax/evaluate.py), imported on first use: `import galax` stays
  light (no jax)."""
  if name == "load_policy":
    from galax.evaluate import load_policy  # pylint: disable=g-import-not-at-top

    return load_policy
  raise AttributeError(f"module 'galax' has no attribute {name!r}")
