"""Ctrl-C in a terminal: SIGINT at random times into CLI runs under a pseudo-terminal.

  python -m benchmarks.terminal_interrupts                  # 20 interrupts over 4 cases
  python -m benchmarks.terminal_interrupts --cases=pong_host --interrupts=10 --seed=3
  python -m benchmarks.fault_injection --ctrl_c             # the same, from the kill benchmark

Each run's stdout is a pseudo-terminal (`pty`), so the run takes the terminal path (the
progress bar) as a user's does. Per case, launch after launch of the same workdir, each a
`--resume` where a checkpoint exists, gets one SIGINT to its process group (what Ctrl-C
sends) at a time drawn from a seeded RNG: a quarter while the first call compiles (after
the header's `workdir` line), the rest 0-3 s after the launch's first progress row. After
each it checks:

* saved: `interrupted: saved checkpoint at step N` with N at least the last row printed
  before the signal and `<N>/commit_success.txt` written; or nothing new: `interrupted
  before the first call finished` with no row printed and the checkpoints as before;
* no `*.orbax-checkpoint-tmp*` folder anywhere in the workdir;
* the next launch (`--resume`, as the line asks) says `resumed from .../N at N env steps`
  and its first row is N + one call (one more launch after the last interrupt checks that).

Anything else counts as lost. Cases: CartPole (cartpole_a2c, scan loop), pong_fast on the
host loop, MinAtar (minatar_a2c, scan) and gossip on 4 virtual CPU devices (minatar_gala).
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import glob
import os
import pty
import random
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = ["--config.total_env_steps=100000000", "--config.target_return=0"]
COMMON += ["--config.tensorboard=False"]


@dataclasses.dataclass(frozen=True)
class Case:
  """A config and the env steps of one call (a metrics row after every call)."""

  name: str
  args: tuple[str, ...]
  steps_per_call: int
  devices: int = 1  # virtual CPU devices

  def command(self) -> list[str]:
    every = self.steps_per_call
    cadence = [f"--config.log_every_steps={every}", f"--config.checkpoint_every_steps={3 * every}"]
    return [*self.args, *COMMON, *cadence]


_CALLS, _HOST = "--config.updates_per_call", "--config.update_loop=host"
_ENVS8, _ENVS16 = "--config.envs_per_learner=8", "--config.envs_per_learner=16"
CASES = {
  c.name: c
  for c in (
    # gymnax's CartPole: its program comes from the compile cache after the first launch.
    Case(
      "cartpole",
      ("--config=cartpole_a2c", "--config.env.id=gymnax/CartPole-v1", f"{_CALLS}=10"),
      800,
    ),
    # 100 updates of 8 envs x t_max 5, each its own jitted call that donates the state.
    # XLA:CPU keeps 32 calls in flight, so the loop waits in dispatch for most of a call.
    Case("pong_host", ("--config=pong_fast", _ENVS8, f"{_CALLS}=100", _HOST), 4000),
    # 16 envs x t_max 16 x 5 updates in one scan.
    Case("minatar_scan", ("--config=minatar_a2c", _ENVS16, f"{_CALLS}=5"), 1280),
    # 4 learners x 16 envs x t_max 16 x 2 updates, one learner per device.
    Case("gossip4", ("--config=minatar_gala", f"{_CALLS}=2"), 2048, devices=4),
  )
}
DEFAULT_INTERRUPTS = dict(cartpole=5, pong_host=6, minatar_scan=5, gossip4=4)  # 20
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]")
_ROW = re.compile(r"^steps\s+(\d+) \|")


class Terminal:
  """A run whose stdout and stderr are a pseudo-terminal; `lines()` what it printed."""

  def __init__(self, argv: list[str], env: dict[str, str]):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    self.proc = subprocess.Popen(
      argv,
      stdin=slave,
      stdout=slave,
      stderr=slave,
      cwd=ROOT,
      env=env,
      start_new_session=True,  # its own process group, as a terminal's foreground job
      # A child inherits an ignored SIGINT (a pytest-xdist worker may ignore it).
      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(slave)
    self.master, self.raw = master, b""

  def pump(self, timeout: float = 0.05) -> None:
    if select.select([self.master], [], [], timeout)[0]:
      try:
        self.raw += os.read(self.master, 1 << 16)
      except OSError:  # the run ended (EIO)
        time.sleep(timeout)

  def lines(self) -> list[str]:
    text = _ANSI.sub("", self.raw.decode(errors="replace"))
    return [line.strip() for line in re.split(r"[\r\n]", text) if line.strip()]

  def wait_for(self, pattern: str, timeout: float) -> bool:
    """Until a line starts with `pattern`; False if the run ends or the time runs out."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and self.proc.poll() is None:
      self.pump()
      if any(line.startswith(pattern) for line in self.lines()):
        return True
    return False

  def interrupt(self) -> None:
    os.killpg(self.proc.pid, signal.SIGINT)

  def finish(self, timeout: float = 180) -> int:
    end = time.monotonic() + timeout
    while self.proc.poll() is None and time.monotonic() < end:
      self.pump()
    if self.proc.poll() is None:
      self.proc.kill()
    while select.select([self.master], [], [], 0.1)[0]:
      try:
        chunk = os.read(self.master, 1 << 16)
      except OSError:
        break
      if not chunk:
        break
      self.raw += chunk
    os.close(self.master)
    return self.proc.wait()


