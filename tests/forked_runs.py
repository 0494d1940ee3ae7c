"""Command-line runs as `python ARGS...` would run them, each in a fork of one interpreter
that imported jax, scipy and galax's config once: one start-up for a batch instead of one an
interpreter (about 2 s of imports each on 2 cores).

A child runs its command as `python` would: `-m MODULE` through `runpy.run_module` as
`__main__` with `sys.argv` = [the module's path, ARGS...], a script path through
`runpy.run_path`. Its exit status is what `python` would exit with: SystemExit's code (a
message printed to stderr, status 1), 1 for any other exception (its traceback on stderr),
0 when the module returns. The parent never initialises a JAX backend, so the forks are
safe for what these runs do (parse flags, load a config, refuse bad input, print help).

  answers = forked_runs.run({"name": ["-m", "benchmarks.hts", "--help"]}, tmp_path)
  answers["name"]  # {"returncode": 0, "stdout": ..., "stderr": ...}
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 120  # one run
# Imported once before the forks: what most commands import first (the rest each imports).
PRELOAD = ("numpy", "scipy.stats", "jax", "jax.numpy", "flax.linen", "galax.config")
CLI_PRELOAD = (*PRELOAD, "galax.__main__")  # run.py's and `python -m galax`'s


def answer_of(proc: subprocess.CompletedProcess) -> dict[str, Any]:
  """A subprocess's result in the shape of a forked run's answer."""
  return dict(returncode=proc.returncode, stdout=proc.stdout, stderr=proc.stderr)


class RunnerStopped(AssertionError):
  """The runner died before it answered a command."""


def run(
  commands: Mapping[str, Sequence[str]],
  out: str | os.PathLike,
  *,
  env: Mapping[str, str] | None = None,
  cwd: str = ROOT,
  preload: Sequence[str] = PRELOAD,
  python_flags: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
  """Runs every command (python's arguments, e.g. ["-m", "galax.results.best", "--x"]) in
  a fork of one runner (`python *python_flags`, e.g. -S) started in `cwd` with `env`, which
  first imports `preload`; name -> {returncode, stdout, stderr}. A command the runner did
  not answer (it died first) raises RunnerStopped on access."""
  out = os.fspath(out)
  with open(os.path.join(out, "commands.json"), "w") as f:
    json.dump(dict(preload=list(preload), commands={k: list(v) for k, v in commands.items()}), f)
  runner = subprocess.run(
    [sys.executable, *python_flags, os.path.abspath(__file__), out],
    capture_output=True,
    text=True,
    cwd=cwd,
    env=None if env is None else dict(env),
    timeout=TIMEOUT_S * max(1, len(commands)),
  )
  path = os.path.join(out, "answers.json")
  found = json.load(open(path)) if os.path.exists(path) else {}
  return _Answers(found, f"exit {runner.returncode}:\n{runner.stderr[-2000:]}")


class _Answers(dict):
  def __init__(self, found: dict, runner: str):
    super().__init__(found)
    self.runner = runner

  def __missing__(self, name: str):
    raise RunnerStopped(f"the runner stopped before {name!r} ({self.runner})")


def _exit_status(argv: Sequence[str]) -> int:
  """In a forked child: `python *argv`'s run, and the status it exits with."""
  import runpy
  import traceback

  try:
    if argv[0] == "-m":
      sys.argv = [os.path.join(ROOT, *argv[1].split(".")) + ".py", *argv[2:]]
      runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
      sys.argv = list(argv)
      runpy.run_path(argv[0], run_name="__main__")
    return 0
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      return e.code or 0
    print(e.code, file=sys.stderr)
    return 1
  except BaseException:
    traceback.print_exc()
    return 1


def _answer(name: str, argv: Sequence[str], out: str) -> dict[str, Any]:
  """`python *argv` in a forked child with its stdout and stderr in files under `out`:
  {returncode, stdout, stderr}; a child still running after TIMEOUT_S is killed (-9)."""
  import signal
  import time

  paths = [os.path.join(out, f"{name}.{stream}") for stream in ("stdout", "stderr")]
  pid = os.fork()
  if pid == 0:
    code = 1
    try:
      for fd, path in zip((1, 2), paths):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
      code = _exit_status(argv)
    finally:
      sys.stdout.flush(), sys.stderr.flush()
      os._exit(code)
  end = time.monotonic() + TIMEOUT_S
  while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < end:
    time.sleep(0.01)
  if done[0] == 0:
    os.kill(pid, signal.SIGKILL)
    done = os.waitpid(pid, 0)
  code = os.waitstatus_to_exitcode(done[1])
  return dict(zip(("stdout", "stderr"), (open(p).read() for p in paths)), returncode=code)


def _main(out: str) -> None:
  """The runner (`python this_file OUT`): OUT/commands.json in, OUT/answers.json out."""
  import importlib

  here = os.path.dirname(os.path.abspath(__file__))
  sys.path[:] = [ROOT, *(p for p in sys.path if p != here)]  # as `python -m` from ROOT
  spec = json.load(open(os.path.join(out, "commands.json")))
  for module in spec["preload"]:
    importlib.import_module(module)
  answers = {}
  for i, (name, argv) in enumerate(spec["commands"].items()):
    answers[name] = _answer(f"run{i}", argv, out)
    with open(os.path.join(out, "answers.json"), "w") as f:
      json.dump(answers, f)  # what was answered, should a later child take the runner down


if __name__ == "__main__":
  _main(sys.argv[1])
