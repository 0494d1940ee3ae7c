"""A grid of config values x seeds, built on galax.results.experiment, with a table and a plot.

  python -m galax.sweep --config=minatar_ppo --set=optimizer.learning_rate=1e-3,5e-3 \
      --seeds=0-1 --steps=2000000 --out=results/sweep_lr
  python -m galax.sweep --config=cartpole_a2c --set=optimizer.learning_rate=3e-4,1e-3 \
      --set=envs_per_learner=8,16 --seeds=0-2

Each `--set=KEY=V1,V2,...` is one axis of the grid (KEY as in `--config.KEY`; values in
the field's type). Every point runs `galax.results.experiment` (one JSON per seed and a summary in
`<out>/<point>/`); a point whose summary exists is skipped, so an interrupted sweep goes on
where it stopped. At the end `<out>/sweep.md` and `sweep.json` give, per point, the final
training return (running mean of the last games) and, where the config evaluates, the final
evaluation metric, each as the mean over seeds with a 95% bootstrap CI
(`scipy.stats.bootstrap`), and the steps/s; `sweep.png` plots them against the values.
"""

from __future__ import annotations

import itertools
import json
import math
import os
from typing import Any, Sequence

import numpy as np
from ml_collections import ConfigDict

Axis = tuple[str, list[Any]]


def parse_axis(config: ConfigDict, text: str) -> Axis:
  """'optimizer.learning_rate=1e-3,5e-3' -> (key, [values in the field's type])."""
  from galax.config import cli  # pylint: disable=g-import-not-at-top

  key, sep, values = text.partition("=")
  if not sep or not values:
    raise ValueError(f"--set={text}: give KEY=V1,V2,... (e.g. optimizer.learning_rate=1e-3,3e-3).")
  problem = cli.unknown_override(config, key)
  if problem:
    raise ValueError(problem)
  node = config
  for part in key.split(".")[:-1]:
    node = node[part]
  current = node[key.split(".")[-1]]
  kind = type(current) if current is not None else str
  parsed = []
  for value in values.split(","):
    try:
      parsed.append(_convert(kind, value.strip()))
    except ValueError:
      raise ValueError(f"--set={text}: {value!r} is not a {kind.__name__} "
                       f"(config.{key} is {current!r}).") from None
  return key, parsed


def _convert(kind: type, value: str) -> Any:
  if kind is bool:
    if value.lower() not in ("true", "false", "1", "0"):
      raise ValueError(value)
    return value.lower() in ("true", "1")
  return kind(value)


def points(axes: Sequence[Axis]) -> list[dict[str, Any]]:
  """The grid: every combination of the axes' values, the first axis slowest."""
  return [dict(zip([k for k, _ in axes], combo))
          for combo in itertools.product(*[values for _, values in axes])]


def point_name(point: dict[str, Any]) -> str:
  return "__".join(f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}"
                   for key, value in point.items())


def with_point(config: ConfigDict, point: dict[str, Any], steps: int | None) -> ConfigDict:
  config = ConfigDict(config.to_dict())  # unlocked copy
  for key, value in point.items():
    node = config
    for part in key.split(".")[:-1]:
      node = node[part]
    node[key.split(".")[-1]] = value
  if steps:
    config.total_env_steps = steps
  return config


def mean_ci(values: Sequence[float | None], resamples: int = 2000) -> tuple[float, float, float]:
  """Mean over seeds and its 95% bootstrap CI (NaN where undefined)."""
  from scipy import stats  # pylint: disable=g-import-not-at-top

  x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
  if x.size == 0:
    return (math.nan, math.nan, math.nan)
  if x.size == 1 or np.all(x == x[0]):
    return (float(x.mean()), float(x.mean()), float(x.mean()))
  ci = stats.bootstrap((x,), np.mean, n_resamples=resamples, confidence_level=0.95,
                       method="percentile", random_state=0).confidence_interval
  return (float(x.mean()), float(ci.low), float(ci.high))


