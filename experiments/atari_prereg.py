"""Issue 56's pre-registered Atari runs (docs/results/atari_gala_hts/PREREGISTRATION.md):
run them in turn across sessions, and report what they measured so far.

  python -m experiments.atari_prereg list                     # every run and where it stands
  python -m experiments.atari_prereg run codeeps_gala_0 codeeps_allreduce_0
  python -m experiments.atari_prereg keep hts_0               # its files into the tree
  python -m experiments.atari_prereg report --out=docs/results/atari_gala_hts

`run` starts each named run with its registered command, or continues it with `--resume`
where its workdir (runs/prereg/<name>) holds a checkpoint, or first copies a checkpoint
carried in the tree (experiments/checkpoints/<name>, for a session on a new machine); a
finished run is skipped. The commands are the registration's, word for word: nothing here
chooses a setting. `keep` copies a run's small files (config, metrics, result, sittings,
evaluations) to its folder under docs/results/atari_gala_hts (`kept_folder`). `report`
writes <out>/runs.md: each run's running mean at every 0.5M agent steps, its final value,
agent steps and minutes to 18 (Pong), its evaluations and the commit each sitting ran at.
runs/ is not in git and a new machine starts without it: figures are read (`run_folder`)
from a run's workdir where it has run here, else from its copy kept in the tree.
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
from typing import Sequence

from galax.config.resume import CHANGEABLE_ON_RESUME
from galax.runtime.preemption import EXIT_PREEMPTED

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS_DIR = os.path.join(ROOT, "runs", "prereg")
CARRIED = os.path.join(ROOT, "experiments", "checkpoints")
KEPT = os.path.join(ROOT, "docs", "results", "atari_gala_hts")
KEPT_PREFIXES = (("codeeps_", "Acode_"), ("bfast_", "Bfast_"), ("bcur_", "Bcur_"))
KEPT_FILES = ("config.json", "config_changes.json", "metrics.csv", "result.json", "sittings.json")
COMMON = ["--config.checkpoint_every_steps=250000"]
BREAKOUT = [*COMMON, "--config.total_env_steps=5000000"]
PONG = [*COMMON, "--config.target_return=18", "--config.total_env_steps=6000000"]
A2C_ARM = ["--config.algorithm=a2c", "--config.hts.microbatches=0", "--config.hts.alpha=0"]
CODE_EPS = ["--config.optimizer.eps=1e-5"]  # A-code: the authors' code's RMSProp epsilon
# B-fast: hts_a2c_atari's HTS section on pong_fast (which stops at 18 or 10M by itself).
HTS_ARM = [
  "--config.algorithm=hts_a2c",
  "--config.hts.alpha=5",
  "--config.hts.delayed=True",
  "--config.hts.microbatches=5",
  "--config.hts.num_actors=1",
]
# Stops that pause a run rather than end it: `run` continues such a run.
PAUSED = (None, "preempted", "interrupted", "time limit")


def registered() -> dict[str, list[str]]:
  """Every registered run: its name and its command's arguments (after run.py)."""
  runs = {}
  for s in range(3):
    metrics = ["--config.gossip.metrics=True"] if s == 0 else []
    for arm in ("gala", "allreduce"):
      extra = metrics if arm == "gala" else []
      args = [f"--config={arm}_a2c", f"--config.seed={s}", *BREAKOUT, *extra]
      runs[f"{arm}_{s}"] = args
      runs[f"codeeps_{arm}_{s}"] = [*args, *CODE_EPS]
    runs[f"hts_{s}"] = ["--config=hts_a2c_atari", f"--config.seed={s}", *PONG]
    runs[f"a2c_{s}"] = [*runs[f"hts_{s}"], *A2C_ARM]
    runs[f"bfast_a2c_{s}"] = ["--config=pong_fast", f"--config.seed={s}", "--config.time_limit_s=0"]
    runs[f"bfast_hts_{s}"] = [*runs[f"bfast_a2c_{s}"], *HTS_ARM]
    # B-current: the authors' code's gradient point; its A2C arm is bfast_a2c_s.
    runs[f"bcur_hts_{s}"] = [*runs[f"bfast_hts_{s}"], "--config.hts.gradient_point=current"]
  runs["a2c16_0"] = ["--config=breakout_a2c", "--config.seed=0", *BREAKOUT]
  runs["codeeps_a2c16_0"] = [*runs["a2c16_0"], *CODE_EPS]
  return runs


