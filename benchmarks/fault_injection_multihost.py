"""Fault injection in a 2-process job: kill one process at random, restart both, check it.

  python -m benchmarks.fault_injection_multihost                 # 10 kills per combine mode
  python -m benchmarks.fault_injection_multihost --kills=3 --combines=gossip

A 2-process CPU job (2 devices each, 4 learners x 4 envs, CartPole A2C, `--config.combine`
gossip then allreduce) checkpoints and logs a row after every call. Each round, 0-3 s after
the launch's first progress row, one process chosen at random gets SIGKILL or SIGTERM
(chosen at random). Then:

* SIGTERM: both processes must save the same call and exit 143 (preemption);
* SIGKILL: the survivor must exit 75 with one `error:` line (a lost peer), and the time
  from the kill to its exit is recorded.

Both processes are then restarted with `--resume`. At the end it checks: every restart
resumed; metrics.csv steps strictly increasing; the run reached its planned step (exit 0,
result.json); every checkpoint directory has orbax's commit marker (none half-written).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROCESSES = 2
STEPS_PER_CALL = 400  # 4 learners x 4 envs x t_max 5 x 5 updates
EXIT_PREEMPTED, EXIT_LOST_PEER = 143, 75


def free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def launch(
  workdir: str, combine: str, total: int, resume: bool, round_index: int, peer_timeout_s: float
) -> list[subprocess.Popen]:
  port = free_port()
  env = dict(
    os.environ,
    XLA_FLAGS="--xla_force_host_platform_device_count=2",
    JAX_PLATFORMS="cpu",
    PYTHONUNBUFFERED="1",
  )
  args = [
    "--config=cartpole_a2c",
    "--config.updates_per_call=5",
    f"--config.total_env_steps={total}",
    f"--config.log_every_steps={STEPS_PER_CALL}",
    f"--config.checkpoint_every_steps={STEPS_PER_CALL}",
    "--config.target_return=0",
    "--config.tensorboard=False",
    "--config.num_learners=4",
    "--config.envs_per_learner=4",
    f"--config.combine={combine}",
    "--config.distributed=True",
    f"--peer_timeout_s={peer_timeout_s}",
    f"--coordinator_address=localhost:{port}",
    f"--num_processes={PROCESSES}",
    f"--workdir={workdir}",
    *(["--resume"] * resume),
  ]
  procs = []
  for i in range(PROCESSES):
    with open(os.path.join(workdir, f"round{round_index}.process{i}.log"), "w") as out:
      procs.append(
        subprocess.Popen(
          [sys.executable, os.path.join(ROOT, "run.py"), *args, f"--process_id={i}"],
          stdout=out,
          stderr=subprocess.STDOUT,
          env=env,
          cwd=ROOT,
        )
      )
  return procs


def rows(workdir: str) -> list[int]:
  path = os.path.join(workdir, "metrics.csv")
  if not os.path.exists(path):
    return []
  with open(path, newline="") as f:
    return [int(r["env_steps"]) for r in csv.DictReader(f)]


def wait_for_new_row(workdir: str, procs, after: int, timeout: float = 300) -> bool:
  end = time.time() + timeout
  while time.time() < end and all(p.poll() is None for p in procs):
    steps = rows(workdir)
    if steps and steps[-1] > after:
      return True
    time.sleep(0.05)
  return False


def half_written(workdir: str) -> list[str]:
  """Step directories without orbax's commit marker."""
  directory = os.path.join(workdir, "checkpoints")
  if not os.path.isdir(directory):
    return []
  return [
    n
    for n in os.listdir(directory)
    if n.isdigit() and not os.path.exists(os.path.join(directory, n, "commit_success.txt"))
  ]


def log_text(workdir: str, round_index: int, process: int) -> str:
  with open(os.path.join(workdir, f"round{round_index}.process{process}.log")) as f:
    return f.read()