def rows(lines: list[str]) -> list[int]:
  return [int(m.group(1)) for m in map(_ROW.match, lines) if m]


def latest_checkpoint(workdir: str) -> int | None:
  found = glob.glob(os.path.join(workdir, "checkpoints", "*", "commit_success.txt"))
  steps = [int(os.path.basename(os.path.dirname(f))) for f in found]
  return max(steps, default=None)


def tmp_folders(workdir: str) -> list[str]:
  return glob.glob(os.path.join(workdir, "**", "*.orbax-checkpoint-tmp*"), recursive=True)


def environment(case: Case, cache_dir: str) -> dict[str, str]:
  """The launch's environment: `case.devices` CPU devices, a terminal, and a compile cache
  shared by the launches (the test suite's own, where it has one)."""
  flags = re.sub(r"--xla_force_host_platform_device_count=\d+", "", os.environ.get("XLA_FLAGS", ""))
  flags += f" --xla_force_host_platform_device_count={case.devices}"
  env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu", TERM="xterm-256color")
  env.setdefault("JAX_COMPILATION_CACHE_DIR", cache_dir)
  return env


@dataclasses.dataclass
class Trial:
  """One interrupted launch: what it resumed from, when it was hit and what it said."""

  resumed_from: int | None
  compiling: bool  # hit while its first call compiled
  delay_s: float
  status: int = 0
  last_row: int | None = None  # the last row printed before the signal
  line: str = ""  # its `interrupted` line
  saved: int | None = None  # the newest checkpoint after it
  problems: list[str] = dataclasses.field(default_factory=list)

  @property
  def outcome(self) -> str:
    if self.problems:
      return "lost"
    return "saved" if self.line.startswith("interrupted: saved") else "nothing new"


def check_resume(trial: Trial, lines: list[str], workdir: str, case: Case) -> None:
  """The launch continued from the newest checkpoint, at the next call."""
  start = trial.resumed_from
  if start is None:
    return
  where = os.path.join(workdir, "checkpoints", str(start))
  if not any(line.startswith(f"resumed from {where} at {start} env steps") for line in lines):
    trial.problems.append(f"did not resume from {start}")
  if rows(lines) and rows(lines)[0] != start + case.steps_per_call:
    trial.problems.append(f"first row {rows(lines)[0]} after resuming from {start}")


def check_interrupt(trial: Trial, lines: list[str], workdir: str, case: Case) -> None:
  said = [line for line in lines if line.startswith("interrupted")]
  trial.line = said[-1] if said else ""
  trial.saved = latest_checkpoint(workdir)
  if trial.status != 130:
    trial.problems.append(f"exit status {trial.status}")
  if tmp_folders(workdir):
    trial.problems.append(f"left {tmp_folders(workdir)}")
  saved = re.match(r"interrupted: saved checkpoint at step (\d+) ", trial.line)
  if saved:
    step = int(saved.group(1))
    if step != trial.saved or step % case.steps_per_call:
      trial.problems.append(f"said step {step}, the newest checkpoint is {trial.saved}")
    if trial.last_row is not None and step < trial.last_row:
      trial.problems.append(f"saved {step}, behind the row {trial.last_row} printed before")
  elif trial.line.startswith("interrupted before the first call finished: nothing new"):
    if trial.last_row is not None or trial.saved != trial.resumed_from:
      trial.problems.append("trained, yet said nothing new to save")
  else:
    trial.problems.append(f"said {trial.line or 'nothing'!r}")


