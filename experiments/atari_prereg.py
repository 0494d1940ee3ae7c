"""Issue 56's pre-registered Atari runs (docs/results/atari_gala_hts/PREREGISTRATION.md):
run them in turn across sessions and keep their files (experiments/atari_prereg_report.py
reports what they measured).

  python -m experiments.atari_prereg list                     # every run and where it stands
  python -m experiments.atari_prereg run codeeps_gala_0 codeeps_allreduce_0
  python -m experiments.atari_prereg keep hts_0               # its files into the tree

`run` starts each named run with its registered command, or continues it with `--resume`
where its workdir (runs/prereg/<name>) holds a checkpoint, or first copies a checkpoint
carried in the tree (experiments/checkpoints/<name>, for a session on a new machine); a
finished run is skipped. The commands are the registration's, word for word: nothing here
chooses a setting. `keep` copies a run's small files (config, metrics, result, sittings,
evaluations) to its folder under docs/results/atari_gala_hts (`kept_folder`). runs/ is not
in git and a new machine starts without it: a run's files are read (`run_folder`) from its
workdir where it has run here, else from its copy kept in the tree.
"""

from __future__ import annotations

import argparse
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


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("command", choices=("list", "run", "keep"))
  parser.add_argument("names", nargs="*")
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


if __name__ == "__main__":
  main()
