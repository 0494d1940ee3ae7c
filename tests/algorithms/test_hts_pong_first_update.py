"""HTS-A2C's delayed path on real Pong at B-fast's settings ends its first learning segment
exactly where A2C ends its first update.

B-fast (docs/results/atari_gala_hts) runs pong_fast (archnips, 16 envs, t_max 5, RMSProp,
clip 0.5) with HTS-A2C's section (alpha 5, 5 micro-batches, 1 actor group): on a CPU the
plan hosts the learner's units inline between the env steps, the path the CartPole tests
(isolated units) do not take. HTS-A2C keeps theta_1 = theta_0 (segment 0 has no D_{-1}),
collects D_1 with theta_0 while it learns from D_0 at theta_{k-1} = theta_0, so
theta_2 = theta_0 - step(grad L(theta_0; D_0)): A2C's theta_1, whose D_0 the same seed
collects with the same keys. Any fault in the storage's round trip, the windowed targets,
the hosted units or their accumulation shows here as a different theta_2.
"""

import jax
import numpy as np
import pytest

from galax.config import load, make_algorithm, validate

ENVS = 4  # pong_fast's 16 would only make the test slower


def _states(algorithm: str, calls: int):
  overrides = dict(envs_per_learner=ENVS, updates_per_call=1, algorithm=algorithm)
  if algorithm == "hts_a2c":
    overrides.update(hts__alpha=5, hts__delayed=True, hts__microbatches=5, hts__num_actors=1)
  algo = make_algorithm(validate(load("pong_fast", **overrides)))
  try:
    assert algo.setup.plan.unit_call == "inline" or algorithm == "a2c"
    state, states = algo.init(), []
    states.append(jax.tree.map(np.asarray, state))
    for _ in range(calls):
      state, _ = algo.step(state)
      states.append(jax.tree.map(np.asarray, state))  # host copies: `step` donates
    return states
  finally:
    algo.env.close()


@pytest.mark.slow
def test_hts_a2c_second_segment_is_a2c_first_update_on_pong():
  hts, a2c = _states("hts_a2c", 3), _states("a2c", 1)
  leaves = lambda tree: jax.tree.leaves(tree)
  for x, y in zip(leaves(hts[1].params), leaves(hts[0].params)):
    np.testing.assert_array_equal(x, y)  # theta_1 = theta_0
  moved = 0
  for x, y, start in zip(leaves(hts[2].params), leaves(a2c[1].params), leaves(a2c[0].params)):
    np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7)
    moved += int(np.any(y != start))
  assert moved == len(leaves(a2c[0].params))  # A2C's first update moved every tensor
  for x, y in zip(leaves(hts[2].opt_state), leaves(a2c[1].opt_state)):
    np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-9)
  # The third segment learns too (from D_1, at theta_1 = theta_0).
  assert any(
    not np.allclose(x, y, rtol=1e-5, atol=1e-7)
    for x, y in zip(leaves(hts[3].params), leaves(hts[2].params))
  )
