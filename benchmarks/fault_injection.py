"""Fault injection: SIGKILL a CartPole run at random times, resume it each time, check it.

  python -m benchmarks.fault_injection                 # 20 kills (about 10 minutes on 2 cores)
  python -m benchmarks.fault_injection --kills=3 --total_env_steps=8000
  python -m benchmarks.fault_injection --env_id=gymnax/CartPole-v1   # gymnax's CartPole
  python -m benchmarks.fault_injection --resume_scenarios   # what --resume does in 8 cases
  python -m benchmarks.fault_injection --ctrl_c      # 20 Ctrl-Cs under a pseudo-terminal

The run checkpoints and logs a metrics row after every call (400 env steps), and each
checkpoint's final rename is slowed down (`--save_delay_s`, patched into orbax in the
child process only) so that kills also land inside saves. Every 4th kill lands during
start-up or compilation, the others 0-3 s after the launch's first progress row. After each kill the
run is restarted with `--resume` (or afresh when no checkpoint exists yet). At the end it checks:

* the run finished (exit 0, result.json at the planned step count);
* metrics.csv steps are strictly increasing, and no row is lost: every call's row is there;
* the final learner state (params, optimizer state, keys, counters) equals, bit for bit, a
  reference without kills that stops and resumes cleanly at the checkpoints the killed
  run actually resumed from. (Envs are not checkpointed: a resumed run starts fresh
  episodes, so the reference must restart its envs at the same steps.)

and prints the counts: kills, resumes, kills inside a save (orbax tmp directories left),
damaged checkpoints reported on resume, rows lost. `--resume_scenarios` runs
benchmarks/resume_faults.py instead: a bare resume from another directory, safe and unsafe
changes, another config, a shape mismatch, a truncated checkpoint, Ctrl-C during compile
and a failed tracking start, each against a real run. `--ctrl_c` runs
benchmarks/terminal_interrupts.py instead: SIGINT at random times into runs whose output is a
pseudo-terminal (the progress bar's path), on the host and scan update loops and gossip,
each checked for a checkpoint of the last whole call, no orbax tmp folder and a resume that
continues; it prints the saved and lost counts per case and in all.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS_PER_CALL = 400  # 5 updates x 16 envs x t_max 5


def run_args(total_env_steps: int) -> list[str]:
  return [
    "--config.updates_per_call=5",
    f"--config.total_env_steps={total_env_steps}",
    f"--config.log_every_steps={STEPS_PER_CALL}",
    f"--config.checkpoint_every_steps={STEPS_PER_CALL}",
    "--config.target_return=0",
    "--config.tensorboard=False",
  ]


def env_args(env_id: str) -> list[str]:
  """--config.env.id for another CartPole than the config's (envpool's)."""
  return [f"--config.env.id={env_id}"] if env_id else []


def child_main(argv: list[str]) -> None:
  """run.py with orbax's final rename of each checkpoint slowed down by $SAVE_DELAY_S."""
  import runpy

  from orbax.checkpoint._src.path import async_path

  delay, rename = float(os.environ.get("SAVE_DELAY_S", "0")), async_path.rename

  async def slow_rename(src, dst):
    await asyncio.sleep(delay)
    return await rename(src, dst)

  async_path.rename = slow_rename
  sys.argv = [os.path.join(ROOT, "run.py"), *argv]
  runpy.run_path(sys.argv[0], run_name="__main__")


def has_checkpoint(workdir: str) -> bool:
  directory = os.path.join(workdir, "checkpoints")
  return os.path.isdir(directory) and any(n.isdigit() for n in os.listdir(directory))


def tmp_dirs(workdir: str) -> set[str]:
  """Orbax's unfinished saves (a save renames its tmp directory when it completes)."""
  return set(glob.glob(os.path.join(workdir, "checkpoints", "*.orbax-checkpoint-tmp*")))


