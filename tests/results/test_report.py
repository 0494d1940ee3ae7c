"""Results -> tables and plots, on a synthetic results set with hand-computed answers."""

import json
import os

import pytest

from galax.results import report

EVALS = 12  # evaluations per run, 10 episodes each, one every 100 steps / 60 s


def _run(name, method, seed, simulators, final, env="Pong-v5", ramp_value=0.0, minutes=1.0):
  """A run whose first 2 evaluations score `ramp_value` and the last 10 score `final`."""
  evaluations = []
  for e in range(EVALS):
    value = ramp_value if e < 2 else final
    evaluations.append(
      dict(
        env_steps=100 * (e + 1),
        train_time_s=60.0 * minutes * (e + 1),
        wall_time_s=61.0 * minutes * (e + 1),
        learner=0,
        returns=[value] * 10,
        lengths=[100] * 10,
      )
    )
  return dict(
    kind="galax-run",
    version=1,
    name=name,
    method=method,
    env_id=env,
    seed=seed,
    seed_mode="sequential",
    simulators=simulators,
    git=dict(commit="a" * 40, dirty=False),
    device=dict(platform="cpu", kind="cpu", count=1),
    config={},
    env_steps=100 * EVALS,
    steps_per_second=1000.0 + seed,
    train_time_s=60.0 * minutes * EVALS,
    train_curve=dict(
      env_steps=[600, 1200], wall_time_s=[1, 2], train_time_s=[1, 2], mean_return=[0.0, final]
    ),
    evaluations=evaluations,
    final_metric=final,
    energy=None,
  )


