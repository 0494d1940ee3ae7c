"""The README's commands run: every command of its code blocks names a config, module, script
or extra that exists, with flags the command defines; the quickstart's Pong path (train,
resume, evaluate with a video) runs for real at a tiny step count (slow). Installs never
fetch the unrelated PyPI `galax`."""

import functools
import glob
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib

import nbformat
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GALAX = ("galax", "python run.py", "python -m galax")  # one command, three spellings
SHELL = {".", "source", "cd", "export"}  # shell built-ins: nothing to check


def _read(path):
  with open(os.path.join(ROOT, path)) as f:
    return f.read()


def _pyproject():
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)


def shell_blocks(text):
  """The bodies of a markdown page's ```bash / ```sh code blocks."""
  return re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", text, re.S | re.M)


def commands(text):
  """Each command of the page's shell blocks as (environment assignments, words), one per
  `&&`-joined part of a line, comments dropped."""
  found = []
  for block in shell_blocks(text):
    for line in block.splitlines():
      words = shlex.split(line, comments=True)
      while words:
        part = words[: words.index("&&")] if "&&" in words else words
        words = words[len(part) + 1 :]
        env = {}
        while part and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", part[0]):
          key, _, value = part.pop(0).partition("=")
          env[key] = value
        if part:
          found.append((env, part))
  return found


def _entry(words):
  """(the program as README spells it: 'galax', 'python -m mod', 'python x.py', ...), args."""
  if words[0] in ("python", "python3") and len(words) > 2 and words[1] == "-m":
    return f"python -m {words[2]}", words[3:]
  if words[0] in ("python", "python3") and len(words) > 1 and words[1].endswith(".py"):
    return f"python {words[1]}", words[2:]
  return words[0], words[1:]


def _help(program):
  """The flags `program --help` lists (absl: `--name:` and `--[no]name:`)."""
  return _module_flags("galax" if program in GALAX else program.split()[-1])


