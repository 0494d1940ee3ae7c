"""Curves and a table from `run.py` workdirs: return against minutes and agent steps.

  python -m benchmarks.atari_curves runs/pong_* --out docs/results/pong --target 18

For each workdir (its metrics.csv, config.json and result.json, as `python run.py` writes
them) the table gives: the setting (the workdir's name), seed, agent steps, wall minutes
of training (compile included: metrics.csv's train_time_s), steady agent steps/s, the
running mean return (last 100 full games) at the end, the best one, and the minutes and
agent steps at which it first reached --target ('-' where it never did). The workdir's
metrics.csv, config.json and result.json are copied to <out>/<name>/ so that the figures
can be re-drawn; <out>/curves.png has two panels (return vs minutes, vs agent steps).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
from typing import Sequence

KEPT_FILES = ("metrics.csv", "config.json", "result.json")


def read_curve(workdir: str) -> list[dict[str, float]]:
  """metrics.csv rows as floats (env_steps, mean_return, train_time_s, steps_per_second),
  from the first row with a finished game (a finite running mean) on."""
  with open(os.path.join(workdir, "metrics.csv")) as f:
    rows = list(csv.DictReader(f))
  keys = ("env_steps", "mean_return", "train_time_s", "steps_per_second")
  curve = [{k: float(r[k]) for k in keys if r.get(k) not in (None, "")} for r in rows]
  return [row for row in curve if math.isfinite(row.get("mean_return", math.nan))]


def first_reaching(curve: Sequence[dict[str, float]], target: float) -> dict[str, float] | None:
  return next((row for row in curve if row.get("mean_return", -1e9) >= target), None)


def summary(name: str, workdir: str, target: float) -> dict[str, object]:
  curve = read_curve(workdir)
  with open(os.path.join(workdir, "config.json")) as f:
    config = json.load(f)
  last, hit = curve[-1], first_reaching(curve, target)
  rates = [r["steps_per_second"] for r in curve[1:] if "steps_per_second" in r]
  if not rates and len(curve) > 1:  # a curve of (steps, return, time) alone: its slope
    first = curve[0]
    rates = [
      (last["env_steps"] - first["env_steps"]) / (last["train_time_s"] - first["train_time_s"])
    ]
  return dict(
    name=name,
    seed=config.get("seed"),
    steps=int(last["env_steps"]),
    minutes=last["train_time_s"] / 60,
    steps_per_s=sum(rates) / max(len(rates), 1),
    final=last["mean_return"],
    best=max(r["mean_return"] for r in curve),
    target_minutes=None if hit is None else hit["train_time_s"] / 60,
    target_steps=None if hit is None else int(hit["env_steps"]),
    curve=curve,
  )


def table(rows: Sequence[dict[str, object]], target: float) -> str:
  head = (
    f"| setting | seed | agent steps | minutes | steps/s | return at end | best | "
    f"minutes to {target:g} | agent steps to {target:g} |"
  )
  lines = [head, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
  for r in rows:
    to_min = "-" if r["target_minutes"] is None else f"{r['target_minutes']:.1f}"
    to_steps = "-" if r["target_steps"] is None else f"{r['target_steps']:,}"
    lines.append(
      f"| {r['name']} | {r['seed']} | {r['steps']:,} | {r['minutes']:.1f} | "
      f"{r['steps_per_s']:.0f} | {r['final']:.2f} | {r['best']:.2f} | {to_min} | "
      f"{to_steps} |"
    )
  return "\n".join(lines)


def plot(rows: Sequence[dict[str, object]], path: str, target: float) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, (by_time, by_steps) = plt.subplots(1, 2, figsize=(12, 4.5))
  for r in rows:
    curve = r["curve"]
    returns = [c["mean_return"] for c in curve]
    by_time.plot([c["train_time_s"] / 60 for c in curve], returns, label=r["name"])
    by_steps.plot([c["env_steps"] / 1e6 for c in curve], returns, label=r["name"])
  for ax, xlabel in (
    (by_time, "training minutes (compile included)"),
    (by_steps, "agent steps (M; x4 frames)"),
  ):
    ax.axhline(target, color="gray", linestyle=":")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean return, last 100 games")
    ax.grid(alpha=0.3)
  by_steps.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=110)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("workdirs", nargs="+")
  parser.add_argument("--out", required=True)
  parser.add_argument("--target", type=float, default=18.0)
  args = parser.parse_args()
  os.makedirs(args.out, exist_ok=True)
  rows = []
  for workdir in args.workdirs:
    name = os.path.basename(os.path.normpath(workdir))
    rows.append(summary(name, workdir, args.target))
    os.makedirs(os.path.join(args.out, name), exist_ok=True)
    for kept in KEPT_FILES:
      source, target = os.path.join(workdir, kept), os.path.join(args.out, name, kept)
      if os.path.exists(source) and not (
        os.path.exists(target) and os.path.samefile(source, target)
      ):
        shutil.copy(source, target)  # (a workdir already under --out is redrawn as it is)
  text = table(rows, args.target)
  with open(os.path.join(args.out, "runs.md"), "w") as f:
    f.write(text + "\n")
  plot(rows, os.path.join(args.out, "curves.png"), args.target)
  print(text)


if __name__ == "__main__":
  main()
