"""One pong_paac learner update on this CPU: its pieces, and the update with acting's forward
reused (galax/core/forward_reuse.py) against the update as galax runs it now.

  python -m benchmarks.learner_update_cost               # pieces, then before / after
  python -m benchmarks.learner_update_cost --rounds=61 --no-pieces

The shape is configs/pong_paac.py's: archnips (paac init), 32 envs x t_max 5 = 160 uint8
frames [4, 84, 84], RMSProp (TF form) after global-norm clipping at 3.0, the A2C loss
summed over time. The trajectory is synthetic (random frames, actions, rewards): no env is
stepped, so the figures are the network's and the optimizer's work alone.

Pieces (`--pieces`, on by default): each layer's forward and gradients alone at 160 frames
(plain lax convolutions and dots, NHWC), the network's forward, its forward + backward
(`jax.grad`), its backward alone from saved residuals (`jax.vjp`'s, computed outside the
timed call), and the optimizer step.

Before / after: one jitted program each, both acting (the policy's forward over the 5
steps of 32 frames, a `lax.scan` as `rollout` runs it) then learning:
  before  acting's forward; then `a2c.a2c_grads` over the trajectory as pong_paac's plan
          runs it on CPU (one learner vmapped, 2 gradient chunks of 80 frames); clip and
          RMSProp (`make_replicated_optimizer`);
  after   acting's forward through `forward_reuse.forward_with_vjp`, keeping each step's
          VJP; then `forward_reuse.a2c_grads_from_vjps` (no forward pass); the same
          optimizer step.
Every call is timed alone; the variants alternate call by call (`--rounds` rounds), and
the figures are medians of wall and process CPU time, and the median of the per-round
ratios to the first row (this machine may be shared: the ratios, measured side by side,
are the figures to read). The first lines print how far the after-update's parameters
lie from the before-update's (float rounding: max |after - before| / max |before - initial|).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from benchmarks import forward_reuse
from galax import config as config_lib
from galax.algorithms.a2c import a2c_grads
from galax.core import networks
from galax.core.optimizers import make_replicated_optimizer, make_schedule
from galax.core.returns import compute_targets
from galax.core.rollout import Trajectory
from galax.envs import EnvSpec

T, B, CHUNKS = 5, 32, 2  # pong_paac: t_max 5, 32 envs; its CPU plan's grad_chunks
SPEC = EnvSpec("Pong-v5", "atari", (4, 84, 84), np.dtype(np.uint8), 6, "CHW", 27_000)
NHWC = ("NHWC", "HWIO", "NHWC")


def pong_paac():
  """(network, returns, loss, optimizer) of configs/pong_paac.py."""
  c = config_lib.load("pong_paac")
  run = config_lib.run_settings(c)
  opt, returns, loss = run.optimizer, run.returns, run.loss
  network = networks.make_network(c.network.name, SPEC, init_scheme=c.network.init)
  schedule = make_schedule(opt, B, 1, c.total_env_steps // (B * T))
  return network, returns, loss, make_replicated_optimizer(opt, schedule)


def synthetic_traj(seed: int = 0) -> Trajectory:
  """A [T, B] trajectory of random frames, actions and rewards (outputs filled by acting)."""
  r = np.random.default_rng(seed)
  zeros = jnp.zeros((T, B), bool)
  return Trajectory(
    obs=jnp.asarray(r.integers(0, 256, (T, B, *SPEC.obs_shape), np.uint8)),
    actions=jnp.asarray(r.integers(0, SPEC.num_actions, (T, B)), jnp.int32),
    rewards=jnp.asarray(r.integers(-1, 2, (T, B)).astype(np.float32)),
    terminated=zeros,
    truncated=zeros,
    valid=jnp.ones((T, B), bool),
    behaviour_logits=jnp.zeros((T, B, SPEC.num_actions)),
    values=jnp.asarray(r.normal(size=(T + 1, B)).astype(np.float32)),
    episode_over=zeros,
    episode_return=jnp.zeros((T, B)),
    episode_length=jnp.zeros((T, B), jnp.int32),
  )


def updates(network, returns, loss, optimizer):
  """name -> update(params [1, ...], opt_state, traj) -> (params, opt_state)."""

  def finish(grads, opt_state, params):
    grads = jax.tree.map(lambda g: g[None], grads)
    return optimizer.step(optimizer.clip_each(grads), opt_state, params)[:2]

  def acted(traj, outputs):
    logits, values = outputs
    return traj._replace(behaviour_logits=logits, values=traj.values.at[:T].set(values))

  def before(params, opt_state, traj):
    p = jax.tree.map(lambda x: x[0], params)
    outputs = lax.map(lambda o: network.apply(p, o), traj.obs)
    traj = acted(traj, outputs)
    grads, _ = jax.vmap(lambda q, t: a2c_grads(network.apply, returns, loss, q, t, CHUNKS))(
      params, jax.tree.map(lambda x: x[None], traj)
    )
    return optimizer.step(optimizer.clip_each(grads), opt_state, params)[:2]

  def after(params, opt_state, traj):
    p = jax.tree.map(lambda x: x[0], params)
    outputs, vjps = lax.map(lambda o: forward_reuse.forward_with_vjp(network.apply, p, o), traj.obs)
    traj = acted(traj, outputs)
    grads, _ = forward_reuse.a2c_grads_from_vjps(
      vjps,
      *outputs,
      traj.actions,
      compute_targets(traj, returns),
      traj.valid.astype(jnp.float32),
      loss,
    )
    return finish(grads, opt_state, params)

  return {"before: forward again (now)": before, "after: acting's forward reused": after}


def layer_pieces(rng: np.random.Generator) -> dict:
  """name -> (fn, args): archnips's layers alone at T B frames (plain lax ops)."""
  n = T * B

  def rand(*shape):
    return jnp.asarray(rng.normal(0, 0.1, shape).astype(np.float32))

  x = jnp.asarray(rng.random((n, 84, 84, 4), np.float32))
  k1, k2, w3 = rand(8, 8, 4, 16), rand(4, 4, 16, 32), rand(2592, 256)
  h1, g1, g2, h3, g3 = (
    rand(n, 20, 20, 16),
    rand(n, 20, 20, 16),
    rand(n, 9, 9, 32),
    rand(n, 2592),
    rand(n, 256),
  )

  def c1(x, k):
    return lax.conv_general_dilated(x, k, (4, 4), "VALID", dimension_numbers=NHWC)

  def c2(x, k):
    return lax.conv_general_dilated(x, k, (2, 2), "VALID", dimension_numbers=NHWC)

  def kernel_grad(conv, x, k, g):
    return jax.vjp(lambda kk: conv(x, kk), k)[1](g)[0]

  return {
    "conv1 forward": (c1, (x, k1)),
    "conv1 kernel gradient": (lambda x, g: kernel_grad(c1, x, k1, g), (x, g1)),
    "conv2 forward": (c2, (h1, k2)),
    "conv2 kernel gradient": (lambda h, g: kernel_grad(c2, h, k2, g), (h1, g2)),
    "conv2 input gradient": (lambda k, g: jax.vjp(lambda h: c2(h, k), h1)[1](g)[0], (k2, g2)),
    "fc forward": (lambda h, w: h @ w, (h3, w3)),
    "fc kernel gradient": (lambda h, g: h.T @ g, (h3, g3)),
    "fc input gradient": (lambda g, w: g @ w.T, (g3, w3)),
  }


