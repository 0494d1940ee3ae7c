"""Where an archnips update's time goes on this machine: forward, and the gradients by layer.

  python benchmarks/conv_grad_cost.py
  XLA_FLAGS=--xla_cpu_use_onednn=true python benchmarks/conv_grad_cost.py   # a flag's effect

The network is pong_paac's (archnips: 8x8/4 conv to 16, 4x4/2 conv to 32, fc 256) on 160
frames (32 envs x t_max 5), as plain lax convolutions and a dot, summed to a scalar; each
figure is the median of --calls jitted calls, compile excluded. "grad conv1 kernel" also
pays the backward pass through conv2 (its input gradient), which "conv2 input" times alone.
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

LAYOUT = ("NHWC", "HWIO", "NHWC")


def median_ms(fn, *args, calls: int) -> float:
  fn = jax.jit(fn)
  jax.block_until_ready(fn(*args))
  times = []
  for _ in range(calls):
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    times.append((time.perf_counter() - start) * 1e3)
  return statistics.median(times)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=160)
  parser.add_argument("--calls", type=int, default=30)
  args = parser.parse_args()
  rng = np.random.default_rng(0)
  frames = jnp.asarray(rng.random((args.batch, 84, 84, 4), np.float32))
  k1 = jnp.asarray(rng.normal(0, 0.1, (8, 8, 4, 16)).astype(np.float32))
  k2 = jnp.asarray(rng.normal(0, 0.1, (4, 4, 16, 32)).astype(np.float32))
  w = jnp.asarray(rng.normal(0, 0.02, (2592, 256)).astype(np.float32))
  h1 = jnp.asarray(rng.random((args.batch, 20, 20, 16), np.float32))

  def net(k1, k2, w, x):
    h = jax.nn.relu(lax.conv_general_dilated(x, k1, (4, 4), "VALID", dimension_numbers=LAYOUT))
    h = jax.nn.relu(lax.conv_general_dilated(h, k2, (2, 2), "VALID", dimension_numbers=LAYOUT))
    return jax.nn.relu(h.reshape(h.shape[0], -1) @ w).sum()

  def conv2(h, k):
    return lax.conv_general_dilated(h, k, (2, 2), "VALID", dimension_numbers=LAYOUT).sum()

  def conv1(k, x):
    return lax.conv_general_dilated(x, k, (4, 4), "VALID", dimension_numbers=LAYOUT).sum()

  figures = {
    "forward": median_ms(net, k1, k2, w, frames, calls=args.calls),
    "grad, all parameters": median_ms(
      jax.grad(net, (0, 1, 2)), k1, k2, w, frames, calls=args.calls
    ),
    "grad conv1 kernel": median_ms(jax.grad(net, 0), k1, k2, w, frames, calls=args.calls),
    "grad conv2 kernel + fc": median_ms(jax.grad(net, (1, 2)), k1, k2, w, frames, calls=args.calls),
    "conv1 kernel alone": median_ms(jax.grad(conv1), k1, frames, calls=args.calls),
    "conv2 input alone": median_ms(jax.grad(conv2), h1, k2, calls=args.calls),
  }
  print(f"{jax.devices()[0].device_kind}; jax {jax.__version__}; batch {args.batch}")
  for name, ms in figures.items():
    print(f"{name:>24}: {ms:7.1f} ms")


if __name__ == "__main__":
  main()