def resume_overrides(args: Sequence[str]) -> list[str]:
  """The registered command's fields that a resume may change (galax/config/resume.py),
  passed again on `--resume` so that the saved run takes them: B-fast's A2C seed 0 ran its
  first sitting with a 30-minute time limit that its registered command lifts."""
  changeable = {f"--config.{field}" for field in CHANGEABLE_ON_RESUME}
  return [arg for arg in args if arg.split("=")[0] in changeable]


def _workdir(name: str) -> str:
  return os.path.join(RUNS_DIR, name)


def kept_folder(name: str) -> str:
  """Where run `name`'s files are kept: codeeps_gala_1 -> KEPT/Acode_gala_seed1, hts_0 ->
  B_hts_seed0, gala_0 -> A_gala_eps0.01_seed0 (Experiment A, the paper's RMSProp eps)."""
  base, _, seed = name.rpartition("_")
  if not seed.isdigit():
    return os.path.join(KEPT, name)  # not a registered name: kept under its own
  for prefix, folder in KEPT_PREFIXES:
    if base.startswith(prefix):
      return os.path.join(KEPT, f"{folder}{base[len(prefix) :]}_seed{seed}")
  experiment = "B_" if base in ("hts", "a2c") else "A_"
  suffix = "" if base in ("hts", "a2c") else "_eps0.01"
  return os.path.join(KEPT, f"{experiment}{base}{suffix}_seed{seed}")


def run_folder(name: str) -> str:
  """A run's workdir where it has run here (under way or done), else its kept copy."""
  workdir = _workdir(name)
  if os.path.exists(os.path.join(workdir, "metrics.csv")) or not os.path.isdir(kept_folder(name)):
    return workdir
  return kept_folder(name)


def keep(name: str) -> str:
  """Copies run `name`'s small files and evaluations from its workdir to kept_folder(name)
  (a file the workdir lacks is left as kept); returns the folder."""
  workdir, kept = _workdir(name), kept_folder(name)
  if not os.path.exists(os.path.join(workdir, "metrics.csv")):
    sys.exit(f"error: {name} has no metrics.csv in {workdir}: nothing to keep")
  os.makedirs(kept, exist_ok=True)
  names = [*KEPT_FILES, *map(os.path.basename, glob.glob(os.path.join(workdir, "eval_*.json")))]
  for file in names:
    if os.path.exists(os.path.join(workdir, file)):
      shutil.copy2(os.path.join(workdir, file), kept)
  return kept


def _has_checkpoint(folder: str) -> bool:
  checkpoints = os.path.join(folder, "checkpoints")
  return os.path.isdir(checkpoints) and any(n.isdigit() for n in os.listdir(checkpoints))


def status(name: str) -> str:
  workdir, folder = _workdir(name), run_folder(name)
  result = {}
  if os.path.exists(os.path.join(folder, "result.json")):
    with open(os.path.join(folder, "result.json")) as f:
      result = json.load(f)
  if result.get("stopped") not in PAUSED:
    return f"finished at {result['env_steps']:,} agent steps ({result['stopped']})"
  if _has_checkpoint(workdir):
    steps = max(int(n) for n in os.listdir(os.path.join(workdir, "checkpoints")) if n.isdigit())
    return f"checkpoint at {steps}"
  if _has_checkpoint(os.path.join(CARRIED, name)):
    return "checkpoint carried in experiments/checkpoints"
  if folder != workdir:
    return "kept in the tree, its checkpoint not here"
  if os.path.exists(os.path.join(workdir, "metrics.csv")):
    return "started, no checkpoint yet"
  return "not started"


