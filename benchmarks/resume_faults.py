"""Resume fault injection: what `--resume` does to a real run in 8 scenarios.

  python -m benchmarks.resume_faults            # about a minute on 2 cores
  python -m benchmarks.fault_injection --resume_scenarios   # the same, from the kill benchmark

A non-default CartPole run (seed 3, learning rate 1e-3, no target return, a budget of its
own) is trained once through the command line; each scenario then acts on a fresh copy of
its workdir (or, for a Ctrl-C in the compile and a failed tracking start, starts afresh) and
checks that the run's config.json, checkpoints and metrics.csv are byte for
byte what they were, except where the scenario is a documented safe change
(galax/config/resume.py), and that the command ends in one line with its documented exit
status (0 done, 2 refused, 130 interrupted). It prints one row per scenario and exits 1 if
any fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = 3200  # 4 calls of 800 env steps: 10 updates x 16 envs x t_max 5
RUN = [
  "--config.env.id=gymnax/CartPole-v1",
  "--config.seed=3",
  "--config.optimizer.learning_rate=0.001",
  "--config.target_return=0",
  f"--config.total_env_steps={STEPS}",
  "--config.updates_per_call=10",
  "--config.log_every_steps=800",
  "--config.checkpoint_every_steps=1600",
  "--config.tensorboard=False",
]


def cli(*args: str, cwd: str = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
  return subprocess.run(
    [sys.executable, os.path.join(ROOT, "run.py"), *args],
    capture_output=True,
    text=True,
    cwd=cwd,
    env=env,
    timeout=300,
  )


def snapshot(workdir: str) -> dict[str, str]:
  """A digest of each file of the run's config, checkpoints and metrics."""
  found = {}
  for name in ("config.json", "metrics.csv", "checkpoints", "checkpoints.damaged"):
    top = os.path.join(workdir, name)
    files = [top] if os.path.isfile(top) else []
    for folder, _, names in os.walk(top):
      files += [os.path.join(folder, n) for n in names]
    for file in files:
      with open(file, "rb") as f:
        found[os.path.relpath(file, workdir)] = hashlib.sha256(f.read()).hexdigest()
  return found


@dataclasses.dataclass
class Outcome:
  scenario: str
  status: int
  expected_status: int
  lines: list[str]
  unchanged: bool  # the run's files byte for byte as before (or as the safe change says)
  checks: dict[str, bool]

  @property
  def ok(self) -> bool:
    return self.status == self.expected_status and self.unchanged and all(self.checks.values())


def _message(proc: subprocess.CompletedProcess) -> list[str]:
  return [line for line in proc.stderr.splitlines() if line.strip()]


def _refused(name: str, proc, before, workdir, **checks) -> Outcome:
  lines = _message(proc)
  one_line = len(lines) == 1 and lines[0].startswith("error: ")
  return Outcome(
    name, proc.returncode, 2, lines, snapshot(workdir) == before, dict(one_line=one_line, **checks)
  )


def bare_resume(workdir: str) -> Outcome:
  """The run's own config rules: its budget is spent, so nothing to do (not the default
  config's target 475 or 1M steps). Run from another working directory than the run's
  command, by absolute path: the run is found by its workdir alone."""
  before = snapshot(workdir)
  proc = cli(f"--workdir={os.path.abspath(workdir)}", "--resume", cwd=tempfile.gettempdir())
  said = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
  finished = f"already finished ({STEPS // 80} of {STEPS // 80} updates done)" in said
  return Outcome(
    "bare resume of a non-default run, from another directory",
    proc.returncode,
    0,
    [said],
    snapshot(workdir) == before,
    dict(own_budget=finished),
  )