def launch(workdir: str, total: int, delay: float, log_path: str, env_id: str) -> subprocess.Popen:
  resume = ["--resume"] if has_checkpoint(workdir) else []
  env = dict(os.environ, SAVE_DELAY_S=str(delay), PYTHONUNBUFFERED="1")
  with open(log_path, "w") as out:
    return subprocess.Popen(
      [
        sys.executable,
        __file__,
        "--child",
        f"--workdir={workdir}",
        *run_args(total),
        *env_args(env_id),
        *resume,
      ],
      stdout=out,
      stderr=subprocess.STDOUT,
      env=env,
      cwd=ROOT,
    )


def progressed(log_path: str) -> bool:
  with open(log_path) as f:
    return re.search(r"^steps\s+\d+", f.read(), re.M) is not None


def wait_for_progress(proc: subprocess.Popen, log_path: str, timeout: float = 300) -> bool:
  """Waits for the first progress row of this launch; False if the process ended first."""
  end = time.time() + timeout
  while time.time() < end and proc.poll() is None:
    if progressed(log_path):
      return True
    time.sleep(0.05)
  return False


def launch_start(log_path: str) -> int | None:
  """The step a launch started training from: its restored step, 0 if it started afresh
  and trained, None if it was killed before (it saved nothing)."""
  with open(log_path) as f:
    found = re.search(r"resumed from \S+ at (\d+) env steps", f.read())
  if found:
    return int(found.group(1))
  return 0 if progressed(log_path) else None


def lineage(starts: list[int | None]) -> list[int]:
  """The resume steps the final state descends from: launch k continues the checkpoint
  saved by the latest earlier launch that started below its step (launches that never
  started training saved nothing and are skipped)."""
  chain, k = [starts[-1]], len(starts) - 1
  while chain[-1] > 0:
    k = max(j for j in range(k) if starts[j] is not None and starts[j] < chain[-1])
    chain.append(starts[k])
  return chain[::-1]


def reference_state(steps: list[int], total: int, workdir: str, env_id: str):
  """A run without kills that stops at each of `steps` and resumes (fresh envs) from it."""
  from galax.config import (
    cli,
    load,
  )
  from galax.training.loop import train

  config = load("cartpole_a2c", **({"env__id": env_id} if env_id else {}))
  for arg in run_args(total):
    key, value = arg[len("--config.") :].split("=")
    assert cli.unknown_override(config, key) is None
    config[key] = type(config[key])(value) if value != "False" else False
  for i, stop in enumerate([*steps[1:], total]):
    config.total_env_steps = stop
    result = train(config, workdir=workdir, resume=i > 0, log=lambda _: None)
  return result.state


def saved_state(workdir: str, template):
  from galax.runtime import checkpoint as ckpt_lib

  checkpointer = ckpt_lib.Checkpointer(os.path.join(workdir, "checkpoints"))
  state, _ = checkpointer.restore(template, warn=print)
  checkpointer.close()
  return state


def check_metrics(workdir: str, total: int) -> tuple[bool, int]:
  """(steps strictly increasing, rows lost) of metrics.csv."""
  import csv

  with open(os.path.join(workdir, "metrics.csv"), newline="") as f:
    steps = [int(r["env_steps"]) for r in csv.DictReader(f)]
  increasing = all(a < b for a, b in zip(steps, steps[1:]))
  expected = set(range(STEPS_PER_CALL, total + 1, STEPS_PER_CALL))
  return increasing, len(expected - set(steps))