def network_pieces(network, optimizer, params, opt_state, obs) -> dict:
  """name -> (fn, args): the whole network's passes over the T B frames, the optimizer."""
  frames = obs.reshape(T * B, *SPEC.obs_shape)

  def objective(outputs):
    logits, values = outputs
    return jax.nn.log_softmax(logits)[:, 0].sum() + jnp.square(values).sum()

  outputs, vjp = jax.jit(lambda p, o: forward_reuse.forward_with_vjp(network.apply, p, o))(
    params, frames
  )
  cotangents = jax.grad(objective)(outputs)
  return {
    "network forward": (network.apply, (params, frames)),
    "network forward + backward": (
      lambda p, o: jax.grad(lambda q: objective(network.apply(q, o)))(p),
      (params, frames),
    ),
    "network backward from residuals": (lambda f, c: f(c), (vjp, cotangents)),
    "optimizer: clip + RMSProp": (
      lambda g, s, p: optimizer.step(g, s, p)[:2],
      (jax.tree.map(lambda x: x[None], params), opt_state, jax.tree.map(lambda x: x[None], params)),
    ),
  }


def timed(fns: dict, rounds: int) -> dict:
  """name -> (wall ms list, cpu ms list): single calls, alternating names, after warm-up."""
  jitted = {k: (jax.jit(f), a) for k, (f, a) in fns.items()}
  for f, a in jitted.values():
    jax.block_until_ready(f(*a))
    jax.block_until_ready(f(*a))
  times = {k: ([], []) for k in jitted}
  for _ in range(rounds):
    for k, (f, a) in jitted.items():
      c0, t0 = time.process_time(), time.perf_counter()
      jax.block_until_ready(f(*a))
      times[k][0].append((time.perf_counter() - t0) * 1e3)
      times[k][1].append((time.process_time() - c0) * 1e3)
  return times


