"""Issue 56's pre-registered Atari runs, what they measured so far: writes <out>/runs.md.

  python -m experiments.atari_prereg_report            # docs/results/atari_gala_hts/runs.md

runs.md: each registered run's running mean at every 0.5M agent steps, its final value,
agent steps and minutes to 18 (Pong), its evaluations (GALA's Table 1 protocol), and each
sitting's commit and machine. Figures are read from a run's workdir where it has run here,
else from its copy kept in the tree (experiments/atari_prereg.py `run_folder`).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
from typing import Sequence

from .atari_prereg import KEPT, ROOT, registered, run_folder, status


def metrics_rows(name: str) -> list[dict]:
  """Run `name`'s metrics.csv rows (from `run_folder`); none where it has not run."""
  path = os.path.join(run_folder(name), "metrics.csv")
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return list(csv.DictReader(f))


def _at(rows: list[dict], steps: int) -> str:
  before = [r for r in rows if int(r["env_steps"]) <= steps]
  return (
    f"{float(before[-1]['mean_return']):.2f}"
    if before and steps <= int(rows[-1]["env_steps"])
    else ""
  )


def first_row_at(rows: list[dict], target: float) -> dict | None:
  """The first metrics row whose running mean reaches `target`, or None."""
  for r in rows:
    if r["mean_return"] and float(r["mean_return"]) >= target:
      return r
  return None


def _to_target(rows: list[dict], target: float) -> str:
  r = first_row_at(rows, target)
  return f"{int(r['env_steps']):,} ({float(r['wall_time_s']) / 60:.1f} min)" if r else ""


# The registration's Table 1 protocol: 10 greedy episodes of learner 0, up to 30 no-ops.
TABLE1_EVAL = "eval_step*_10ep_greedy_learner-first_seed0.json"
# The same command before ee857f6, when evaluation dropped episodic life and with it the
# FIRE that serves Breakout's ball after a lost life: kept under this name.
TABLE1_EVAL_NO_FIRE = "eval_step*_10ep_greedy_learner-first_seed0.no-fire.json"
ATARI_LIMIT = 27_000  # envpool's Atari time limit in agent steps (108,000 frames), as run


def _table1_rows(pattern: str, finished_without: str = "") -> list[str]:
  """Rows of the evaluations named `pattern` in the runs' folders (the newest step each); a
  finished run named `finished_without`* that has none gets a row saying so."""
  lines = []
  for name in registered():
    folder = run_folder(name)
    found = glob.glob(os.path.join(folder, pattern))
    missing = not found and finished_without and name.startswith(finished_without)
    if missing and status(name).startswith("finished"):
      lines.append(f"| {name} | | no evaluation file in {os.path.relpath(folder, ROOT)} | | |")
    if not found:
      continue
    with open(max(found, key=lambda p: int(os.path.basename(p)[10:].split("_")[0]))) as f:
      e = json.load(f)
    capped = sum(n >= ATARI_LIMIT for n in e["lengths"])
    returns = " ".join(f"{r:g}" for r in e["returns"])
    lines.append(
      f"| {name} | {e['step']:,} | {e['mean_return']:.1f} +- {e['stderr']:.1f} | {returns} "
      f"| {capped} of {e['episodes']} |"
    )
  return lines


# Every learner's (and the learners' mean's) evaluation under the same protocol.
SPREAD_EVAL = "eval_step*_10ep_greedy_learner-*_seed0.json"


def _spread_lines() -> list[str]:
  """GALA's learners one by one and their average (x-bar), where a run has them."""
  lines = []
  for name in registered():
    found = glob.glob(os.path.join(run_folder(name), SPREAD_EVAL))
    if len(found) < 2:
      continue
    records = []
    for path in found:
      with open(path) as f:
        records.append(json.load(f))
    order = lambda e: {"first": "0", "average": "~"}.get(e["learner"], e["learner"])
    for e in sorted(records, key=order):
      learner = "0" if e["learner"] == "first" else e["learner"]
      lines.append(f"| {name} | {learner} | {e['mean_return']:.1f} +- {e['stderr']:.1f} |")
  if not lines:
    return []
  return [
    "",
    "The spread of the learners (same protocol, each learner and the learners' mean",
    "parameters, `--learner=K` / `--learner=average`):",
    "",
    "| run | learner | mean +- s.e. |",
    "| --- | --- | ---: |",
    *lines,
  ]


