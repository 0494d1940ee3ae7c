"""`--help` answers and exits 0 on every script in benchmarks/ and experiments/ (absl's own
--help exited 1 on nine benchmark scripts).

Each script runs as `python -m <module> --help` would run it: `runpy` executes the module as
`__main__` with `sys.argv` = [its path, "--help"], in a process of its own. The processes
are forks of one interpreter that has imported jax, scipy and galax's config once (most
scripts' heavy imports): one start-up and a fork per script instead of an interpreter each.
The exit status is what `python -m` would exit with: SystemExit's code, 1 for any other
exception (its traceback on stderr), 0 when the module returns.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_S = 120  # one script's --help
# Imported once before the forks: what most scripts import first (the rest each imports).
PRELOAD = ("numpy", "scipy.stats", "jax", "jax.numpy", "flax.linen", "galax.config")


def _scripts(folder: str) -> list[str]:
  """The modules of `folder` that run as a script (the rest are their helpers)."""
  paths = glob.glob(os.path.join(ROOT, folder, "*.py"))
  return sorted(os.path.basename(p)[:-3] for p in paths if "__main__" in open(p).read())


BENCHMARKS, EXPERIMENTS = _scripts("benchmarks"), _scripts("experiments")


def _exit_status(module: str) -> int:
  """In a forked child: `python -m module --help`'s run, and the status it exits with."""
  import runpy
  import traceback

  sys.argv = [os.path.join(ROOT, *module.split(".")) + ".py", "--help"]
  try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      return e.code or 0
    print(e.code, file=sys.stderr)
    return 1
  except BaseException:
    traceback.print_exc()
    return 1


def _answer(module: str, out: str) -> dict:
  """`module --help` in a forked child with its stdout and stderr in files under `out`:
  {returncode, stdout, stderr}; a child still running after TIMEOUT_S is killed (-9)."""
  import signal
  import time

  paths = [os.path.join(out, f"{module}.{stream}") for stream in ("stdout", "stderr")]
  pid = os.fork()
  if pid == 0:
    code = 1
    try:
      for fd, path in zip((1, 2), paths):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
      code = _exit_status(module)
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


def _main(out: str, modules: list[str]) -> None:
  """The runner (`python this_file OUT MODULE...`): OUT/answers.json, module -> answer."""
  import importlib

  here = os.path.dirname(os.path.abspath(__file__))
  sys.path[:] = [ROOT, *(p for p in sys.path if p != here)]  # as `python -m` from ROOT
  for name in PRELOAD:
    importlib.import_module(name)
  answers = {}
  for module in modules:
    answers[module] = _answer(module, out)
    with open(os.path.join(out, "answers.json"), "w") as f:
      json.dump(answers, f)  # what was answered, should a later child take the runner down


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
  out = tmp_path_factory.mktemp("help")
  modules = [f"benchmarks.{n}" for n in BENCHMARKS] + [f"experiments.{n}" for n in EXPERIMENTS]
  runner = subprocess.run(
    [sys.executable, os.path.abspath(__file__), str(out), *modules],
    capture_output=True,
    text=True,
    cwd=ROOT,
    timeout=TIMEOUT_S * len(modules),
  )
  path = out / "answers.json"
  found = json.loads(path.read_text()) if path.exists() else {}
  return found, runner


def _check(answers, module):
  found, runner = answers
  assert module in found, (
    f"the runner stopped before it (exit {runner.returncode}):\n" + (runner.stderr[-2000:])
  )
  proc = found[module]
  assert proc["returncode"] == 0 and proc["stdout"].strip(), proc["stderr"][-1000:]


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_answers_help(answers, name):
  _check(answers, f"benchmarks.{name}")


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_answers_help(answers, name):
  _check(answers, f"experiments.{name}")


if __name__ == "__main__":
  _main(sys.argv[1], sys.argv[2:])
