"""experiments/ba3c_best.py: the rate plot's axis labels."""

from experiments import ba3c_best


def test_log_ticks_label_a_1_2_5_grid_not_every_rate():
  # RMSProp's 1.98e-3 x 2^k beside Adam's 1e-3 x 2^k: labelling each rate overlapped.
  rates = [1e-3 * 2**k for k in range(7)] + [1.98e-3 * 2**k for k in range(7)] + [5e-4]
  ticks = ba3c_best.log_ticks(rates)
  assert ticks == [5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1]
  assert len({f"{t:g}" for t in ticks}) == len(ticks)