def safe_change(workdir: str) -> Outcome:
  """More steps: config.json changes in that field alone, recorded with its step."""
  with open(os.path.join(workdir, "config.json")) as f:
    old = json.load(f)
  proc = cli(f"--workdir={workdir}", "--resume", f"--config.total_env_steps={2 * STEPS}")
  with open(os.path.join(workdir, "config.json")) as f:
    new = json.load(f)
  changes_file = os.path.join(workdir, "config_changes.json")
  recorded = json.load(open(changes_file)) if os.path.exists(changes_file) else None
  only_budget = {**old, "total_env_steps": 2 * STEPS} == new
  entry = [dict(env_steps=STEPS, field="total_env_steps", saved=STEPS, new=2 * STEPS)]
  with open(os.path.join(workdir, "result.json")) as f:
    trained = json.load(f)["env_steps"] == 2 * STEPS
  return Outcome(
    "safe change (more steps)",
    proc.returncode,
    0,
    _message(proc),
    only_budget,
    dict(recorded=recorded == entry, trained_on=trained),
  )


def unsafe_change(workdir: str) -> Outcome:
  before = snapshot(workdir)
  proc = cli(
    f"--workdir={workdir}",
    "--resume",
    "--config.optimizer.learning_rate=0.002",
    f"--config.total_env_steps={2 * STEPS}",
  )
  text = " ".join(_message(proc))
  return _refused(
    "unsafe change (learning rate)",
    proc,
    before,
    workdir,
    names_field="optimizer.learning_rate (run 0.001, command 0.002)" in text,
  )


def other_config(workdir: str) -> Outcome:
  """The first command of another run (`--config=cartpole_a2c`: seed 0, lr 7e-4)."""
  before = snapshot(workdir)
  proc = cli("--config=cartpole_a2c", f"--workdir={workdir}", "--resume")
  text = " ".join(_message(proc))
  return _refused(
    "resume naming another config",
    proc,
    before,
    workdir,
    names_seed="seed (run 3, command 0)" in text,
  )


def shape_mismatch(workdir: str) -> Outcome:
  before = snapshot(workdir)
  proc = cli(f"--workdir={workdir}", "--resume", "--config.envs_per_learner=8")
  text = " ".join(_message(proc))
  return _refused(
    "shape mismatch (envs_per_learner 16 -> 8)",
    proc,
    before,
    workdir,
    names_field="envs_per_learner (run 16, command 8)" in text,
    nothing_moved=not os.path.exists(os.path.join(workdir, "checkpoints.damaged")),
  )


