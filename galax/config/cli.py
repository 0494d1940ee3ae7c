"""What the command lines (run.py, `python -m galax.results.experiment`) share: reading `--config`
(a file or a name in configs/), checking `--config.<key>` overrides before ml_collections
sees them, and turning expected failures into one line and an exit status, in the words of
the command that ran (or, from Python, of the API's arguments: `python_facing`).

Exit statuses: 2 bad input (config, paths, flags), 3 training diverged, 75 a lost peer in a
multi-process job (galax/runtime/peers.py, galax/runtime/supervise.py: restart with --resume), 130
interrupted (Ctrl-C), 143 preempted (SIGTERM: `galax.runtime.preemption.Preempted`, a SystemExit
that passes through `guarded` as it is).
"""

from __future__ import annotations

import functools
import re
import signal
import sys
import threading
import traceback
from types import ModuleType
from typing import Any, Callable, Mapping, NoReturn, Sequence

from absl import flags
from ml_collections import ConfigDict

from galax.config import base_config, config_path, fields, foreign_target, load
from galax.core.divergence import Diverged

EXIT_BAD_INPUT = 2
EXIT_DIVERGED = 3
EXIT_INTERRUPTED = 130


def fail(message: str, status: int = EXIT_BAD_INPUT) -> NoReturn:
  print(f"error: {message}", file=sys.stderr)
  sys.exit(status)


def _config_arg(argv: Sequence[str]) -> tuple[int, str] | None:
  """(index, value) of the --config flag in argv (`--config=X` or `--config X`), or None."""
  for i, arg in enumerate(argv):
    if arg.startswith("--config="):
      return i, arg.split("=", 1)[1]
    if arg == "--config" and i + 1 < len(argv):
      return i + 1, argv[i + 1]
  return None


def resolve_config_arg(argv: list[str]) -> list[str]:
  """argv with --config's name ("pong_paac") replaced by its file; FileNotFoundError if none.

  A ':suffix' (ml_collections passes it to get_config) is kept.
  """
  found = _config_arg(argv)
  if found is None:
    return list(argv)
  index, value = found
  name, colon, suffix = value.partition(":")
  resolved = config_path(name) + colon + suffix
  argv = list(argv)
  argv[index] = f"--config={resolved}" if argv[index].startswith("--config=") else resolved
  return argv


def unknown_override(config: ConfigDict, dotted: str) -> str | None:
  """The first part of `dotted` that the config lacks, with suggestions (galax/config/fields.py),
  or None."""
  found = fields.unknown_part(config, dotted)
  if found is None:
    return None
  where, close = found
  hint = f" Did you mean {', '.join(repr('config.' + c) for c in close)}?" if close else ""
  return f"Unknown config key {'config.' + where!r} (from --config.{dotted}).{hint}"


def flag_error(error: Exception) -> str:
  """absl's message for a bad flag value, as one plain line (absl shows some as a tuple:
  `('Non-boolean argument to boolean flag', 'maybe')`)."""
  text = re.sub(
    r"\('Non-boolean argument to boolean flag', '(.*?)'\)",
    r"'\1' is not a boolean (true or false)",
    str(error),
  )
  text = re.sub(r"\('([^']*)', '([^']*)'\)", r"\1: '\2'", text)
  return " ".join(text.split())


# Flags of CleanRL and Stable-Baselines3 scripts: the config field each means here.
HABITS = {
  "seed": "seed",
  "env_id": "env.id",
  "env": "env.id",
  "total_timesteps": "total_env_steps",
  "num_envs": "envs_per_learner",
  "n_envs": "envs_per_learner",
  "learning_rate": "optimizer.learning_rate",
  "lr": "optimizer.learning_rate",
  "algo": "algorithm",
  "gamma": "gamma",
  "num_steps": "t_max",
  "n_steps": "t_max",
  "ent_coef": "loss.entropy_coef",
  "vf_coef": "loss.value_coef",
  "max_grad_norm": "optimizer.max_grad_norm",
  "gae_lambda": "gae_lambda",
}


def habit(arg: str) -> str | None:
  """'did you mean' for a CleanRL/SB3 flag (`--seed=1`, `--env-id X`), or None."""
  name, eq, value = arg.lstrip("-").partition("=")
  field = HABITS.get(name.replace("-", "_"))
  if not arg.startswith("--") or field is None:
    return None
  return (
    f"unknown flag {arg.split('=')[0]}: did you mean --config.{field}={value if eq else '...'}?"
  )


def parse_flags(argv: list[str]) -> list[str]:
  """absl's parsing (app.run's flags_parser), with a bad value as one `error:` line."""
  try:
    return flags.FLAGS(argv)
  except flags.UnrecognizedFlagError as e:
    hints = [h for h in map(habit, argv[1:]) if h]
    fail(hints[0] if hints else flag_error(e))
  except flags.Error as e:
    fail(flag_error(e))


HELP_FLAGS = {"--help", "-h", "-?", "--helpshort"}


def answer_help(argv: Sequence[str], module: ModuleType) -> None:
  """On `--help` or `-h`: the command's docstring and its own flags, then exit 0 (absl's
  own --help exits 1, lists the flags of run.py's module, which has none, and knows no -h)."""
  if HELP_FLAGS & set(argv[1:]):
    print((module.__doc__ or "").rstrip() + "\n\n" + flags.FLAGS.module_help(module))
    sys.exit(0)


