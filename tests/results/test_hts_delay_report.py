"""Experiment D's rule (experiments/hts_delay_report.py): a cell learns at >= half the best
A2C cell's mean final return; the reading compares largest stable rates."""

from experiments import hts_delay_report as report
from experiments import hts_delay_stability as study

RATES = list(study.RATES)


def _cells(means: dict[str, list[float]]) -> dict:
  return {
    (variant, rate): dict(finals=[m, m, m], grads=[0.1] * 3, mean=m)
    for variant, row in means.items()
    for rate, m in zip(RATES, row)
  }


def test_the_delay_is_the_cause_where_only_eq6_falls_one_step_earlier():
  cells = _cells(
    dict(
      a2c=[4, 8, 10, 9, 2, 1],
      hts_stale=[4, 8, 9, 2, 1, 1],
      hts_current=[4, 8, 10, 8, 1, 1],
    )
  )
  stable = {v: report.largest_stable(cells, v, RATES, 5.0) for v in study.VARIANTS}
  assert stable == dict(a2c=RATES[3], hts_stale=RATES[2], hts_current=RATES[3])
  assert "gradient's one-step delay is the cause" in report.reading(stable)
  assert "Reading.** Eq. 6's largest stable rate lies below" in "\n".join(
    report.table(cells, RATES)
  )


def test_the_data_lag_is_named_where_theta_k_falls_too_and_no_cost_where_none_does():
  lag = dict(a2c=RATES[3], hts_stale=RATES[2], hts_current=RATES[1])
  assert "lag in the data" in report.reading(lag)
  same = dict(a2c=RATES[3], hts_stale=RATES[3], hts_current=RATES[3])
  assert "costs no stable rate" in report.reading(same)
  assert "lag in the data" in report.reading(dict(a2c=RATES[3], hts_stale=None, hts_current=None))


def test_a_missing_cell_gives_no_reading():
  cells = _cells(dict(a2c=[4, 8, 10, 9, 2, 1], hts_stale=[4, 8, 9, 2, 1, 1]))
  assert "not yet" in "\n".join(report.table(cells, RATES))


def test_run_names_and_commands_follow_the_registration():
  command = study.command("hts_stale", RATES[3], 1)
  assert "--config.optimizer.learning_rate=0.0024" in command
  assert "--config.hts.gradient_point=stale" in command
  assert (
    "--config.network.name=minatar" in command and "--config.total_env_steps=1000000" in command
  )
  assert study.name("a2c", RATES[0], 2) == "a2c_lr0.0003_s2"
  assert [f"{r:.3g}" for r in RATES] == ["0.0003", "0.0006", "0.0012", "0.0024", "0.0048", "0.0096"]
