"""galax/results/power.py: the simulated power of a registered claim, and the factor margin."""

import numpy as np
import pytest

from galax.results import power
from galax.results import verdict as rule


def test_same_arguments_same_figures():
  args = ("higher", "diff", 110.0, 10.0, 100.0, 10.0)
  assert power.outcome_rates(*args, draws=2000) == power.outcome_rates(*args, draws=2000)


def test_no_difference_reads_higher_at_most_the_one_sided_level():
  rates = power.outcome_rates("higher", "diff", 100.0, 10.0, 100.0, 10.0, seeds=(5, 5))
  assert rates[rule.REPRODUCED] < 0.035  # the CI's low end above 0: 2.5%, plus MC error
  assert sum(rates.values()) == pytest.approx(1.0)


def test_power_grows_with_seeds_and_reaches_one_for_a_large_effect():
  small = power.power("at least", "diff", 100.0, 10.0, 100.0, 10.0, seeds=(3, 3), draws=4000)
  large = power.power("at least", "diff", 100.0, 10.0, 100.0, 10.0, seeds=(20, 20), draws=4000)
  assert small < large
  assert power.power("higher", "diff", 200.0, 5.0, 100.0, 5.0, draws=2000) > 0.99


def test_ratio_draws_have_the_stated_mean_and_sd():
  x = power._draws(np.random.default_rng(0), 4.0e6, 1.0e6, 200_000, 1, "ratio")
  assert x.mean() == pytest.approx(4.0e6, rel=0.01)
  assert x.std() == pytest.approx(1.0e6, rel=0.02)
  assert (x > 0).all()


def test_a_factor_margin_is_symmetric_on_the_log_scale():
  inside = rule.within_factor(1.0, 0.55, 1.9, factor=2.0)
  assert rule.verdict("equal", inside) == rule.REPRODUCED
  faster_by_more = rule.within_factor(1.0, 0.45, 1.9, factor=2.0)
  assert rule.verdict("equal", faster_by_more) == rule.INCONCLUSIVE  # 1 / 0.45 > 2
  assert rule.verdict("equal", rule.within_factor(3.0, 2.1, 4.0, 2.0)) == rule.NOT_REPRODUCED
  with pytest.raises(ValueError, match="factor"):
    rule.within_factor(1.0, 0.5, 2.0, factor=1.0)


def test_smallest_factor_and_seeds_find_the_first_that_reaches_the_target():
  found = power.smallest_factor("equal", 1.0, 0.25, 1.0, 0.25, seeds=(3, 3), draws=2000)
  assert found is not None and found[1] >= 0.8
  factor = found[0]
  below = power.outcome_rates(
    "equal", "ratio", 1.0, 0.25, 1.0, 0.25, draws=2000, factor=round(factor - 0.05, 2)
  )
  assert below[rule.REPRODUCED] < 0.8
  needed = power.smallest_seeds("higher", "diff", 130.0, 20.0, 100.0, 20.0, counts=(3, 5, 10))
  assert needed is not None and needed[1] >= 0.8


def test_bad_input_names_the_problem():
  with pytest.raises(ValueError, match="op must be"):
    power.outcome_rates("equal", "sum", 1.0, 0.1, 1.0, 0.1)
  with pytest.raises(ValueError, match="2 or more runs"):
    power.outcome_rates("equal", "ratio", 1.0, 0.1, 1.0, 0.1, seeds=(1, 3))
  with pytest.raises(ValueError, match="factor is for a ratio"):
    power.outcome_rates("equal", "diff", 1.0, 0.1, 1.0, 0.1, factor=2.0)
