"""Where an archnips update's time goes on this machine: forward, and the gradients by layer.

  python -m benchmarks.conv_grad_cost
  XLA_FLAGS=--xla_cpu_use_onednn=true python -m benchmarks.conv_grad_cost   # a flag's effect
  python -m benchmarks.conv_grad_cost --alternatives   # conv1's kernel gradient rewritten

The network is pong_paac's (archnips: 8x8/4 conv to 16, 4x4/2 conv to 32, fc 256) on 160
frames (32 envs x t_max 5), as plain lax convolutions and a dot, summed to a scalar; each
figure is the median of --calls jitted calls, compile excluded. "grad conv1 kernel" also
pays the backward pass through conv2 (its input gradient), which "conv2 input" times alone.
It also counts what the compiled gradient of all parameters holds: XLA convolutions and
the library calls (YNNPACK, XNNPACK, oneDNN) a flag may route operations to.

--alternatives also times conv1's kernel gradient written as matmuls, with the same maths
in other rounding: the 8x8/4 windows concatenated (patches, as `network.conv_impl=
"patches"`) then one [160*400, 256]^T [160*400, 16] product; the same with the windows
stacked first ([256, 160*400], the long axis last); and space-to-depth (4x4 blocks to 64
channels, then the 2x2 block offsets as four products).
"""

from __future__ import annotations

import argparse
import re
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
  parser.add_argument("--alternatives", action="store_true", help="also time rewrites")
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
  if args.alternatives:
    grad_out = jnp.asarray(rng.random((args.batch, 20, 20, 16), np.float32))
    for name, fn in _kernel_grad_rewrites(args.batch).items():
      figures[f"conv1 kernel, {name}"] = median_ms(fn, frames, grad_out, calls=args.calls)
  print(f"{jax.devices()[0].device_kind}; jax {jax.__version__}; batch {args.batch}")
  for name, ms in figures.items():
    print(f"{name:>38}: {ms:7.1f} ms")
  hlo = jax.jit(jax.grad(net, (0, 1, 2))).lower(k1, k2, w, frames).compile().as_text()
  counts = {
    "convolutions": len(re.findall(r"convolution\(", hlo)),
    "YNNPACK fusions": hlo.count("__ynn_fusion"),
    "XNNPACK fusions": hlo.count("__xnn_fusion"),
    "oneDNN calls": hlo.lower().count("onednn"),
  }
  print("compiled gradient of all parameters: " + ", ".join(f"{v} {k}" for k, v in counts.items()))


def _kernel_grad_rewrites(batch: int) -> dict:
  """conv1's kernel gradient (8x8/4 on [batch, 84, 84, 4] -> 16) as matmuls, each
  (frames, grad_out [batch, 20, 20, 16]) -> [8, 8, 4, 16]."""

  def windows(x):  # the 64 strided windows in (i, j) order, each [batch, 20, 20, 4]
    return [x[:, i : i + 77 : 4, j : j + 77 : 4, :] for i in range(8) for j in range(8)]

  def patches(x, g):
    p = jnp.concatenate(windows(x), axis=-1).reshape(-1, 256)
    return (p.T @ g.reshape(-1, 16)).reshape(8, 8, 4, 16)

  def patches_long_axis_last(x, g):
    p = jnp.stack([jnp.moveaxis(v, -1, 0) for v in windows(x)]).reshape(256, -1)
    return (p @ g.reshape(-1, 16)).reshape(8, 8, 4, 16)

  def space_to_depth(x, g):
    blocks = x.reshape(batch, 21, 4, 21, 4, 4).transpose(0, 1, 3, 2, 4, 5)
    blocks = blocks.reshape(batch, 21, 21, 64)
    parts = [
      jnp.einsum("nhwc,nhwf->cf", blocks[:, bi : bi + 20, bj : bj + 20, :], g)
      for bi in range(2)
      for bj in range(2)
    ]
    grad = jnp.stack(parts).reshape(2, 2, 4, 4, 4, 16).transpose(0, 2, 1, 3, 4, 5)
    return grad.reshape(8, 8, 4, 16)

  return {
    "patches": patches,
    "patches, long axis last": patches_long_axis_last,
    "space-to-depth": space_to_depth,
  }


if __name__ == "__main__":
  main()
