"""Pong-v5 still learns with configs/pong_fast.py (issue 32, item 6; slow tier).

From scratch the policy sits on Pong's floor (-20.5) for about 0.8M agent steps, about
10 minutes on a 2-core CPU, too long for the suite. So the test starts where a real run
(seed 1 of configs/pong_fast.py) had just left the floor: its parameters and RMSProp state
at that step, committed in tests/data/ (params in float16, written by `python
tests/learning/test_pong_learning.py --export <orbax step dir>`). From there it trains
`STEPS` agent steps with pong_fast's settings on fresh envs, and every game finished in
that window must average above `THRESHOLD`.

What fails it: a change to the conv torso or the observation path (the saved weights no
longer see what they learned on: games fall to about -21 at once), to the envpool adapter
(rewards, episode ends, auto-reset), to the loss or optimizer (a wrong sign, scale or
state convention unlearns the policy within the window). What does not: a slowdown of
learning within the noise of one short window.
"""

import dataclasses
import os
import sys

import numpy as np
import pytest

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "pong_fast_seed1.npz")
STEPS = 64_000  # 800 updates of 16 envs x t_max 5; about a minute on 2 cores
THRESHOLD = -17.0  # the floor is -20.5; a broken update gives about -21


def _paths_and_leaves(tree):
  import jax

  flat, _ = jax.tree_util.tree_flatten_with_path(tree)
  return [(jax.tree_util.keystr(path), leaf) for path, leaf in flat]


def _load_into(state):
  """`state` with params and opt_state from DATA (checked leaf by leaf: same paths and
  shapes)."""
  import jax
  import jax.numpy as jnp

  saved = np.load(DATA)
  trees = {}
  for name in ("params", "opt_state"):
    tree = getattr(state, name)
    leaves = []
    for path, leaf in _paths_and_leaves(tree):
      value = saved[f"{name}{path}"]
      assert value.shape == leaf.shape, (name, path, value.shape, leaf.shape)
      leaves.append(jax.device_put(jnp.asarray(value, leaf.dtype), leaf.sharding))
    trees[name] = jax.tree.unflatten(jax.tree.structure(tree), leaves)
  return state.replace(**trees), float(saved["running_mean"]), int(saved["env_steps"])


@pytest.mark.slow
def test_pong_fast_keeps_learning_from_where_a_run_left_the_floor(
  tmp_path, monkeypatch, optimized_xla
):
  import galax.training.loop as train_lib
  from galax.config import load as load_config

  config = load_config(
    "pong_fast",
    total_env_steps=STEPS,
    target_return=0.0,
    log_every_steps=STEPS,
    checkpoint_every_steps=0,
    tensorboard=False,
    updates_per_call=50,
  )
  real_make, start = train_lib.make_algorithm, {}

  def make(config):
    algorithm = real_make(config)

    def init():
      state, start["mean"], start["step"] = _load_into(algorithm.init())
      return state

    return dataclasses.replace(algorithm, init=init)

  monkeypatch.setattr(train_lib, "make_algorithm", make)
  result = train_lib.train(config, log=lambda _: None)
  said = (
    f"{result.episodes} games finished in {STEPS} steps from step {start['step']} of a "
    f"pong_fast run (whose running mean was {start['mean']:.2f}) averaged "
    f"{result.mean_return:.2f}"
  )
  print(said)
  assert result.episodes >= 16, said  # games last about 2,000 agent steps here
  assert result.mean_return > THRESHOLD, (
    f"games finished in {STEPS} steps from step {start['step']} of a pong_fast run "
    f"(whose running mean was {start['mean']:.2f}) averaged {result.mean_return:.2f}"
  )


def export(step_dir: str) -> None:
  """Writes DATA from a pong_fast orbax checkpoint step directory."""
  import json

  from galax.config import load as load_config
  from galax.config import make_algorithm
  from galax.parallel.layout import to_host
  from galax.runtime import checkpoint as ckpt_lib

  step = int(os.path.basename(os.path.normpath(step_dir)))
  algorithm = make_algorithm(load_config("pong_fast"))
  checkpointer = ckpt_lib.Checkpointer(os.path.dirname(os.path.normpath(step_dir)))
  state, meta = checkpointer.restore(algorithm.init())
  assert int(meta["env_steps"]) == step, (meta["env_steps"], step)
  returns = json.loads(json.dumps(meta["tracker"]))["returns"]
  # Params in float16; the RMSProp state stays float32 (its small squares would flush to
  # zero in float16, and a zero square divides the gradient by eps alone).
  arrays = {
    f"{name}{path}": np.asarray(leaf, np.float16 if name == "params" else np.float32)
    for name in ("params", "opt_state")
    for path, leaf in _paths_and_leaves(to_host(getattr(state, name)))
  }
  np.savez_compressed(DATA, running_mean=np.float32(np.mean(returns)), env_steps=step, **arrays)
  algorithm.env.close()
  print(
    f"wrote {DATA}: step {step}, running mean {np.mean(returns):.2f} over "
    f"{len(returns)} games, {os.path.getsize(DATA) / 1e6:.1f} MB"
  )


if __name__ == "__main__":
  if sys.argv[1:2] == ["--export"]:
    export(sys.argv[2])