def prepare_argv(argv: list[str], default_config: str) -> list[str]:
  """Resolves --config and checks --config.<key> overrides; exits with one line if bad.

  (ml_collections applies overrides while the flag is parsed and would raise a bare
  KeyError traceback; a missing config file would give a long one.)
  """
  if len(argv) > 1 and not argv[1].startswith("-") and _config_arg(argv) is None:
    argv = [argv[0], f"--config={argv[1]}", *argv[2:]]  # `galax pong_fast`
  try:
    argv = resolve_config_arg(argv)
  except FileNotFoundError as e:
    fail(str(e))
  overrides = [a for a in argv[1:] if a.startswith("--config.") and "=" in a]
  found = _config_arg(argv)
  if overrides or found:
    config = _load_or_fail(found[1].split(":")[0] if found else default_config)
    for arg in overrides:
      message = unknown_override(config, arg[len("--config.") :].split("=", 1)[0])
      if message:
        fail(message)
    argv = [_integral(config, a) if a in overrides else a for a in argv]
    values = dict(a[len("--config.") :].split("=", 1) for a in overrides)
    name = found[1].split(":")[0] if found else default_config
    note = foreign_target(config, values, name, "--config.target_return=X")
    if note:
      print(f"note: {note}")
      argv.append("--config.target_return=0")
  return argv


def _load_or_fail(path: str) -> ConfigDict:
  """The config file's config; one line with the file and line number if it fails."""
  try:
    return load(path)
  except SyntaxError as e:
    fail(f"config file {e.filename}, line {e.lineno}: {e.msg}")
  except Exception as e:  # a misspelt field, a bad value...
    here = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == path]
    where = f"config file {path}{f', line {here[-1].lineno}' if here else ''}"
    misspelt = re.search(r'Key "([^"]+)" does not exist', str(e))
    if misspelt:  # a locked ConfigDict's error lists every field: name the close ones instead
      hint = unknown_override(base_config(), misspelt.group(1)) or ""
      fail(f"{where}: no field {misspelt.group(1)!r}.{hint.partition(').')[2]}")
    if type(e) is ValueError and str(e).startswith(f"config file {path}"):  # load's own line
      fail(str(e))
    fail(f"{where}: {type(e).__name__}: {' '.join(str(e).split())[:300]}")


def _integral(config: ConfigDict, arg: str) -> str:
  """`--config.total_env_steps=1e5` as `=100000` for an int field (CleanRL and SB3 write
  step counts so); anything else unchanged, for ml_collections to parse or refuse."""
  dotted, value = arg[len("--config.") :].split("=", 1)
  node = config
  for part in dotted.split("."):
    node = node[part]
  if not isinstance(node, int) or isinstance(node, bool):
    return arg
  try:
    number = float(value)
  except ValueError:
    return arg
  return f"--config.{dotted}={int(number)}" if number.is_integer() else arg


# The library's messages name galax's flags (--workdir, --resume, --overwrite); a Python
# caller of the API (`python_facing`) reads its own arguments instead, and a command whose
# flags differ (--out) passes its own words to `guarded`.
PYTHON_TERMS = {
  "--workdir": "workdir",
  "--resume": "resume=True",
  "--overwrite": "overwrite=True",
  "--out": "out_dir",
  "--name": "name",
}
_command_line = False  # True while `guarded` runs a command: its messages stay in flags


def in_terms(message: str, terms: Mapping[str, str]) -> str:
  """`message` with each flag of `terms` (a whole word) replaced by the caller's word."""
  for flag, word in terms.items():
    message = re.sub(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", word, message)
  return message


def python_facing(function: Callable[..., Any]) -> Callable[..., Any]:
  """`function` for Python callers: its ValueErrors name the API's arguments, not galax's
  flags (`overwrite=True`, not `--overwrite`). Called by a command line, it is unchanged."""

  @functools.wraps(function)
  def call(*args: Any, **kwargs: Any) -> Any:
    try:
      return function(*args, **kwargs)
    except ValueError as e:
      if _command_line or type(e) is not ValueError:
        raise
      raise ValueError(in_terms(str(e), PYTHON_TERMS)).with_traceback(e.__traceback__) from None

  return call


def guarded(
  main: Callable[[Sequence[str]], Any], terms: Mapping[str, str] | None = None
) -> Callable[[Sequence[str]], Any]:
  """`main` with expected failures as one line: bad input (2), divergence (3), Ctrl-C (130).
  `terms`: the command's own flags for galax's (experiment's --out for --workdir). For a
  command's entry point: once `main` returns, Ctrl-C ends the process (`_ctrl_c_ends_quietly`).

  The training loop has already said what it saved when it was interrupted or diverged.
  """

  def run(argv: Sequence[str]) -> Any:
    global _command_line
    before, _command_line = _command_line, True
    try:
      result = main(argv)
      _ctrl_c_ends_quietly()
      return result
    except (ValueError, FileNotFoundError) as e:
      fail(in_terms(str(e), terms or {}))
    except Diverged as e:
      fail(str(e), EXIT_DIVERGED)
    except KeyboardInterrupt:
      sys.exit(EXIT_INTERRUPTED)
    finally:
      _command_line = before

  return run


def _ctrl_c_ends_quietly() -> None:
  """After the command's work (its files written): Ctrl-C ends the process at once, as the
  signal's default does, not as a KeyboardInterrupt in jax's exit handlers, which Python
  prints as a traceback ("Exception ignored in atexit callback")."""
  if threading.current_thread() is threading.main_thread():
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