def summarize(out_dir: str, grid: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
  """Per point: the seeds' records -> mean and CI of the final returns, steps/s."""
  rows = []
  for point in grid:
    exp_dir = os.path.join(out_dir, point_name(point))
    records = []
    for name in sorted(os.listdir(exp_dir)) if os.path.isdir(exp_dir) else []:
      if name.startswith("seed") and name.endswith(".json"):
        with open(os.path.join(exp_dir, name)) as f:
          records.append(json.load(f))
    rows.append(dict(point=point, seeds=[r["seed"] for r in records],
                     train_return=mean_ci([r.get("train_mean_return") for r in records]),
                     final_metric=mean_ci([r.get("final_metric") for r in records]),
                     steps_per_second=float(np.mean([r["steps_per_second"] or math.nan
                                                     for r in records])) if records else math.nan))
  return rows


def _fmt(triple: Sequence[float]) -> str:
  mean, low, high = triple
  return "-" if math.isnan(mean) else f"{mean:.2f} [{low:.2f}, {high:.2f}]"


def write_table(out_dir: str, rows: Sequence[dict[str, Any]], title: str) -> str:
  keys = list(rows[0]["point"]) if rows else []
  lines = [f"# {title}", "", "Mean over seeds [95% bootstrap CI].", "",
           "| " + " | ".join(keys) + " | seeds | final training return | final evaluation "
           "metric | steps/s |", "|" + "---|" * (len(keys) + 4)]
  for row in rows:
    values = [f"{row['point'][k]:g}" if isinstance(row["point"][k], float)
              else str(row["point"][k]) for k in keys]
    lines.append("| " + " | ".join(values) + f" | {len(row['seeds'])} | "
                 f"{_fmt(row['train_return'])} | {_fmt(row['final_metric'])} | "
                 f"{row['steps_per_second']:.0f} |")
  path = os.path.join(out_dir, "sweep.md")
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
  with open(os.path.join(out_dir, "sweep.json"), "w") as f:
    json.dump(dict(kind="galax-sweep", title=title, rows=rows), f, indent=1,
              default=lambda x: None)
  return path


def write_plot(out_dir: str, rows: Sequence[dict[str, Any]]) -> str | None:
  """The final training return per point (with its CI): against the value for one axis,
  one bar per point otherwise."""
  try:
    import matplotlib  # pylint: disable=g-import-not-at-top

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  except ImportError:
    return None
  means = np.array([r["train_return"][0] for r in rows])
  errors = np.array([[r["train_return"][0] - r["train_return"][1],
                      r["train_return"][2] - r["train_return"][0]] for r in rows]).T
  fig, ax = plt.subplots(figsize=(6, 4))
  keys = list(rows[0]["point"])
  values = [r["point"][keys[0]] for r in rows]
  if len(keys) == 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                            for v in values):
    ax.errorbar(values, means, yerr=errors, marker="o", capsize=3)
    if min(values) > 0 and max(values) / min(values) >= 10:
      ax.set_xscale("log")
    ax.set_xlabel(keys[0])
  else:
    labels = [point_name(r["point"]).replace("__", "\n") for r in rows]
    ax.bar(range(len(rows)), means, yerr=errors, capsize=3)
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
  ax.set_ylabel("final training return (mean over seeds, 95% CI)")
  fig.tight_layout()
  path = os.path.join(out_dir, "sweep.png")
  fig.savefig(path, dpi=100)
  plt.close(fig)
  return path


def run_sweep(config: ConfigDict, axes: Sequence[Axis], seeds: Sequence[int], out_dir: str,
              steps: int | None = None, log=print) -> list[dict[str, Any]]:
  from galax.results import experiment  # pylint: disable=g-import-not-at-top

  grid = points(axes)
  log(f"sweep: {len(grid)} point(s) x {len(seeds)} seed(s) in {out_dir}")
  for point in grid:
    name = point_name(point)
    if os.path.exists(os.path.join(out_dir, name, "summary.json")):
      log(f"sweep: {name} done already; skipped")
      continue
    experiment.run_experiment(with_point(config, point, steps), seeds, out_dir, name,
                              best_policy_episodes=0, log=log)
  rows = summarize(out_dir, grid)
  swept = {key for key, _ in axes}
  base = "" if "env.id" in swept else f" on {config.env.id}"
  table = write_table(out_dir, rows, f"Sweep of {config.algorithm}{base}: "
                      + ", ".join(f"{k} in {v}" for k, v in axes))
  plot = write_plot(out_dir, rows)
  log(f"wrote {table}" + (f" and {plot}" if plot else ""))
  return rows


def _cli() -> None:
  import sys  # pylint: disable=g-import-not-at-top

  from absl import app, flags, logging  # pylint: disable=g-import-not-at-top
  from ml_collections import config_flags  # pylint: disable=g-import-not-at-top

  from galax.config import (
    CONFIGS_DIR,  # pylint: disable=g-import-not-at-top
    cli,  # pylint: disable=g-import-not-at-top
  )
  from galax.results.experiment import parse_seeds  # pylint: disable=g-import-not-at-top

  default_config = os.path.join(CONFIGS_DIR, "cartpole_a2c.py")
  sys.argv = cli.prepare_argv(sys.argv, default_config)
  config_flags.DEFINE_config_file("config", default_config, "The base config: a file or a "
                                  "name in configs/.", lock_config=True)
  flags.DEFINE_multi_string("set", [], "KEY=V1,V2,...: one axis of the grid.")
  flags.DEFINE_string("seeds", "0,1,2", "Seeds: 0,1,2 or 0-4.")
  flags.DEFINE_integer("steps", None,
                       "config.total_env_steps of every run (default: the config's).")
  flags.DEFINE_string("out", "results/sweep", "Output directory.")

  def main(argv: Sequence[str]) -> None:
    logging.set_verbosity(logging.WARNING)
    if len(argv) > 1:
      raise ValueError(f"Unexpected arguments: {argv[1:]}")
    config = flags.FLAGS["config"].value
    if not flags.FLAGS["set"].value:
      raise ValueError("--set=KEY=V1,V2,... is required (the grid's axes).")
    axes = [parse_axis(config, text) for text in flags.FLAGS["set"].value]
    steps = flags.FLAGS["steps"].value
    if steps is not None and steps < 1:
      raise ValueError(f"--steps must be >= 1, got {steps}.")
    run_sweep(config, axes, parse_seeds(flags.FLAGS["seeds"].value), flags.FLAGS["out"].value,
              steps)

  cli.answer_help(sys.argv, sys.modules[__name__])
  app.run(cli.guarded(main), flags_parser=cli.parse_flags)


if __name__ == "__main__":
  _cli()