def inject(kills: int, total: int, delay: float, seed: int, workdir: str, env_id: str) -> dict:
  rng = random.Random(seed)
  counts = dict(kills=0, resumes=0, kills_in_startup=0, kills_in_save=0, damaged_reported=0)
  starts = []
  for launch_index in range(kills + 1):
    log_path = os.path.join(workdir, f"launch{launch_index}.log")
    resuming, tmp_before = has_checkpoint(workdir), tmp_dirs(workdir)
    proc = launch(workdir, total, delay, log_path, env_id)
    if launch_index < kills:
      if launch_index % 4 == 3:  # every 4th: during start-up / compilation
        time.sleep(rng.uniform(0.5, 8.0))
      elif wait_for_progress(proc, log_path):
        time.sleep(rng.uniform(0.0, 3.0))
      if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        counts["kills"] += 1
        counts["kills_in_startup"] += not progressed(log_path)
      proc.wait()
      counts["kills_in_save"] += bool(tmp_dirs(workdir) - tmp_before)
    else:
      proc.wait()
    counts["resumes"] += resuming
    with open(log_path) as f:
      counts["damaged_reported"] += f.read().count("is damaged")
    starts.append(launch_start(log_path))
    started = "killed before training" if starts[-1] is None else f"from step {starts[-1]}"
    print(f"launch {launch_index}: {started}, exit {proc.returncode}", flush=True)
  counts.update(final_exit=proc.returncode, starts=starts)
  return counts


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--kills", type=int, default=20)
  parser.add_argument("--total_env_steps", type=int, default=40_000)
  parser.add_argument("--save_delay_s", type=float, default=0.2)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--workdir", default="")
  parser.add_argument(
    "--env_id", default="", help="another CartPole (default: the config's, envpool's)"
  )
  parser.add_argument("--resume_scenarios", action="store_true", help="resume_faults.py's cases")
  parser.add_argument(
    "--ctrl_c", action="store_true", help="terminal_interrupts.py's Ctrl-Cs in a terminal"
  )
  args = parser.parse_args()
  if args.ctrl_c:
    from benchmarks import terminal_interrupts

    sys.exit(terminal_interrupts.main(["--seed", str(args.seed), "--workdir", args.workdir]))
  if args.resume_scenarios:
    from benchmarks import resume_faults

    sys.argv = [sys.argv[0]] + ([f"--workdir={args.workdir}"] if args.workdir else [])
    resume_faults.main()
  root = args.workdir or tempfile.mkdtemp(prefix="galax_faults_")
  killed, reference = os.path.join(root, "killed"), os.path.join(root, "reference")
  os.makedirs(killed, exist_ok=True)
  start = time.time()
  counts = inject(
    args.kills, args.total_env_steps, args.save_delay_s, args.seed, killed, args.env_id
  )

  import json

  import jax
  import numpy as np

  from galax.parallel.layout import to_host

  with open(os.path.join(killed, "result.json")) as f:
    finished = counts["final_exit"] == 0 and json.load(f)["env_steps"] == args.total_env_steps
  increasing, rows_lost = check_metrics(killed, args.total_env_steps)
  chain = lineage(counts["starts"])
  expected = reference_state(chain, args.total_env_steps, reference, args.env_id)
  actual = saved_state(killed, expected)
  # What a checkpoint holds: the training state without the envs (not checkpointed here).
  pairs = zip(
    jax.tree.leaves(to_host(expected.replace(env_state=()))),
    jax.tree.leaves(to_host(actual.replace(env_state=()))),
  )
  bitwise = all(np.array_equal(a, b) for a, b in pairs)
  print(
    f"fault injection: {counts['kills']} kills ({counts['kills_in_startup']} during "
    f"start-up, {counts['kills_in_save']} inside a checkpoint save), {counts['resumes']} "
    f"resumes, {counts['damaged_reported']} damaged checkpoints reported on resume; "
    f"run finished: {finished}; metrics steps strictly increasing: {increasing}; rows "
    f"lost: {rows_lost}; final state bitwise equal to the reference resumed at "
    f"{chain[1:]}: {bitwise} ({time.time() - start:.0f} s, workdir {root})"
  )
  sys.exit(0 if finished and increasing and not rows_lost and bitwise else 1)


if __name__ == "__main__":
  if sys.argv[1:2] == ["--child"]:
    child_main(sys.argv[2:])
  else:
    main()