_TABLE1_HEAD = [
  "| run | step | mean +- s.e. | returns | episodes cut at 27,000 agent steps |",
  "| --- | ---: | ---: | --- | --- |",
]


def _table1_lines() -> list[str]:
  """The Table 1 protocol's evaluations: as run since ee857f6, then as first run."""
  fixed, no_fire = _table1_rows(TABLE1_EVAL, "codeeps_"), _table1_rows(TABLE1_EVAL_NO_FIRE)
  lines = []
  if fixed:
    lines += [
      "",
      "Table 1 protocol (`python -m galax.evaluate --workdir=runs/prereg/<run> --episodes=10`:",
      "learner 0, greedy, up to 30 no-ops, raw score of full games to the env's time limit,",
      "lives handled as in training, so the ball is served after a lost life); mean +-",
      "standard error over the 10 episodes. No verdict below 3 runs an arm.",
      "",
      *_TABLE1_HEAD,
      *fixed,
      *_spread_lines(),
    ]
  if no_fire:
    lines += [
      "",
      "The same command before ee857f6, whose evaluation played without the training's life",
      "handling: after a lost life nothing served Breakout's ball unless the policy pressed",
      "FIRE, which training never asked of it (envpool fires on each life's reset there).",
      "Kept as first run; a galax protocol fault, not a measure of the policies.",
      "",
      *_TABLE1_HEAD,
      *no_fire,
    ]
  return lines


def _machine(sitting: dict) -> str:
  """` on <cpu>, <cores> cores, <isa>, jax <version>`, or nothing where the sitting predates
  sittings.json's `machine`. Runs of one seed are alike bit for bit only on one machine."""
  m = sitting.get("machine")
  if not m:
    return ""
  isa = " ".join(m.get("isa") or []) or "no listed ISA flags"
  return f" on {m['cpu']}, {m['cores']} cores, {isa}, {m['backend']}, jax {m['jax']}"


def _sittings_lines() -> list[str]:
  """Each run's sittings (from which agent step, at which commit, on which machine) from its
  sittings.json; runs started before run.py wrote one say so."""
  lines = []
  for name in registered():
    folder = run_folder(name)
    if not os.path.exists(os.path.join(folder, "metrics.csv")):
      continue
    path = os.path.join(folder, "sittings.json")
    if not os.path.exists(path):
      lines.append(f"| {name} | none kept (started before run.py wrote one, or not copied) |")
      continue
    with open(path) as f:
      sittings = json.load(f)
    text = ", ".join(
      f"{s['env_steps']:,} at {(s.get('commit') or '?')[:7]}{'+' if s.get('dirty') else ''}"
      f"{_machine(s)}"
      for s in sittings
    )
    lines.append(f"| {name} | {text} |")
  if not lines:
    return []
  return [
    "",
    "Sittings (from which agent step, at which commit, on which machine where recorded; +",
    "marks uncommitted changes):",
    "",
    "| run | sittings |",
    "| --- | --- |",
    *lines,
  ]


def report(out: str) -> None:
  marks = [500_000 * k for k in range(1, 13)]
  lines = [
    "# Issue 56's pre-registered runs: where they stand",
    "",
    "Written by `python -m experiments.atari_prereg_report`. Running mean of the last 100",
    "training games (raw score) at each mark of agent steps; blank: not reached yet.",
    "",
    "| run | status | "
    + " | ".join(f"{m / 1e6:g}M" for m in marks)
    + " | last row | to 18 (Pong) |",
    "| --- | --- | " + " | ".join("---:" for _ in marks) + " | ---: | ---: |",
  ]
  for name in registered():
    rows = metrics_rows(name)
    if not rows:
      continue
    last = f"{float(rows[-1]['mean_return']):.2f} at {int(rows[-1]['env_steps']):,}"
    cells = " | ".join(_at(rows, m) for m in marks)
    target = _to_target(rows, 18.0) if name.startswith(("hts", "a2c_", "bfast_")) else ""
    lines.append(f"| {name} | {status(name)} | {cells} | {last} | {target} |")
  lines += _table1_lines() + _sittings_lines()
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, "runs.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--out", default=KEPT)
  report(parser.parse_args(argv).out)


if __name__ == "__main__":
  main()