def truncated_checkpoint(workdir: str) -> Outcome:
  """The newest checkpoint truncated: moved aside, the run goes on from the one before; a
  later resume with none left says where the moved ones are."""
  newest = os.path.join(workdir, "checkpoints", str(STEPS))
  for folder, _, names in os.walk(newest):
    for name in names:
      if name != "commit_success.txt" and os.path.getsize(os.path.join(folder, name)) > 64:
        with open(os.path.join(folder, name), "r+b") as f:
          f.truncate(10)
  proc = cli(f"--workdir={workdir}", "--resume", f"--config.total_env_steps={STEPS}")
  moved = os.path.isdir(os.path.join(workdir, "checkpoints.damaged", str(STEPS)))
  older = os.path.isdir(os.path.join(workdir, "checkpoints", str(STEPS // 2)))
  shutil.rmtree(os.path.join(workdir, "checkpoints"))
  os.makedirs(os.path.join(workdir, "checkpoints"))
  again = cli(f"--workdir={workdir}", "--resume")
  text = " ".join(_message(again))
  return Outcome(
    "truncated checkpoint",
    proc.returncode,
    0,
    _message(again),
    True,
    dict(
      moved_aside=moved,
      older_kept=older,
      later_points_there=(
        again.returncode == 2 and "checkpoints.damaged" in text and "move one back" in text
      ),
    ),
  )


def ctrl_c_in_compile(root: str) -> Outcome:
  """Ctrl-C before the first call finishes: nothing left behind; `--resume` would say so.

  The launch compiles afresh, without the persistent compile cache: from the cache its
  first call ends within about 0.7 s of config.json on 2 cores, which a loaded machine's
  Ctrl-C, sent once config.json is seen, could miss (the run then rightly saved that call).
  """
  workdir = os.path.join(root, "interrupted", "run")
  proc = subprocess.Popen(
    [sys.executable, os.path.join(ROOT, "run.py"), *RUN, f"--workdir={workdir}"],
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
    cwd=ROOT,
    env=dict(os.environ, JAX_ENABLE_COMPILATION_CACHE="false"),
    preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
  )
  deadline = time.time() + 120
  while not os.path.exists(os.path.join(workdir, "config.json")) and time.time() < deadline:
    time.sleep(0.05)  # written after the build, before the first (compiling) call
  proc.send_signal(signal.SIGINT)
  out, err = proc.communicate(timeout=120)
  said = out.strip().splitlines()[-1:]
  left = os.path.exists(os.path.join(root, "interrupted"))
  fresh = cli(*RUN, f"--workdir={workdir}")
  return Outcome(
    "Ctrl-C during compile",
    proc.returncode,
    130,
    said + err.splitlines()[-1:],
    True,
    dict(
      in_first_call=bool(said) and "before the first call finished" in said[0],
      no_traceback="Traceback" not in err,
      nothing_left=not left,
      fresh_run_starts=fresh.returncode == 0,
    ),
  )


def failed_tracking(root: str) -> Outcome:
  """A W&B start that fails after the build (credentials, no server): nothing left."""
  workdir = os.path.join(root, "tracked", "run")
  env = dict(
    os.environ,
    WANDB_API_KEY="x" * 40,
    WANDB_BASE_URL="http://127.0.0.1:9",
    WANDB_INIT_TIMEOUT="1",  # wandb waits this long for its server whatever the failure
    WANDB_SILENT="true",
  )
  proc = cli(*RUN, "--config.track=True", f"--workdir={workdir}", env=env)
  left = os.path.exists(os.path.join(root, "tracked"))
  lines = _message(proc)
  return Outcome(
    "failed tracking start",
    proc.returncode,
    2,
    lines,
    True,
    dict(nothing_left=not left, one_line=len(lines) == 1),
  )


SCENARIOS: list[Callable[[str], Outcome]] = [
  bare_resume,
  safe_change,
  unsafe_change,
  other_config,
  shape_mismatch,
  truncated_checkpoint,
]
FRESH_SCENARIOS: list[Callable[[str], Outcome]] = [ctrl_c_in_compile, failed_tracking]


def run_all(root: str) -> list[Outcome]:
  """Trains the run once under `root`, then every scenario on its own copy, then the
  scenarios that start afresh."""
  base = os.path.join(root, "base")
  made = cli(*RUN, f"--workdir={base}")
  if made.returncode != 0:
    raise RuntimeError(f"the base run failed: {made.stderr[-500:]}")
  outcomes = []
  for scenario in SCENARIOS:
    workdir = os.path.join(root, scenario.__name__)
    shutil.copytree(base, workdir)
    outcomes.append(_guarded(scenario, workdir))
  return outcomes + [_guarded(scenario, root) for scenario in FRESH_SCENARIOS]


def _guarded(scenario: Callable[[str], Outcome], workdir: str) -> Outcome:
  try:
    return scenario(workdir)
  except Exception as e:  # a scenario that broke: failed
    return Outcome(scenario.__name__, -1, 0, [repr(e)[:300]], False, {})


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--workdir", default="", help="where the runs go (default: a temp dir)")
  args = parser.parse_args()
  root = args.workdir or tempfile.mkdtemp(prefix="galax_resume_faults_")
  start = time.time()
  outcomes = run_all(root)
  for o in outcomes:
    failed = [k for k, v in o.checks.items() if not v]
    print(
      f"{'ok  ' if o.ok else 'FAIL'} {o.scenario:42s} exit {o.status} (expected "
      f"{o.expected_status}); files {'as expected' if o.unchanged else 'CHANGED'}"
      f"{'; failed: ' + ', '.join(failed) if failed else ''}; said: {o.lines[-1:] or ''}"
    )
  passed = sum(o.ok for o in outcomes)
  print(
    f"resume scenarios: {passed} of {len(outcomes)} as documented ({time.time() - start:.0f} s)"
  )
  sys.exit(0 if passed == len(outcomes) else 1)


if __name__ == "__main__":
  main()