def run(names: Sequence[str]) -> None:
  runs = registered()
  for name in names:
    if name not in runs:
      sys.exit(f"error: no registered run {name!r}: {', '.join(sorted(runs))}")
    workdir = _workdir(name)
    if status(name).startswith("finished"):
      print(f"{name}: {status(name)}: skipped")
      continue
    carried = os.path.join(CARRIED, name)
    if not _has_checkpoint(workdir) and _has_checkpoint(carried):
      shutil.copytree(carried, workdir, dirs_exist_ok=True)
    resume = _has_checkpoint(workdir)
    args = (
      [f"--workdir={workdir}", "--resume", *resume_overrides(runs[name])]
      if resume
      else [*runs[name], f"--workdir={workdir}"]
    )
    print(f"{name}: {'resuming' if resume else 'starting'}: run.py {' '.join(args)}", flush=True)
    code = _run_passing_sigterm([sys.executable, os.path.join(ROOT, "run.py"), *args])
    if code == EXIT_PREEMPTED:
      print(f"{name}: preempted (checkpoint saved); the runs after it were not started")
      sys.exit(EXIT_PREEMPTED)


def _run_passing_sigterm(command: Sequence[str]) -> int:
  """Runs `command` and returns its exit status. A SIGTERM to this process is passed on to
  the run, which then saves a checkpoint and stops (galax/runtime/preemption.py); without
  this, SIGTERM ends only this wrapper and the run trains on, orphaned."""
  child = subprocess.Popen(command)
  previous = signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
  try:
    return child.wait()
  finally:
    signal.signal(signal.SIGTERM, previous)


def _rows(name: str) -> list[dict]:
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
# The same command before d8b977b, when evaluation dropped episodic life and with it the
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
  """The Table 1 protocol's evaluations: as run since d8b977b, then as first run."""
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
      "The same command before d8b977b, whose evaluation played without the training's life",
      "handling: after a lost life nothing served Breakout's ball unless the policy pressed",
      "FIRE, which training never asked of it (envpool fires on each life's reset there).",
      "Kept as first run; a galax protocol fault, not a measure of the policies.",
      "",
      *_TABLE1_HEAD,
      *no_fire,
    ]
  return lines


def _sittings_lines() -> list[str]:
  """Each run's sittings (from which agent step, at which commit) from its sittings.json;
  runs started before run.py wrote one say so."""
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
      for s in sittings
    )
    lines.append(f"| {name} | {text} |")
  if not lines:
    return []
  return [
    "",
    "Sittings (from which agent step, at which commit; + marks uncommitted changes):",
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
    "Written by `python -m experiments.atari_prereg report`. Running mean of the last 100",
    "training games (raw score) at each mark of agent steps; blank: not reached yet.",
    "",
    "| run | status | "
    + " | ".join(f"{m / 1e6:g}M" for m in marks)
    + " | last row | to 18 (Pong) |",
    "| --- | --- | " + " | ".join("---:" for _ in marks) + " | ---: | ---: |",
  ]
  for name in registered():
    rows = _rows(name)
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
  parser.add_argument("command", choices=("list", "run", "keep", "report"))
  parser.add_argument("names", nargs="*")
  parser.add_argument("--out", default=KEPT)
  args = parser.parse_args(argv)
  if args.command == "list":
    for name, command in registered().items():
      print(f"{name:22s} {status(name):40s} run.py {' '.join(command)}")
  elif args.command == "run":
    run(args.names)
  elif args.command == "keep":
    for name in args.names:
      if name not in registered():
        sys.exit(f"error: no registered run {name!r}")
      print(f"{name}: kept in {os.path.relpath(keep(name), ROOT)}")
  else:
    report(args.out)


if __name__ == "__main__":
  main()