def report(times: dict) -> None:
  """Medians, and the median per-round ratio to the first name."""
  first = next(iter(times.values()))
  print(f"| {'what':<34} | wall ms | cpu ms | wall / first | cpu / first |")
  print(f"| {'---':<34} | ---: | ---: | ---: | ---: |")
  for name, (wall, cpu) in times.items():
    ratios = [
      statistics.median(a / b for a, b in zip(x, y)) for x, y in ((wall, first[0]), (cpu, first[1]))
    ]
    print(
      f"| {name:<34} | {statistics.median(wall):7.2f} | {statistics.median(cpu):6.2f} "
      f"| {ratios[0]:12.3f} | {ratios[1]:11.3f} |",
      flush=True,
    )


def deviation(new, old, initial) -> float:
  """max |new - old| / max |old - initial| over all parameters (the golden tests' measure)."""
  num = max(
    float(jnp.max(jnp.abs(a - b))) for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(old))
  )
  den = max(
    float(jnp.max(jnp.abs(b - c))) for b, c in zip(jax.tree.leaves(old), jax.tree.leaves(initial))
  )
  return num / den


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=31, help="calls of each variant")
  parser.add_argument("--pieces", action=argparse.BooleanOptionalAction, default=True)
  args = parser.parse_args()
  network, returns, loss, optimizer = pong_paac()
  params = networks.init_params(network, SPEC, jax.random.PRNGKey(0))
  block = jax.tree.map(lambda x: x[None], params)
  opt_state = jax.vmap(optimizer.init)(block)
  traj = synthetic_traj()
  when = time.strftime("%Y-%m-%d %H:%M")
  print(f"{platform.node()}: {jax.devices()[0].device_kind}, jax {jax.__version__}, {when}")
  if args.pieces:
    print(f"\npieces of one update ({T * B} frames), alone:")
    pieces = layer_pieces(np.random.default_rng(1))
    pieces.update(network_pieces(network, optimizer, params, opt_state, traj.obs))
    report(timed(pieces, args.rounds))
  fns = {
    k: (u, (block, opt_state, traj)) for k, u in updates(network, returns, loss, optimizer).items()
  }
  results = [jax.jit(f)(*a)[0] for f, a in fns.values()]
  dev = deviation(results[1], results[0], block)
  print(f"\nafter vs before, updated parameters: deviation {dev:.2e}")
  print(f"one update (acting's forward over {T} x {B} frames, then learning):")
  report(timed(fns, args.rounds))


if __name__ == "__main__":
  main()