def _write(directory, records, summaries=()):
  for r in records:
    path = os.path.join(directory, r["name"], f"seed{r['seed']}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    json.dump(r, open(path, "w"))
  for s in summaries:
    json.dump(s, open(os.path.join(directory, s["name"], "summary.json"), "w"))


@pytest.fixture
def results(tmp_path):
  records = (
    [_run("a2c16", "A2C", s, 16, f) for s, f in enumerate([10.0, 20.0, 30.0, 40.0])]
    + [_run("a2c64", "A2C", s, 64, f, minutes=2.0) for s, f in enumerate([5.0, 10.0, 15.0, 20.0])]
    + [
      _run("gala64", "GALA-A2C", s, 64, f, minutes=0.5)
      for s, f in enumerate([13.0, 14.0, 15.0, 1.0])
    ]
  )
  summaries = [
    dict(
      kind="galax-experiment",
      name="a2c16",
      method="A2C",
      env_id="Pong-v5",
      seeds=[0, 1, 2, 3],
      best_policy=dict(seed=3, mean=35.0, se=2.0, returns=[35.0] * 10),
    )
  ]
  _write(str(tmp_path / "results"), records, summaries)
  return tmp_path


def _table(text, heading):
  """The markdown table rows (as lists of cells) under `heading`."""
  section = text.split(f"## {heading}")[1].split("\n## ")[0]
  return [
    [c.strip() for c in line.strip("|").split("|")]
    for line in section.splitlines()
    if line.startswith("|") and not line.startswith("| ---")
  ][1:]


def test_report_tables(results):
  out = str(results / "report")
  text = report.main(
    [
      str(results / "results"),
      "--out",
      out,
      "--targets",
      "12,30",
      "--time_limit",
      "300",
      "--resamples",
      "500",
    ]
  )
  assert text == open(os.path.join(out, "report.md")).read()

  runs = {row[0]: row for row in _table(text, "Runs")}
  assert runs["a2c16"][1:5] == ["A2C", "Pong-v5", "16", "4"]
  assert runs["a2c16"][7] == "1002"  # mean steps/s of seeds 0..3
  assert runs["a2c64"][8] == "24.00"  # 12 evaluations x 2 minutes

  final = {row[0]: row for row in _table(text, "Final metric")}
  # Finals 10, 20, 30, 40: mean 25, s.e. std([10..40], ddof=1) / 2 = 6.45.
  assert final["a2c16"][3] == "25.0 ± 6.5"
  assert final["a2c16"][5] == "10.0, 20.0, 30.0, 40.0"
  # 25 +- t(3) 6.45: the bootstrap's "95%" was inside [10, 40], the seeds' range.
  assert final["a2c16"][4] == "[4.5, 45.5]"
  assert "| final metric | 95% t-interval | per seed |" in text

  # Within 300 s: a2c16 has 5 evaluations (2 ramp at 0, 3 at final) -> 0.6 x final.
  final_time = {row[2]: row for row in _table(text, "Final time metric (HTS-RL)")}
  assert final_time["a2c16"][3] == "15.0 ± 3.9"
  # a2c64 evaluates every 2 min: 2 evaluations by 300 s, both ramp -> 0.
  assert final_time["a2c64"][3] == "0.0 ± 0.0"

  required = {(row[1], row[2]): row for row in _table(text, "Required time metric (HTS-RL)")}
  # Target 12 for a2c16: the running mean after evaluation e <= 9 (minute e + 1) is
  # final * (e - 1) / (e + 1). Seed 0 (final 10) never reaches 12; seed 1 (20) at e = 4
  # (12.0), seed 2 (30) at e = 3 (15.0), seed 3 (40) at e = 2 (13.3): mean of 5, 4, 3 min.
  assert required[("12", "a2c16")][3:] == ["4.00", "3/4"]
  assert required[("30", "a2c64")][3:] == ["-", "0/4"]
  assert "Targets on Pong-v5: 12 and 30, as given (--targets)." in text

  best = _table(text, "Best policy (GALA Table 1)")
  assert best == [["A2C 1.2k", "35 ± 2"]]


def test_success_rate_sweep(results):
  out = str(results / "report")
  text = report.main([str(results / "results"), "--out", out, "--resamples", "200"])
  section = text.split("## Success rate over simulators (GALA Fig. 1a)")[1]
  assert "Pong-v5 (reference 25.0)" in section  # the 16-simulator A2C mean
  rows = {r[0]: r for r in _table("## S" + section, "S")}
  # Threshold 12.5: A2C-16 finals 10..40 -> 3/4; A2C-64 5..20 -> 2/4; GALA-64 -> 3/4.
  assert rows["A2C"][1:] == ["75% (4)", "50% (4)"]
  assert rows["GALA-A2C"][1:] == ["", "75% (4)"]
  for name in ("Pong-v5_steps.png", "Pong-v5_time.png", "Pong-v5_success.png"):
    path = os.path.join(out, name)
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(path) < 200_000
    assert f"![{name}]({name})" in text


def test_explicit_reference_and_no_plots(results):
  out = str(results / "report")
  text = report.main(
    [
      str(results / "results"),
      "--out",
      out,
      "--reference",
      "Pong-v5=40",
      "--no_plots",
      "--resamples",
      "200",
    ]
  )
  assert "Pong-v5 (reference 40.0)" in text
  assert "## Plots" not in text and not os.path.exists(os.path.join(out, "Pong-v5_steps.png"))


def test_report_without_evaluations_uses_training_curves(tmp_path):
  records = [_run("x", "A2C", s, 16, 5.0) for s in range(2)]
  for r in records:
    r["evaluations"] = []
  _write(str(tmp_path / "r"), records)
  text = report.main([str(tmp_path / "r"), "--out", str(tmp_path / "o"), "--resamples", "100"])
  assert "## Final metric" not in text and "## Runs" in text
  assert os.path.exists(tmp_path / "o" / "Pong-v5_steps.png")


def test_report_errors(tmp_path):
  with pytest.raises(SystemExit):
    report.main([str(tmp_path / "missing")])
  (tmp_path / "empty").mkdir()
  with pytest.raises(SystemExit):
    report.main([str(tmp_path / "empty")])


@pytest.fixture
def two_games(tmp_path):
  """A2C and GALA-A2C on Pong and Breakout (first evaluations 0 and 2), PPO on Pong only."""
  records = (
    [_run("pong_a2c", "A2C", s, 16, f) for s, f in enumerate([10.0, 20.0, 30.0, 40.0])]
    + [_run("pong_gala", "GALA-A2C", s, 64, f) for s, f in enumerate([13.0, 14.0, 15.0, 1.0])]
    + [_run("pong_ppo", "PPO", s, 16, f) for s, f in enumerate([1.0, 2.0])]
    + [
      _run("breakout_a2c", "A2C", s, 16, f, env="Breakout-v5", ramp_value=2.0)
      for s, f in enumerate([2.0, 4.0, 6.0, 8.0])
    ]
    + [
      _run("breakout_gala", "GALA-A2C", s, 64, 10.0, env="Breakout-v5", ramp_value=2.0)
      for s in range(4)
    ]
  )
  _write(str(tmp_path / "results"), records)
  return tmp_path


def test_report_across_games(two_games):
  out = str(two_games / "report")
  text = report.main([str(two_games / "results"), "--out", out, "--resamples", "500"])
  rows = {row[0]: row for row in _table(text, "Across games (IQM, rliable)")}
  # Defaults: low = the mean first evaluation (Pong 0, Breakout 2), high = the best mean
  # final metric (Pong: A2C's 25; Breakout: GALA's 10).
  assert rows["Pong-v5"][1:] == ["0.00", "25.00"] and rows["Breakout-v5"][1:] == ["2.00", "10.00"]
  # A2C: Pong 0.4, 0.8, 1.2, 1.6 and Breakout 0, 0.25, 0.5, 0.75; sorted, the middle four
  # are 0.4, 0.5, 0.75, 0.8 -> IQM 0.6125 (mean 0.6875). GALA: Pong 0.52, 0.56, 0.6, 0.04
  # and Breakout 1 x 4 -> middle 0.56, 0.6, 1, 1 -> IQM 0.79 (mean 0.715).
  a2c, gala = rows["A2C, 16 simulators"], rows["GALA-A2C, 64 simulators"]
  assert a2c[1:3] == ["2", "8"] and float(a2c[3]) == pytest.approx(0.6125, abs=1e-3)
  assert float(a2c[5]) == pytest.approx(0.6875, abs=1e-3)
  assert gala[1:4] + gala[5:] == ["2", "8", "0.790", "0.715"]
  for row, iqm in ((a2c, 0.6125), (gala, 0.79)):
    lo, hi = (float(x) for x in row[4].strip("[]").split(","))
    assert lo < iqm < hi
  assert "- PPO, 16 simulators: left out, it ran in 1 of 2 games" in text
  # P(A2C > GALA): Pong 13 of 16 pairs (0.8125), Breakout none (GALA's 10 beats 2..8).
  improvement = rows["A2C, 16 simulators vs GALA-A2C, 64 simulators"]
  assert improvement[1] == "0.41"
  lo, hi = (float(x) for x in improvement[2].strip("[]").split(","))
  assert lo < 0.41 <= hi <= 0.5 and improvement[3] == "inconclusive"
  path = os.path.join(out, "performance_profile.png")
  assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
  assert "![performance_profile.png](performance_profile.png)" in text


def test_report_across_games_with_given_scores(two_games):
  out = str(two_games / "report")
  text = report.main(
    [
      str(two_games / "results"),
      "--out",
      out,
      "--resamples",
      "200",
      "--random",
      "Pong-v5=-10",
      "--reference",
      "Pong-v5=40",
      "--no_plots",
    ]
  )
  rows = {row[0]: row for row in _table(text, "Across games (IQM, rliable)")}
  assert rows["Pong-v5"][1:] == ["-10.00", "40.00"]
  # A2C on Pong: (10..40 + 10) / 50 = 0.4, 0.6, 0.8, 1.0; with Breakout's 0, 0.25, 0.5,
  # 0.75 the middle four are 0.4, 0.5, 0.6, 0.75 -> IQM 0.5625.
  assert float(rows["A2C, 16 simulators"][3]) == pytest.approx(0.5625, abs=1e-3)
  # A game whose low equals its high cannot be normalised: one game is left, no aggregate.
  text = report.main(
    [
      str(two_games / "results"),
      "--out",
      out,
      "--resamples",
      "200",
      "--random",
      "Breakout-v5=10",
      "--reference",
      "Breakout-v5=10",
    ]
  )
  assert "Breakout-v5: left out, its low and high scores (10, 10) do not normalise" in text
  assert "No algorithm ran in two or more games that normalise" in text
  assert not os.path.exists(os.path.join(out, "performance_profile.png"))
  with pytest.raises(SystemExit):
    report.main([str(two_games / "results"), "--out", out, "--random", "Pong-v5"])


def test_report_of_one_game_has_no_aggregate(results):
  out = str(results / "report")
  text = report.main([str(results / "results"), "--out", out, "--resamples", "100"])
  assert "Across games" not in text
  assert not os.path.exists(os.path.join(out, "performance_profile.png"))


def _plot_titles(monkeypatch):
  """The titles of the plots the report saves, in order (filled as it saves them)."""
  from galax.results import aggregate

  titles, save = [], aggregate.save_plot
  record = lambda fig, ax, title, *rest: titles.append(title) or save(fig, ax, title, *rest)
  monkeypatch.setattr(aggregate, "save_plot", record)
  return titles


def test_two_seeds_get_no_interval_in_the_table_or_the_plot(tmp_path, monkeypatch):
  """With 2 seeds a bootstrap interval is about [min, max]: the table and the plot say why
  they give none."""
  titles = _plot_titles(monkeypatch)
  _write(
    str(tmp_path / "results"), [_run("ppo", "PPO", s, 16, f) for s, f in enumerate([1.0, 2.0])]
  )
  text = report.main([str(tmp_path / "results"), "--out", str(tmp_path / "r"), "--resamples", "50"])
  final = {row[0]: row for row in _table(text, "Final metric")}
  assert final["ppo"][4] == "n=2, no interval below 3 seeds"
  assert titles[:2] == ["Pong-v5: mean over seeds; no interval below 3 seeds"] * 2


def test_the_report_explains_its_default_targets_and_names_its_band(results, monkeypatch):
  titles = _plot_titles(monkeypatch)
  text = report.main([str(results / "results"), "--out", str(results / "r"), "--resamples", "50"])
  required = {(row[1], row[2]) for row in _table(text, "Required time metric (HTS-RL)")}
  # a2c16's finals average 25, the best (a2c64's 12.5, gala64's 10.75): 40% and 80% of it
  assert ("10", "a2c16") in required and ("20", "gala64") in required
  assert (
    "Targets on Pong-v5: 10 and 20, 40% and 80% of the best mean final metric there "
    "(25.0, a2c16); --targets sets others." in text
  )
  assert titles[0] == "Pong-v5: mean over seeds, 95% t-interval band (3+ seeds)"