def launch(case: Case, workdir: str, rng: random.Random, interrupt: bool) -> Trial:
  """One launch (a `--resume` where a run was started, as the interrupted line asks),
  interrupted at a random time (or, `interrupt` False, right after its first row: the last
  resume's check)."""
  start = latest_checkpoint(workdir)
  resume = ["--resume"] if os.path.exists(os.path.join(workdir, "config.json")) else []
  argv = [sys.executable, "run.py", f"--workdir={workdir}", *case.command(), *resume]
  compiling = interrupt and rng.random() < 0.25
  delay = rng.uniform(0.0, 1.5) if compiling else rng.uniform(0.0, 3.0) if interrupt else 0.0
  trial = Trial(start, compiling, delay)
  run = Terminal(argv, environment(case, os.path.join(os.path.dirname(workdir), "xla_cache")))
  if run.wait_for("workdir " if compiling else "steps ", timeout=300):
    end = time.monotonic() + delay
    while time.monotonic() < end:
      run.pump()
    trial.last_row = max(rows(run.lines()), default=None)
    run.interrupt()
  else:
    trial.problems.append("no row before the run ended or 300 s passed")
  trial.status = run.finish()
  lines = run.lines()
  check_resume(trial, lines, workdir, case)
  check_interrupt(trial, lines, workdir, case)
  if trial.problems:
    said = [line for line in lines if not line.startswith("training ")]  # the bar
    trial.problems.append("output tail: " + " / ".join(said[-4:]))
  return trial


def run_case(case: Case, interrupts: int, seed: int, root: str) -> list[Trial]:
  """`interrupts` random interrupts into one run of `case`, then one launch that checks the
  last resume; every launch's trial."""
  workdir = os.path.join(root, case.name)
  rng = random.Random(f"{seed}-{case.name}")
  return [launch(case, workdir, rng, k < interrupts) for k in range(interrupts + 1)]


def describe(trial: Trial) -> str:
  when = f"{'compiling' if trial.compiling else 'after the first row'} +{trial.delay_s:.1f} s"
  return f"{trial.outcome}: {when}, from {trial.resumed_from}, saved {trial.saved}" + (
    f" ({'; '.join(trial.problems)})" if trial.problems else ""
  )


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--cases", default=",".join(CASES), help=f"of {list(CASES)}")
  parser.add_argument("--interrupts", type=int, default=0, help="per case (0: 5-6 each)")
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--workdir", default="")
  args = parser.parse_args(argv)
  root = args.workdir or tempfile.mkdtemp(prefix="galax_ctrl_c_")
  totals = dict(trials=0, saved=0, nothing_new=0, lost=0)
  for name in args.cases.split(","):
    trials = run_case(CASES[name], args.interrupts or DEFAULT_INTERRUPTS[name], args.seed, root)
    for k, trial in enumerate(trials):
      print(f"{name} launch {k}: {describe(trial)}", flush=True)
    counted = trials[:-1]  # the last launch only checks the last resume
    lost = sum(t.outcome == "lost" for t in counted) + (trials[-1].outcome == "lost")
    saved = sum(t.outcome == "saved" for t in counted)
    nothing = sum(t.outcome == "nothing new" for t in counted)
    print(f"{name}: {len(counted)} interrupts: {saved} saved, {nothing} nothing new, {lost} lost")
    counts = dict(trials=len(counted), saved=saved, nothing_new=nothing, lost=lost)
    for key, value in counts.items():
      totals[key] += value
  print(
    f"terminal interrupts: {totals['trials']} trials, {totals['saved']} saved, "
    f"{totals['nothing_new']} nothing new since the last checkpoint, {totals['lost']} lost "
    f"(workdir {root})"
  )
  return 1 if totals["lost"] else 0


if __name__ == "__main__":
  sys.exit(main())
