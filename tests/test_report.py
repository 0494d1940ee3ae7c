"""Results -> tables and plots, on a synthetic results set with hand-computed answers."""

import json
import os

import pytest

from galax import report

EVALS = 12  # evaluations per run, 10 episodes each, one every 100 steps / 60 s


def _run(name, method, seed, simulators, final, env="Pong-v5", ramp_value=0.0, minutes=1.0):
  """A run whose first 2 evaluations score `ramp_value` and the last 10 score `final`."""
  evaluations = []
  for e in range(EVALS):
    value = ramp_value if e < 2 else final
    evaluations.append(dict(env_steps=100 * (e + 1), train_time_s=60.0 * minutes * (e + 1),
                            wall_time_s=61.0 * minutes * (e + 1), learner=0,
                            returns=[value] * 10, lengths=[100] * 10))
  return dict(
      kind="galax-run", version=1, name=name, method=method, env_id=env, seed=seed,
      seed_mode="sequential", simulators=simulators, git=dict(commit="a" * 40, dirty=False),
      device=dict(platform="cpu", kind="cpu", count=1), config={}, env_steps=100 * EVALS,
      steps_per_second=1000.0 + seed, train_time_s=60.0 * minutes * EVALS,
      train_curve=dict(env_steps=[600, 1200], wall_time_s=[1, 2], train_time_s=[1, 2],
                       mean_return=[0.0, final]),
      evaluations=evaluations, final_metric=final, energy=None)


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
      + [_run("a2c64", "A2C", s, 64, f, minutes=2.0) for s, f in enumerate([5.0, 10.0, 15.0,
                                                                           20.0])]
      + [_run("gala64", "GALA-A2C", s, 64, f, minutes=0.5)
         for s, f in enumerate([13.0, 14.0, 15.0, 1.0])])
  summaries = [dict(kind="galax-experiment", name="a2c16", method="A2C", env_id="Pong-v5",
                    seeds=[0, 1, 2, 3], best_policy=dict(seed=3, mean=35.0, se=2.0,
                                                          returns=[35.0] * 10))]
  _write(str(tmp_path / "results"), records, summaries)
  return tmp_path


def _table(text, heading):
  """The markdown table rows (as lists of cells) under `heading`."""
  section = text.split(f"## {heading}")[1].split("\n## ")[0]
  return [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
          if line.startswith("|") and not line.startswith("| ---")][1:]


def test_report_tables(results):
  out = str(results / "report")
  text = report.main([str(results / "results"), "--out", out, "--targets", "12,30",
                      "--time_limit", "300", "--resamples", "500"])
  assert text == open(os.path.join(out, "report.md")).read()

  runs = {row[0]: row for row in _table(text, "Runs")}
  assert runs["a2c16"][1:5] == ["A2C", "Pong-v5", "16", "4"]
  assert runs["a2c16"][7] == "1002"  # mean steps/s of seeds 0..3
  assert runs["a2c64"][8] == "24.00"  # 12 evaluations x 2 minutes

  final = {row[0]: row for row in _table(text, "Final metric")}
  # Finals 10, 20, 30, 40: mean 25, s.e. std([10..40], ddof=1) / 2 = 6.45.
  assert final["a2c16"][3] == "25.0 ± 6.5"
  assert final["a2c16"][5] == "10.0, 20.0, 30.0, 40.0"
  lo, hi = (float(x) for x in final["a2c16"][4].strip("[]").split(","))
  assert 10.0 <= lo < 25.0 < hi <= 40.0

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
  text = report.main([str(results / "results"), "--out", out, "--reference", "Pong-v5=40",
                      "--no_plots", "--resamples", "200"])
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
