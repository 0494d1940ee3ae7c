"""A grid of config values x seeds, built on galax.results.experiment, with a table and a plot.

  python -m galax.results.sweep --config=minatar_ppo --set=optimizer.learning_rate=1e-3,5e-3 \
      --seeds=0-1 --steps=2000000 --out=results/sweep_lr
  python -m galax.results.sweep --config=cartpole_a2c --set=optimizer.learning_rate=3e-4,1e-3 \
      --set=envs_per_learner=8,16 --seeds=0-2

Each `--set=KEY=V1,V2,...` is one axis of the grid (KEY as in `--config.KEY`; values in
the field's type). Every point runs `galax.results.experiment` (one JSON per seed and a summary in
`<out>/<point>/`); a point whose summary exists is skipped, so an interrupted sweep goes on
where it stopped. At the end `<out>/sweep.md` and `sweep.json` give, per point, the final
training return (running mean of the last games) and, where the config evaluates, the final
evaluation metric, each as the mean over seeds with a 95% Student t-interval from 3 seeds up
(`paper_protocols.t_interval`, its coverage tested; with 1 or 2 seeds the table gives the
mean and "n=2, no interval below 3 seeds"), and the steps/s; `sweep.png` plots the training
return against the values (on a log axis where they are positive and span a factor 3 or
more, as learning rates do). sweep.json is strict JSON: each statistic is {"mean", "low",
"high", "n"}, null where undefined.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
from typing import Any, Sequence

import numpy as np
from absl import app, flags, logging
from ml_collections import ConfigDict, config_flags

import galax.config as config_lib
from galax.config import CONFIGS_DIR, Config, cli
from galax.results import aggregate, experiment, paper_protocols
from galax.results.experiment import parse_seeds
from galax.results.paper_protocols import MIN_SEEDS_FOR_CI
from galax.results.tables import NO_INTERVAL

Axis = tuple[str, list[Any]]


def parse_axis(config: Config, text: str) -> Axis:
  """'optimizer.learning_rate=1e-3,5e-3' -> (key, [values in the field's type])."""
  key, sep, values = text.partition("=")
  if not sep or not values:
    raise ValueError(f"--set={text}: give KEY=V1,V2,... (e.g. optimizer.learning_rate=1e-3,3e-3).")
  problem = cli.unknown_override(config_lib.to_data(config), key)
  if problem:
    raise ValueError(problem)
  current = config
  for part in key.split("."):
    current = getattr(current, part)
  kind = type(current) if current is not None else str
  parsed = []
  for value in values.split(","):
    try:
      parsed.append(_convert(kind, value.strip()))
    except ValueError:
      raise ValueError(
        f"--set={text}: {value!r} is not a {kind.__name__} (config.{key} is {current!r})."
      ) from None
  return key, parsed


def _convert(kind: type, value: str) -> Any:
  if kind is bool:
    if value.lower() not in ("true", "false", "1", "0"):
      raise ValueError(value)
    return value.lower() in ("true", "1")
  return kind(value)


def points(axes: Sequence[Axis]) -> list[dict[str, Any]]:
  """The grid: every combination of the axes' values, the first axis slowest."""
  return [
    dict(zip([k for k, _ in axes], combo))
    for combo in itertools.product(*[values for _, values in axes])
  ]


def point_name(point: dict[str, Any]) -> str:
  return "__".join(
    f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}"
    for key, value in point.items()
  )


def with_point(config: Config, point: dict[str, Any], steps: int | None) -> Config:
  """The config of one point of the grid (`steps`: its total_env_steps, if given)."""
  return config_lib.with_fields(config, {**point, **({"total_env_steps": steps} if steps else {})})


def seed_stats(values: Sequence[float | None]) -> dict[str, Any]:
  """{mean, low, high, n} over the seeds' finite values: low and high are the 95% Student
  t-interval from MIN_SEEDS_FOR_CI seeds up, None below; mean None without a value."""
  x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
  out: dict[str, Any] = dict(
    mean=float(x.mean()) if x.size else None, low=None, high=None, n=int(x.size)
  )
  if x.size >= MIN_SEEDS_FOR_CI:
    _, low, high = paper_protocols.t_interval(x)
    out.update(low=float(low), high=float(high))
  return out


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
    rates = [r["steps_per_second"] for r in records if r.get("steps_per_second")]
    rows.append(
      dict(
        point=point,
        seeds=[r["seed"] for r in records],
        train_return=seed_stats([r.get("train_mean_return") for r in records]),
        final_metric=seed_stats([r.get("final_metric") for r in records]),
        steps_per_second=float(np.mean(rates)) if rates else None,
      )
    )
  return rows


def _fmt(stat: dict[str, Any]) -> str:
  if stat["mean"] is None:
    return "-"
  if stat["low"] is None:
    return f"{stat['mean']:.2f} (n={stat['n']}, {NO_INTERVAL.format(least=MIN_SEEDS_FOR_CI)})"
  return f"{stat['mean']:.2f} [{stat['low']:.2f}, {stat['high']:.2f}]"


def _value(value: Any) -> str:
  return f"{value:g}" if isinstance(value, float) else str(value)


def write_table(out_dir: str, rows: Sequence[dict[str, Any]], title: str) -> str:
  keys = list(rows[0]["point"]) if rows else []
  lines = [
    f"# {title}",
    "",
    f"Mean over seeds [95% Student t-interval of that mean], the interval from "
    f"{MIN_SEEDS_FOR_CI} seeds up: with 1 or 2 the mean alone, as their spread gives no "
    "interval worth the name (a bootstrap's would be their min and max).",
    "",
    "| " + " | ".join(keys) + " | seeds | final training return | final evaluation "
    "metric | steps/s |",
    "|" + "---|" * (len(keys) + 4),
  ]
  for row in rows:
    values = [_value(row["point"][k]) for k in keys]
    rate = row["steps_per_second"]
    lines.append(
      "| " + " | ".join(values) + f" | {len(row['seeds'])} | "
      f"{_fmt(row['train_return'])} | {_fmt(row['final_metric'])} | "
      + ("-" if rate is None else f"{rate:.0f}")
      + " |"
    )
  path = os.path.join(out_dir, "sweep.md")
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n")
  data = dict(kind="galax-sweep", title=title, min_seeds_for_ci=MIN_SEEDS_FOR_CI, rows=rows)
  with open(os.path.join(out_dir, "sweep.json"), "w") as f:
    json.dump(_finite(data), f, indent=1, allow_nan=False)
  return path


def _finite(x: Any) -> Any:
  """JSON has no NaN or inf: None stands for them."""
  if isinstance(x, dict):
    return {k: _finite(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [_finite(v) for v in x]
  if isinstance(x, float) and not math.isfinite(x):
    return None
  return x


# Positive values this far apart go on a log axis: swept geometrically, as learning rates
# are (3e-4, 1e-3), they would crowd at one end of a linear one.
LOG_AXIS_SPAN = 3.0


def log_axis(values: Sequence[float]) -> bool:
  return min(values) > 0 and max(values) / min(values) >= LOG_AXIS_SPAN


def write_plot(out_dir: str, rows: Sequence[dict[str, Any]]) -> str | None:
  """The final training return per point (with its CI from 3 seeds up): against the value
  for one numeric axis, one horizontal bar per point otherwise (labels one per line)."""
  try:
    import matplotlib  # noqa: F401  (an optional dependency: no plot without it)
  except ImportError:
    return None
  stats = [r["train_return"] for r in rows]
  means = np.array([np.nan if s["mean"] is None else s["mean"] for s in stats])
  has_ci = np.array([s["low"] is not None for s in stats], bool)
  errors = np.array(
    [
      [s["mean"] - s["low"], s["high"] - s["mean"]] if s["low"] is not None else [0.0, 0.0]
      for s in stats
    ]
  ).T
  keys = list(rows[0]["point"])
  values = [r["point"][keys[0]] for r in rows]
  label = f"final training return\n(mean over seeds; 95% t-interval from {MIN_SEEDS_FOR_CI} seeds)"
  if len(keys) == 1 and all(
    isinstance(v, (int, float)) and not isinstance(v, bool) for v in values
  ):
    fig, ax = aggregate.new_plot(figsize=(6, 4))
    ax.plot(values, means, marker="o")
    x = np.asarray(values, float)
    ax.errorbar(x[has_ci], means[has_ci], yerr=errors[:, has_ci], fmt="none", capsize=3)
    if log_axis(values):
      ax.set_xscale("log")
    ax.set_xlabel(keys[0])
    ax.set_ylabel(label)
  else:
    y = np.arange(len(rows))
    fig, ax = aggregate.new_plot(figsize=(7, 1.2 + 0.45 * len(rows)))
    ax.barh(y, means)
    ax.errorbar(means[has_ci], y[has_ci], xerr=errors[:, has_ci], fmt="none", capsize=3, color="k")
    ax.set_yticks(y, [", ".join(_value(v) for v in r["point"].values()) for r in rows], fontsize=8)
    ax.invert_yaxis()  # the grid's order, top to bottom
    ax.set_ylabel(", ".join(keys), fontsize=8)
    ax.set_xlabel(label)
  numeric = ax.get_xlabel() == keys[0]
  for i in np.flatnonzero(~has_ci & np.isfinite(means)):  # say why a point has no bar
    xy = (values[i], means[i]) if numeric else (means[i], i)
    ax.annotate(
      f"n={stats[i]['n']}, no interval",
      xy,
      xytext=(0, -12) if numeric else (4, 0),
      textcoords="offset points",
      fontsize=7,
      va="center",
      ha="center" if numeric else "left",
    )
  fig.tight_layout()
  path = os.path.join(out_dir, "sweep.png")
  fig.savefig(path, dpi=100)
  return path


def run_sweep(
  config: Config | ConfigDict,
  axes: Sequence[Axis],
  seeds: Sequence[int],
  out_dir: str,
  steps: int | None = None,
  log=print,
) -> list[dict[str, Any]]:
  config = config_lib.from_data(config)  # typed, read once
  grid = points(axes)
  log(f"sweep: {len(grid)} point(s) x {len(seeds)} seed(s) in {out_dir}")
  for point in grid:
    name = point_name(point)
    if os.path.exists(os.path.join(out_dir, name, "summary.json")):
      log(f"sweep: {name} done already; skipped")
      continue
    experiment.run_experiment(  # a point without its summary was cut short: run it afresh
      with_point(config, point, steps),
      seeds,
      out_dir,
      name,
      best_policy_episodes=0,
      log=log,
      overwrite=True,
    )
  rows = summarize(out_dir, grid)
  swept = {key for key, _ in axes}
  base = "" if "env.id" in swept else f" on {config.env.id}"
  table = write_table(
    out_dir,
    rows,
    f"Sweep of {config.algorithm}{base}: " + ", ".join(f"{k} in {v}" for k, v in axes),
  )
  plot = write_plot(out_dir, rows)
  log(f"wrote {table}" + (f" and {plot}" if plot else ""))
  return rows


def _cli() -> None:
  default_config = os.path.join(CONFIGS_DIR, "cartpole_a2c.py")
  sys.argv = cli.prepare_argv(sys.argv, default_config)
  config_flags.DEFINE_config_file(
    "config", default_config, "The base config: a file or a name in configs/.", lock_config=True
  )
  flags.DEFINE_multi_string("set", [], "KEY=V1,V2,...: one axis of the grid.")
  flags.DEFINE_string("seeds", "0,1,2", "Seeds: 0,1,2 or 0-4.")
  flags.DEFINE_integer(
    "steps", None, "config.total_env_steps of every run (default: the config's)."
  )
  flags.DEFINE_string("out", "results/sweep", "Output directory.")

  def main(argv: Sequence[str]) -> None:
    logging.set_verbosity(logging.WARNING)
    if len(argv) > 1:
      raise ValueError(f"Unexpected arguments: {argv[1:]}")
    config = flags.FLAGS["config"].value
    if not flags.FLAGS["set"].value:
      raise ValueError("--set=KEY=V1,V2,... is required (the grid's axes).")
    config = config_lib.from_data(config)
    axes = [parse_axis(config, text) for text in flags.FLAGS["set"].value]
    steps = flags.FLAGS["steps"].value
    if steps is not None and steps < 1:
      raise ValueError(f"--steps must be >= 1, got {steps}.")
    run_sweep(
      config, axes, parse_seeds(flags.FLAGS["seeds"].value), flags.FLAGS["out"].value, steps
    )

  cli.answer_help(sys.argv, sys.modules[__name__])
  app.run(cli.guarded(main, experiment.RUN_FOLDER_TERMS), flags_parser=cli.parse_flags)


if __name__ == "__main__":
  _cli()
