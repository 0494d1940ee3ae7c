"""HTS-RL's runtime and latency analysis (Liu, Yeh, Schwing 2020, Sec. 4.2, Fig. 3).

Claim 1 (expected runtime of batch-synchronised collection). n envs collect K states and
synchronise every alpha steps, so there are K / (n alpha) synchronisations. Env j's time
for one interval, Y_j = X_1 + ... + X_alpha, is Gamma(alpha, rate beta) (e.g. alpha i.i.d.
Exp(beta) step times); a synchronisation waits for the slowest env, and every step also
costs the actor a constant c. With F^-1 the Gamma(alpha, beta) quantile function and
gamma_e the Euler-Mascheroni constant, extreme-value theory gives

  E[max_j Y_j] ~ F^-1(1 - 1/n) + (gamma_e / beta) (1 + (alpha - 1) / (beta F^-1(1 - 1/n)))
  E[T_total]   ~ K / (n alpha) * E[max_j Y_j] + K c / n.                           (Eq. 7)

Longer intervals (larger alpha) and smaller step-time variance (alpha / beta^2 per
interval, 1 / beta^2 per step) shorten the run: Fig. 3a/b.

Claim 2 (policy lag of asynchronous actor-learners, GA3C / IMPALA). n actors each send
data at Poisson rate lambda_0; the learner serves at exponential rate mu. The lag L is the
queue length of an M/M/1 queue with load n rho_0, rho_0 = lambda_0 / mu, so
P(L = j) = (n rho_0)^j (1 - n rho_0) and

  E[L] = n rho_0 / (1 - n rho_0)   for n rho_0 < 1 (infinite otherwise).

HTS-RL's lag is 1 whatever n: Fig. 3c.

`expected_runtime` and `expected_latency` are the formulas; `simulate_runtime` and
`simulate_latency` are Monte-Carlo simulations of the modelled systems to check them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats


def expected_max_gamma(n: int, alpha: float, beta: float) -> float:
  """The extreme-value approximation of E[max of n i.i.d. Gamma(alpha, rate beta)]."""
  if n < 2:
    return alpha / beta  # one env: no maximum to take, the mean
  q = stats.gamma.ppf(1.0 - 1.0 / n, a=alpha, scale=1.0 / beta)
  return q + (np.euler_gamma / beta) * (1.0 + (alpha - 1.0) / (beta * q))


def expected_runtime(n: int, num_states: int, alpha: float, beta: float, c: float = 0.0) -> float:
  """Claim 1, Eq. 7: expected time for n envs to collect `num_states` states, synchronising
  every `alpha` steps, with Exp(beta) step times and actor compute time c per step."""
  _check_positive(n=n, num_states=num_states, alpha=alpha, beta=beta)
  syncs = num_states / (n * alpha)
  return syncs * expected_max_gamma(n, alpha, beta) + num_states * c / n


class Simulation(NamedTuple):
  mean: float
  standard_error: float


def simulate_runtime(
  n: int,
  num_states: int,
  alpha: int,
  beta: float,
  c: float = 0.0,
  trials: int = 200,
  seed: int = 0,
  max_draws: int = 2**24,
) -> Simulation:
  """Monte-Carlo runtime of the system of Claim 1, step by step.

  Every env draws alpha Exp(beta) step times per synchronisation; a synchronisation lasts
  as long as its slowest env plus alpha * c; the run is ceil(K / (n alpha)) of them.
  Trials run in chunks of at most `max_draws` random numbers. Returns the mean total time
  over `trials` runs and its standard error.
  """
  _check_positive(n=n, num_states=num_states, alpha=alpha, beta=beta, trials=trials)
  rng = np.random.default_rng(seed)
  syncs = math.ceil(num_states / (n * alpha))
  per_trial = syncs * n * alpha
  chunk = max(1, max_draws // per_trial)
  totals = []
  for start in range(0, trials, chunk):
    size = min(chunk, trials - start)
    steps = rng.exponential(1.0 / beta, size=(size, syncs, n, int(alpha)))
    slowest = steps.sum(axis=-1).max(axis=-1)  # [size, syncs]
    totals.append(slowest.sum(axis=-1) + syncs * alpha * c)
  totals = np.concatenate(totals)
  return Simulation(float(totals.mean()), float(totals.std(ddof=1) / math.sqrt(trials)))


def expected_latency(n: int | np.ndarray, lambda0: float, mu: float) -> float | np.ndarray:
  """Claim 2: E[L] = n rho / (1 - n rho), rho = lambda0 / mu; inf where n rho >= 1."""
  load = np.asarray(n, float) * lambda0 / mu
  with np.errstate(divide="ignore"):
    latency = np.where(load < 1.0, load / np.maximum(1.0 - load, 0.0), np.inf)
  return float(latency) if np.ndim(latency) == 0 else latency


def simulate_latency(
  n: int,
  lambda0: float,
  mu: float,
  events: int = 4000,
  chains: int = 500,
  burn_in: int = 1000,
  seed: int = 0,
) -> Simulation:
  """Time-average queue length of the M/M/1 queue of Claim 2, by simulation.

  `chains` independent queues start empty and take `burn_in + events` jumps each (an
  arrival at total rate n * lambda0, or a departure at rate mu when the queue is not
  empty). The time average weights each visited state by its expected holding time
  1 / (total rate out of it). Returns the mean over chains and its standard error.
  """
  _check_positive(n=n, lambda0=lambda0, mu=mu, events=events, chains=chains)
  arrival = n * lambda0
  if arrival >= mu:
    return Simulation(math.inf, 0.0)
  rng = np.random.default_rng(seed)
  p_arrival = arrival / (arrival + mu)
  queue = np.zeros(chains, np.int64)
  weighted = np.zeros(chains)
  total_time = np.zeros(chains)
  for k in range(burn_in + events):
    empty = queue == 0
    if k >= burn_in:
      hold = np.where(empty, 1.0 / arrival, 1.0 / (arrival + mu))
      weighted += queue * hold
      total_time += hold
    up = empty | (rng.random(chains) < p_arrival)
    queue = queue + np.where(up, 1, -1)
  per_chain = weighted / total_time
  return Simulation(float(per_chain.mean()), float(per_chain.std(ddof=1) / math.sqrt(chains)))


def _check_positive(**values: float) -> None:
  for name, value in values.items():
    if not value > 0:
      raise ValueError(f"{name} must be > 0, got {value!r}.")