@functools.cache
def _module_flags(module):
  """The flags `python -m module --help` lists: one subprocess per module, however the
  README spells the command (GALAX's three spellings are one)."""
  out = subprocess.run(
    [sys.executable, "-m", module, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120
  )
  assert out.returncode == 0, out.stderr[-2000:]
  return set(re.findall(r"^\s+--(?:\[no\])?([\w.]+):", out.stdout, re.M))


@functools.cache
def _config_fields(name):
  """The fields `galax --help_config=NAME` lists."""
  out = subprocess.run(
    [sys.executable, "-m", "galax", f"--help_config={name}"],
    capture_output=True,
    text=True,
    cwd=ROOT,
    timeout=120,
  )
  assert out.returncode == 0, f"galax --help_config={name}: {out.stderr[-2000:]}"
  return set(re.findall(r"^  ([\w.]+) = ", out.stdout, re.M))


def _flags(args):
  """{name: value} of the --name[=value] arguments (absl's --noname as name=false)."""
  flags = {}
  for arg in args:
    assert arg.startswith("--"), f"positional argument {arg!r}: give it as --name=value"
    name, _, value = arg[2:].partition("=")
    flags[name] = value
  return flags


def _extras(command):
  """The extras a `pip install` line asks of galax ('.[test,gpu]' -> {'test', 'gpu'})."""
  names = set()
  for word in shlex.split(command, comments=True)[2:]:
    match = re.fullmatch(r"(?:\.|galax-rl|galax-rl @ \S+)\[([\w,-]*)\]", word)
    if match:
      names |= set(match.group(1).split(","))
  return names


def problems(env, words):
  """What is wrong with one README command: [] when its program, config, module, script,
  extras and flags exist."""
  program, args = _entry(words)
  found = []
  if "XLA_FLAGS" in env and not re.fullmatch(
    r"--xla_force_host_platform_device_count=\d+", env["XLA_FLAGS"]
  ):
    found.append(f"XLA_FLAGS={env['XLA_FLAGS']}")
  if program in GALAX:
    flags = _flags(args)
    name = flags.get("config") or flags.get("help_config") or "cartpole_a2c"
    if not os.path.exists(os.path.join(ROOT, "configs", f"{name}.py")):
      found.append(f"no config {name!r} in configs/")
      return found
    known = _help(program) | {"help_config", "version", "help"}
    for flag in flags:
      if flag.startswith("config."):
        if flag[len("config.") :] not in _config_fields(name):
          found.append(f"config {name} has no field {flag}")
      elif flag not in known:
        found.append(f"galax has no flag --{flag}")
  elif program == "python -m pytest":
    paths = [a for a in args if not a.startswith("-") and not re.fullmatch(r"\d+|not slow", a)]
    found += [f"no test path {p}" for p in paths if not os.path.exists(os.path.join(ROOT, p))]
  elif program.startswith("python -m "):
    module = program.split()[-1]
    if module == "venv":
      return found
    if importlib.util.find_spec(module) is None:
      return [f"no module {module}"]
    known = _help(program) | {"help"}
    found += [f"{program} has no flag --{f}" for f in _flags(args) if f not in known]
  elif program.startswith("python "):
    script = program.split()[-1]
    if not os.path.exists(os.path.join(ROOT, script)):
      found.append(f"no script {script}")
  elif program == "pip":
    extras = set(_pyproject()["project"]["optional-dependencies"])
    found += [f"no extra [{e}]" for e in _extras(shlex.join(words)) - extras]
  elif program == "tensorboard":
    if shutil.which("tensorboard") is None:
      found.append("tensorboard is not installed by the test extra")
  elif program not in SHELL:
    found.append(f"a command this test does not know how to check: {program}")
  return found


README_COMMANDS = commands(_read("README.md"))


def test_the_readme_has_its_quickstart():
  programs = [_entry(words)[0] for _, words in README_COMMANDS]
  assert len(README_COMMANDS) >= 8 and "pip" in programs and "python -m galax.evaluate" in programs


def prose(text):
  """A markdown page without its fenced code blocks."""
  return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def test_the_readme_reads_in_five_minutes():
  """Issue 73's bounds: at most 150 lines, 40 numerals outside code blocks and 2 dates (a
  figure lives on the page that owns it; the README links there)."""
  text = _read("README.md")
  numerals = re.findall(r"\d+(?:[.,]\d+)*", prose(text))
  dates = re.findall(r"\b20\d\d-\d\d-\d\d\b", text)
  assert len(text.splitlines()) <= 150 and len(numerals) <= 40 and len(dates) <= 2, (
    len(text.splitlines()),
    numerals,
    dates,
  )


@pytest.mark.parametrize(
  "env, words", README_COMMANDS, ids=[" ".join(w)[:60] for _, w in README_COMMANDS]
)
def test_each_readme_command_names_what_exists(env, words):
  assert not problems(env, words), problems(env, words)


def test_the_check_catches_a_wrong_command():
  bad = [
    "galax --config=pong_fastest",
    "galax --config=pong_fast --config.no_such_field=1",
    "galax --config=pong_fast --no_such_flag=1",
    "python -m galax.evaluate --workdir=runs/x --no_such_flag=1",
    "python -m galax.no_such_module",
    "python no_such_script.py",
    "pip install -e '.[test,no_such_extra]'",
    "XLA_FLAGS=--xla_force_host_device_count=4 galax",
    "no_such_program --help",
  ]
  for line in bad:
    ((env, words),) = commands(f"```bash\n{line}\n```\n")
    assert problems(env, words), line
  ((env, words),) = commands("```bash\ngalax --config=pong_fast --config.seed=1  # ok\n```\n")
  assert not problems(env, words)


@pytest.mark.slow
def test_the_quickstart_pong_path_runs(tmp_path):
  # The README's Pong lines as written, in a scratch directory, with a few updates' budget
  # appended: train, resume after it, evaluate with a video.
  lines = [
    " ".join(words)
    for _, words in README_COMMANDS
    if "runs/pong" in " ".join(words) and _entry(words)[0] in (*GALAX, "python -m galax.evaluate")
  ]
  assert len(lines) == 3, lines
  budget = {
    0: ["--config.total_env_steps=800", "--config.updates_per_call=10"],
    1: ["--config.total_env_steps=1600"],
    2: ["--episodes=1"],
  }
  env = {**os.environ, "PYTHONPATH": ROOT}
  for i, line in enumerate(lines):
    words = shlex.split(line.replace("/tmp/", f"{tmp_path}/"))
    if words[0] == "galax":
      words = [sys.executable, "-m", "galax", *words[1:]]
    elif words[0] == "python":
      words[0] = sys.executable
    out = subprocess.run(
      [*words, *budget[i]], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert out.returncode == 0, f"{line}\n{out.stdout[-1500:]}\n{out.stderr[-1500:]}"
  assert (tmp_path / "runs" / "pong" / "result.json").exists()
  assert glob.glob(str(tmp_path / "runs" / "pong" / "eval_step1600*.json"))
  assert glob.glob(str(tmp_path / "pong.*"))


def test_installs_never_name_the_pypi_galax():
  # `galax` on PyPI is a different project: install from a checkout or the repository.
  name = _pyproject()["project"]["name"]
  assert name != "galax"
  # The pages a user reads for instructions (not run records, which quote what a run printed).
  pages = ["README.md", *glob.glob(os.path.join(ROOT, "docs", "*.md"))]
  pages += glob.glob(os.path.join(ROOT, "docs", "algorithms", "*.md"))
  texts = [_read(page) for page in pages]
  for notebook in glob.glob(os.path.join(ROOT, "colabs", "*.ipynb")):
    texts += [cell.source for cell in nbformat.read(notebook, as_version=4).cells]
  installs = [c for text in texts for c in re.findall(r"pip install[^`\n]*", text)]
  assert installs
  for command in installs:
    for word in shlex.split(command, comments=True)[2:]:  # "name @ url" is one word
      assert not re.fullmatch(r"galax(-rl)?(\[[\w,]*\])?", word), command
  assert f'"{name} @ git+' in _read("README.md")
