"""Per-device optimizer-state memory, replicated vs sharded (ZeRO-1), in one run.

  python -m benchmarks.sharded_optimizer --devices=8 --learners=8,16,64
  python -m benchmarks.sharded_optimizer --config=ba3c_breakout --learners=64 --seconds=5

For each learner count n it builds the config's training state twice, with
optimizer.sharded_state False and True, and sums the bytes that each device actually holds
of the optimizer-state arrays (`addressable_shards`). Replicated, every learner holds the
whole state (L = n / D learners per device: L copies); sharded, every learner holds 1/n of
it, so the per-device figure falls by n. With --seconds > 0 it also times the training step
of both (env steps/s; compile excluded), and checks that both give the same parameters
after one call.
"""

from __future__ import annotations

import os
import sys

# --devices must act before jax is imported.
for _arg in sys.argv:
  if _arg.startswith("--devices="):
    _flag = f"--xla_force_host_platform_device_count={_arg.split('=', 1)[1]}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

import jax
import numpy as np
from absl import app, flags

import galax
from benchmarks import measure
from galax import config as config_lib
from galax.config import cli
from galax.parallel.layout import to_host

_CONFIG = flags.DEFINE_string("config", "ba3c_breakout", "Config name or file.")
_LEARNERS = flags.DEFINE_list("learners", ["8", "64"], "Learner counts n.")
_ENVS = flags.DEFINE_integer(
  "envs_per_learner", 1, "Envs per learner (memory does not depend on it; keep it small)."
)
_DEVICES = flags.DEFINE_integer("devices", 0, "Virtual CPU devices (0: the real ones).")
_SECONDS = flags.DEFINE_float("seconds", 0.0, "Also time the step for this long (0: skip).")


def bytes_per_device(tree) -> dict[str, int]:
  """Bytes of `tree`'s arrays held by each device (its addressable shards)."""
  held: dict[str, int] = {}
  for leaf in jax.tree.leaves(tree):
    for shard in leaf.addressable_shards:
      held[str(shard.device)] = held.get(str(shard.device), 0) + shard.data.nbytes
  return held


def measure_one(learners: int, sharded: bool) -> dict:
  config = config_lib.load(
    _CONFIG.value,
    num_learners=learners,
    envs_per_learner=_ENVS.value,
    combine="allreduce",
    updates_per_call=1,
  )
  config.optimizer.sharded_state = sharded
  config_lib.validate(config)
  algorithm = galax.make_algorithm(config)
  state = algorithm.init()
  held = bytes_per_device(state.opt_state)
  num_params = sum(int(np.prod(x.shape[1:])) for x in jax.tree.leaves(state.params))
  row = dict(
    learners=learners,
    devices=algorithm.layout.num_devices,
    per_device=algorithm.layout.learners_per_device,
    params=num_params,
    max_bytes=max(held.values()),
    min_bytes=min(held.values()),
  )
  if _SECONDS.value > 0:
    state, _ = algorithm.step(state)
    row["params_after_one_call"] = to_host(state.params)
    steps = algorithm.updates_per_call * algorithm.env_steps_per_update
    sps, compile_s, _ = measure.steps_per_second(
      lambda s: algorithm.step(s)[0], state, steps, _SECONDS.value
    )
    row.update(steps_per_second=sps, compile_s=compile_s)
  algorithm.env.close()
  return row


def main(argv):
  del argv
  info = measure.machine()
  print(
    f"device: {info['device']}; cpu: {info['cpu']}; jax {info['jax']}; config {_CONFIG.value}",
    flush=True,
  )
  rates = "  steps/s repl / shard" if _SECONDS.value else ""
  print(
    f"{'learners':>8} {'devices':>7} {'L/dev':>5} {'params':>9} {'replicated B/dev':>17} "
    f"{'sharded B/dev':>14} {'ratio':>7}" + rates
  )
  for n in map(int, _LEARNERS.value):
    replicated, sharded = measure_one(n, False), measure_one(n, True)
    ratio = replicated["max_bytes"] / sharded["max_bytes"]
    line = (
      f"{n:>8} {replicated['devices']:>7} {replicated['per_device']:>5} "
      f"{replicated['params']:>9} {replicated['max_bytes']:>17,} "
      f"{sharded['max_bytes']:>14,} {ratio:>7.2f}"
    )
    if _SECONDS.value:
      same = all(
        np.allclose(a, b, rtol=1e-4, atol=1e-6)
        for a, b in zip(
          jax.tree.leaves(replicated["params_after_one_call"]),
          jax.tree.leaves(sharded["params_after_one_call"]),
        )
      )
      line += (
        f"  {replicated['steps_per_second']:.0f} / {sharded['steps_per_second']:.0f}"
        f" (same params after one update: {same})"
      )
    print(line, flush=True)


if __name__ == "__main__":
  cli.answer_help(sys.argv, sys.modules[__name__])  # --help: exit 0, as galax's commands
  app.run(main)
