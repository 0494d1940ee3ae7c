"""Several learners on virtual CPU devices: each call waits for its input state before it
launches (galax/framework/update.py `_settles`). Without the wait, a collective program
launched while one device still had an earlier program queued hung at XLA:CPU's rendezvous
on a busy machine and was aborted after 40 s (gala_a2c beside CPU hogs: 5 of 15 starts hung
without the wait, 0 of 6 with it)."""

import jax
from run_helpers import tiny_config

from galax.config import make_algorithm
from galax.framework import update


def _waits_recorded(monkeypatch, **overrides):
  waited = []
  wait = jax.block_until_ready
  monkeypatch.setattr(jax, "block_until_ready", lambda x: (waited.append(1), wait(x))[1])
  algorithm = make_algorithm(tiny_config(**overrides))
  try:
    state = algorithm.init()
    waited.clear()
    state, metrics = algorithm.step(state)
    jax.tree.map(lambda x: x.block_until_ready(), (state, metrics))
  finally:
    algorithm.env.close()
  return waited, algorithm


def test_gossip_on_several_cpu_devices_waits_before_each_launch(monkeypatch):
  waited, algorithm = _waits_recorded(
    monkeypatch, num_learners=4, combine="gossip", updates_per_call=3
  )
  assert algorithm.step is not None and len(jax.devices()) > 1
  assert len(waited) >= 1


def test_one_device_launches_without_waiting(monkeypatch):
  waited, _ = _waits_recorded(monkeypatch, num_devices=1)
  assert waited == []


def test_the_waiting_step_still_lowers():
  mesh = jax.sharding.Mesh(jax.devices()[:2], ("x",))
  assert update._settles(mesh)
  assert not update._settles(jax.sharding.Mesh(jax.devices()[:1], ("x",)))
  settled = update._Settled(jax.jit(lambda s: s + 1))
  assert settled.lower(1.0).compile()(2.0) == 3.0
  assert settled(1.0) == 2.0
