"""HTS-RL Claims 1 and 2: the formulas against simulations of the systems they model.

Stated tolerances (measured over 20 simulation seeds of 200+ trials each): Claim 1's
extreme-value approximation is within 3% of the simulated runtime for n >= 16 envs (its
systematic gap is <= 1.5%) and within 7% for n = 4 (the Gumbel limit needs many envs);
Claim 2 is exact for the M/M/1 queue, so the simulation agrees to within 3% or 4
standard errors for loads n rho <= 0.75.
"""

import math

import numpy as np
import pytest

from galax.results import hts_theory as hts


@pytest.mark.parametrize("alpha", [1, 4, 32])
@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_claim1_formula_matches_simulation_for_16_envs(alpha, beta):
  n, states = 16, 16 * 64 * 4
  formula = hts.expected_runtime(n, states, alpha, beta)
  sim = hts.simulate_runtime(n, states, alpha, beta, trials=200, seed=alpha)
  assert abs(formula - sim.mean) / sim.mean < 0.03, (formula, sim)


def test_claim1_tolerance_with_few_envs():
  formula = hts.expected_runtime(4, 4 * 8 * 64, 8, 1.0)
  sim = hts.simulate_runtime(4, 4 * 8 * 64, 8, 1.0, trials=300)
  assert abs(formula - sim.mean) / sim.mean < 0.07


def test_claim1_hand_computed_cases():
  # alpha = 1: F^-1(1 - 1/n) = ln(n) / beta, so E[max] = (ln n + gamma_e) / beta.
  n, beta = 16, 2.0
  assert hts.expected_max_gamma(n, 1, beta) == pytest.approx((math.log(n) + np.euler_gamma) / beta)
  # K / (n alpha) synchronisations, plus K c / n of actor compute.
  assert hts.expected_runtime(n, 1600, 1, beta, c=0.5) == pytest.approx(
    100 * (math.log(n) + np.euler_gamma) / beta + 1600 * 0.5 / n
  )
  # One env never waits for another: runtime is K steps of mean 1 / beta.
  assert hts.expected_runtime(1, 100, 4, 2.0) == pytest.approx(50.0)
  assert hts.simulate_runtime(1, 100, 4, 2.0, trials=400).mean == pytest.approx(50.0, rel=0.03)


def test_claim1_shape_of_fig3():
  n, states = 16, 16 * 512
  # Fig. 3a: more step-time variance (smaller beta) -> longer runtime.
  by_variance = [hts.expected_runtime(n, states, 4, b) for b in (4.0, 2.0, 1.0, 0.5)]
  assert np.all(np.diff(by_variance) > 0)
  # Fig. 3b: longer synchronisation intervals -> shorter runtime, towards K/n * E[step].
  by_alpha = [hts.expected_runtime(n, states, a, 2.0) for a in (1, 4, 16, 64, 512)]
  assert np.all(np.diff(by_alpha) < 0)
  assert by_alpha[-1] > states / n / 2.0


def test_claim2_formula_and_simulation():
  lambda0, mu = 100.0, 4000.0  # the paper's GFootball numbers
  np.testing.assert_allclose(
    hts.expected_latency(np.array([1, 10, 20, 30]), lambda0, mu), [1 / 39, 1 / 3, 1.0, 3.0]
  )
  for n in (4, 20, 30):
    sim = hts.simulate_latency(n, lambda0, mu, events=3000, chains=400, seed=n)
    expected = hts.expected_latency(n, lambda0, mu)
    assert abs(sim.mean - expected) < max(0.03 * expected, 4 * sim.standard_error), (n, sim)


def test_claim2_unstable_queue():
  assert hts.expected_latency(40, 100.0, 4000.0) == math.inf
  assert hts.simulate_latency(50, 100.0, 4000.0).mean == math.inf


def test_bad_arguments():
  with pytest.raises(ValueError, match="alpha must be > 0"):
    hts.expected_runtime(4, 100, 0, 1.0)
  with pytest.raises(ValueError, match="beta must be > 0"):
    hts.simulate_runtime(4, 100, 2, -1.0)