def one_round(
  workdir: str,
  combine: str,
  total: int,
  round_index: int,
  kill: bool,
  rng: random.Random,
  peer_timeout_s: float,
) -> dict:
  resume = (
    any(n.isdigit() for n in os.listdir(os.path.join(workdir, "checkpoints")))
    if os.path.isdir(os.path.join(workdir, "checkpoints"))
    else False
  )
  before = rows(workdir)
  procs = launch(workdir, combine, total, resume, round_index, peer_timeout_s)
  record = dict(round=round_index, resumed=resume)
  if kill and wait_for_new_row(workdir, procs, before[-1] if before else 0):
    time.sleep(rng.uniform(0.0, 3.0))
    victim, how = rng.randrange(PROCESSES), rng.choice([signal.SIGKILL, signal.SIGTERM])
    if procs[victim].poll() is None:
      procs[victim].send_signal(how)
      killed_at = time.monotonic()
      record.update(victim=victim, signal=signal.Signals(how).name)
      survivor = procs[1 - victim]
      survivor.wait(timeout=300)
      record["survivor_exit_s"] = round(time.monotonic() - killed_at, 1)
  for p in procs:
    p.wait(timeout=300)
  record["exits"] = [p.returncode for p in procs]
  texts = [log_text(workdir, round_index, i) for i in range(PROCESSES)]
  record["resumed_line"] = any(re.search(r"^resumed from ", t, re.M) for t in texts)
  record["error_lines"] = [sum(l.startswith("error:") for l in t.splitlines()) for t in texts]
  return record


def expected(record: dict) -> bool:
  """Whether a round's exits are what its kill calls for."""
  if "signal" not in record:
    return record["exits"] == [0] * PROCESSES
  victim = record["victim"]
  if record["signal"] == "SIGTERM":  # both save the same call
    return record["exits"] == [EXIT_PREEMPTED] * PROCESSES
  survivor = record["exits"][1 - victim]
  return survivor == EXIT_LOST_PEER and record["error_lines"][1 - victim] == 1


def run_mode(
  root: str, combine: str, kills: int, total: int, seed: int, peer_timeout_s: float
) -> bool:
  workdir = os.path.join(root, combine)
  os.makedirs(workdir, exist_ok=True)
  rng, records, start = random.Random(seed), [], time.time()
  for i in range(kills + 1):
    record = one_round(
      workdir, combine, total, i, kill=i < kills, rng=rng, peer_timeout_s=peer_timeout_s
    )
    records.append(record)
    print(f"{combine} round {i}: {json.dumps(record)}", flush=True)
  killed = [r for r in records if "signal" in r]
  restarts = records[1:]
  steps = rows(workdir)
  with open(os.path.join(workdir, "result.json")) as f:
    finished = records[-1]["exits"] == [0, 0] and json.load(f)["env_steps"] == total
  checks = dict(
    every_restart_resumed=all(r["resumed"] and r["resumed_line"] for r in restarts),
    exits_as_expected=all(expected(r) for r in records),
    steps_strictly_increasing=all(a < b for a, b in zip(steps, steps[1:])),
    reached_planned_step=finished and bool(steps) and steps[-1] == total,
    no_half_written_checkpoint=not half_written(workdir),
  )
  lost = [r["survivor_exit_s"] for r in killed if r["signal"] == "SIGKILL"]
  terms = [r["survivor_exit_s"] for r in killed if r["signal"] == "SIGTERM"]
  print(
    f"{combine}: {len(killed)} kills ({len(lost)} SIGKILL, {len(terms)} SIGTERM; victims "
    f"{[r['victim'] for r in killed]}), {len(restarts)} restarts; survivor exit after a "
    f"SIGKILL: max {max(lost, default=float('nan')):.1f} s; both saved and exited after a "
    f"SIGTERM: max {max(terms, default=float('nan')):.1f} s; "
    + "; ".join(f"{k}: {v}" for k, v in checks.items())
    + f" ({time.time() - start:.0f} s, {workdir})",
    flush=True,
  )
  return all(checks.values())


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--kills", type=int, default=10)
  parser.add_argument("--combines", default="gossip,allreduce")
  parser.add_argument("--total_env_steps", type=int, default=24_000)
  parser.add_argument("--peer_timeout_s", type=float, default=10.0)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--workdir", default="")
  args = parser.parse_args()
  root = args.workdir or tempfile.mkdtemp(prefix="galax_faults_mh_")
  ok = [
    run_mode(root, combine, args.kills, args.total_env_steps, args.seed + i, args.peer_timeout_s)
    for i, combine in enumerate(args.combines.split(","))
  ]
  sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
  main()
