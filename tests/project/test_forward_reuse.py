"""benchmarks/forward_reuse.py: A2C's gradient from acting's saved VJPs equals a2c_grads'
(a forward pass over the whole trajectory) up to float rounding; a wrong pairing of steps
does not."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import forward_reuse  # an option measured there, not wired into galax
from galax.algorithms.a2c import a2c_grads
from galax.core import losses, networks
from galax.core.returns import ReturnSettings, compute_targets
from galax.core.rollout import Trajectory
from galax.envs import EnvSpec

T, B = 4, 3
RETURNS = ReturnSettings(gamma=0.99, kind="nstep", gae_lambda=0.95)
LOSS = losses.LossSettings(entropy_coef=0.02, value_coef=0.25, sum_over_time=True)


def _spec(name):
  if name == "mlp":
    return EnvSpec("test", "test", (6,), np.dtype(np.float32), 5, "flat", 100)
  return EnvSpec("test", "test", (4, 20, 20), np.dtype(np.uint8), 5, "CHW", 100)  # archnips fits


def _obs(spec, rng):
  shape = (T, B, *spec.obs_shape)
  if spec.obs_dtype == np.uint8:
    return jnp.asarray(rng.integers(0, 256, shape, np.uint8))
  return jnp.asarray(rng.normal(size=shape).astype(np.float32))


def _acted(name, seed=0):
  """A network, its params and a trajectory acted with `forward_with_vjp` per step (a
  `lax.scan`, as a rollout runs), with the stacked VJPs."""
  spec = _spec(name)
  network = networks.make_network(name, spec, init_scheme="paac")
  params = networks.init_params(network, spec, jax.random.PRNGKey(seed))
  rng = np.random.default_rng(seed)
  obs = _obs(spec, rng)

  def step(_, o):
    return None, forward_reuse.forward_with_vjp(network.apply, params, o)

  _, ((logits, values), vjps) = jax.lax.scan(step, None, obs)
  valid = jnp.asarray(rng.random((T, B)) > 0.2)
  traj = Trajectory(
    obs=obs,
    actions=jnp.asarray(rng.integers(0, spec.num_actions, (T, B)), jnp.int32),
    rewards=jnp.asarray(rng.integers(-1, 2, (T, B)).astype(np.float32)),
    terminated=jnp.asarray(rng.random((T, B)) > 0.8),
    truncated=jnp.zeros((T, B), bool),
    valid=valid,
    behaviour_logits=logits,
    values=jnp.concatenate([values, jnp.asarray(rng.normal(size=(1, B)), jnp.float32)]),
    episode_over=jnp.zeros((T, B), bool),
    episode_return=jnp.zeros((T, B), jnp.float32),
    episode_length=jnp.zeros((T, B), jnp.int32),
  )
  return network, params, traj, vjps


def _deviation(got, want) -> float:
  """The largest leafwise max |got - want| / max |want|."""
  return max(
    float(jnp.max(jnp.abs(g - w)) / jnp.max(jnp.abs(w)))
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want))
  )


def _reused(traj, vjps, cotangent_order=slice(None)):
  targets = compute_targets(traj, RETURNS)
  cotangents, terms = forward_reuse.output_cotangents(
    traj.behaviour_logits,
    traj.values[:T],
    traj.actions,
    targets,
    traj.valid.astype(jnp.float32),
    LOSS,
  )
  cotangents = jax.tree.map(lambda c: c[cotangent_order], cotangents)
  return forward_reuse.grads_from_vjps(vjps, cotangents), terms


@pytest.mark.parametrize("name", ["mlp", "archnips"])
def test_grads_from_saved_vjps_match_a2c_grads(name):
  network, params, traj, vjps = _acted(name)
  want, want_terms = jax.jit(lambda p, t: a2c_grads(network.apply, RETURNS, LOSS, p, t))(
    params, traj
  )
  got, terms = jax.jit(_reused)(traj, vjps)
  assert _deviation(got, want) < 1e-5
  np.testing.assert_allclose(terms.total, want_terms.total, rtol=1e-5)
  # the same check fails on a wrong pairing of steps and cotangents (steps reversed)
  wrong, _ = jax.jit(lambda t, v: _reused(t, v, slice(None, None, -1)))(traj, vjps)
  assert _deviation(wrong, want) > 1e-2


def test_a2c_grads_from_vjps_is_the_two_steps():
  network, params, traj, vjps = _acted("mlp", seed=1)
  targets = compute_targets(traj, RETURNS)
  mask = traj.valid.astype(jnp.float32)
  grads, terms = forward_reuse.a2c_grads_from_vjps(
    vjps, traj.behaviour_logits, traj.values[:T], traj.actions, targets, mask, LOSS
  )
  want, want_terms = _reused(traj, vjps)
  assert _deviation(grads, want) == 0.0
  assert float(terms.total) == float(want_terms.total)


def test_forward_with_vjp_outputs_are_apply_outputs():
  spec = _spec("archnips")
  network = networks.make_network("archnips", spec, init_scheme="paac")
  params = networks.init_params(network, spec, jax.random.PRNGKey(2))
  obs = _obs(spec, np.random.default_rng(2))[0]
  (logits, values), _ = jax.jit(forward_reuse.forward_with_vjp, static_argnums=0)(
    network.apply, params, obs
  )
  want_logits, want_values = jax.jit(network.apply)(params, obs)
  np.testing.assert_array_equal(logits, want_logits)
  np.testing.assert_array_equal(values, want_values)
