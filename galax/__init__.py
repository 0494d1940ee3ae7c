"""galax: distributed actor-critic RL (PAAC/A2C, all-reduce A2C, GALA, HTS-RL, BA3C, A3C,
IMPALA) in JAX on envpool."""

__version__ = "0.1.0"
