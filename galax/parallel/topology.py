"""Gossip topologies: who receives from whom, as mixing matrices (rows = receivers).

A topology of n learners is a set of in-peer offsets ("shifts"): learner i receives from
learners (i - s) mod n for every shift s. Each learner weights itself and its in-peers
equally (GALA, eq. (6) and Appendix C.2):

    x_i <- (x_i + sum_{j in N_in(i)} x_j) / (1 + |N_in|)

  ring          shifts 1..k (a directed k-peer ring; k = 1 is GALA's default, weights 1/2)
  exponential   shifts 2^0, 2^1, ... < n (every learner hears from learners 1, 2, 4, ... back)
  full          shifts 1..n-1 (exact averaging, P = 11^T / n)

All are circulant, hence doubly stochastic: gossip preserves the learners' average. The
shifts are what the device implementation needs (`lax.ppermute` along the learner ring);
the mixing matrix is the reference that tests and the Prop. 1 bound use.

Message delay tau (a learner mixes its in-peers' parameters from tau updates ago) is
analysed with the augmented graph of the paper's Appendix B (Hadjicostis & Charalambous
2013): tau virtual nodes per learner hold its messages in transit
(`augmented_mixing_matrix`).

Prop. 1 bound. Write y^k = x^k + u^k for the parameters after the local optimizer step
(u^k: the step's update) and Pi = I - 11^T / n for centering (||Pi X||_F is the distance
of the learners from their average, the paper's ||X - Xbar||). Gossip is X^{k+1} = P Y^k,
eq. (7). For a row-stochastic P, Pi P Pi = Pi P, so Pi X^{k+1} = (Pi P Pi)(Pi X^k + Pi U^k)
and, with identical initial parameters (Pi X^0 = 0),

    Pi X^{k+1} = sum_{s=0}^{k} (Pi P^{k+1-s} Pi) Pi U^s                                  (8)
    ||Pi X^{k+1}||_F <= sum_{s=0}^{k} c_{k+1-s} ||Pi U^s||_F,   c_m := ||Pi P^m Pi||_2    (9)

c_1 = beta is the largest singular value of P on the subspace orthogonal to the ones
vector, which for a doubly stochastic P is its second largest singular value (1/sqrt(2)
for the 1-peer ring of 4 learners). For the circulant (normal) matrices here c_m = beta^m
and (9) is the paper's eq. (9), computed recursively as B_{k+1} = beta (B_k + ||Pi U^k||).
With delay, one step of the augmented matrix can expand (c_1 > 1), so the bound uses a
window of W steps (see `prop1_window`) and c_{a+b} <= c_a c_b:

    B_{k+1} = sum_{m=1}^{W} c_m g_{k+1-m} + c_W B_{k+1-W}       (g_s = ||Pi U^s||, B_{<=0} = 0)

which is >= the right side of (9), hence >= the measured distance, at every step.
"""

from __future__ import annotations

import dataclasses

import numpy as np

TOPOLOGIES = ("ring", "exponential", "full")


@dataclasses.dataclass(frozen=True)
class Topology:
  """n learners; learner i receives from (i - s) mod n for s in `shifts`."""

  name: str
  num_learners: int
  shifts: tuple[int, ...]

  @property
  def weight(self) -> float:
    """The weight of each in-peer and of the learner itself: 1 / (1 + |N_in|)."""
    return 1.0 / (1 + len(self.shifts))

  def mixing_matrix(self) -> np.ndarray:
    """P [n, n], row i = receiver i: X <- P X mixes stacked parameters X [n, d]."""
    n = self.num_learners
    p = np.zeros((n, n))
    for i in range(n):
      p[i, i] += self.weight
      for s in self.shifts:
        p[i, (i - s) % n] += self.weight
    return p


def make_topology(name: str, num_learners: int, peers: int = 1) -> Topology:
  """The named topology of `num_learners` learners (`peers`: in-peers of the ring)."""
  n = num_learners
  if n < 2:
    raise ValueError(f"Gossip needs num_learners >= 2, got {n}.")
  if name == "ring":
    if not 1 <= peers <= n - 1:
      raise ValueError(
        f"config.gossip.peers={peers}: a ring of {n} learners has 1 to {n - 1} "
        "in-peers per learner."
      )
    shifts = tuple(range(1, peers + 1))
  elif name == "exponential":
    shifts = tuple(2**j for j in range(n.bit_length()) if 2**j < n)
  elif name == "full":
    shifts = tuple(range(1, n))
  else:
    raise ValueError(f"config.gossip.topology={name!r} is not one of {list(TOPOLOGIES)}.")
  return Topology(name, n, shifts)


def augmented_mixing_matrix(mixing: np.ndarray, delay: int) -> np.ndarray:
  """The mixing matrix of the delay-augmented graph, [n (tau + 1), n (tau + 1)].

  Node blocks: 0 = the learners' parameters x^k, m = 1..tau = the messages y^{k-m} each
  learner sent m updates ago. Learners mix their own y^k with their in-peers' y^{k-tau};
  every message ages by one block per update. delay = 0 returns `mixing`.
  """
  if delay < 0:
    raise ValueError(f"delay must be >= 0, got {delay}.")
  if delay == 0:
    return np.array(mixing, dtype=float)
  n = mixing.shape[0]
  self_part = np.diag(np.diag(mixing))
  peer_part = mixing - self_part
  big = np.zeros((n * (delay + 1), n * (delay + 1)))
  big[:n, :n] = self_part
  big[:n, delay * n :] = peer_part
  for m in range(1, delay + 1):
    big[m * n : (m + 1) * n, (m - 1) * n : m * n] = np.eye(n)
  return big


def consensus_gains(mixing: np.ndarray, max_power: int) -> np.ndarray:
  """c_m = ||Pi P^m Pi||_2 for m = 1..max_power (index m - 1), Pi = I - 11^T / n."""
  n = mixing.shape[0]
  centering = np.eye(n) - np.ones((n, n)) / n
  gains, power = [], np.eye(n)
  for _ in range(max_power):
    power = mixing @ power
    gains.append(np.linalg.norm(centering @ power @ centering, 2))
  return np.asarray(gains)


def beta(mixing: np.ndarray) -> float:
  """Prop. 1's beta for a static P: the largest singular value of P on 1-perp (c_1)."""
  return float(consensus_gains(mixing, 1)[0])


def prop1_window(mixing: np.ndarray, delay: int = 0) -> tuple[int, np.ndarray]:
  """(W, c_1..c_W) for the recursive Prop. 1 bound of gossip with `delay` (module doc).

  W minimises the bound's decay rate c_W^(1/W) over W <= 4 (tau + 1) (W = 1 without
  delay, where c_m = beta^m). If every c_W >= 1 (e.g. a disconnected graph), the bound
  grows without limit, as consensus does not hold.
  """
  augmented = augmented_mixing_matrix(mixing, delay)
  gains = consensus_gains(augmented, 4 * (delay + 1))
  rates = [(g ** (1.0 / (m + 1)) if g > 0 else 0.0) for m, g in enumerate(gains)]
  window = int(np.argmin(np.round(rates, 12))) + 1
  return window, gains[:window]
