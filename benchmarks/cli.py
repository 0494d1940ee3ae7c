"""The benchmarks' command lines: argparse, with the spellings their absl flags took.

Every benchmark parses its flags with argparse. Some were absl flags, and their documented
commands keep working: `--flag=value` and `--flag value`, comma lists (`--num_envs=16,64`)
and absl's boolean forms (`--isolate`, `--noisolate`, `--isolate=false`). A bad value is
one `error:` line on stderr and exit status 2, with no usage block above it.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

_TRUE, _FALSE = ("true", "t", "1", "yes"), ("false", "f", "0", "no")


class Parser(argparse.ArgumentParser):
  """argparse with bad input as one line (argparse's own puts its usage above it)."""

  def error(self, message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def parser(name: str, doc: str | None) -> Parser:
  """The parser of `python -m benchmarks.<name>`, its --help the module's docstring."""
  return Parser(
    prog=f"python -m benchmarks.{name}",
    description=doc,
    formatter_class=argparse.RawDescriptionHelpFormatter,
  )


def strings(text: str) -> list[str]:
  """A comma list, as absl's DEFINE_list read it (empty items dropped)."""
  return [item.strip() for item in text.split(",") if item.strip()]


def ints(text: str) -> list[int]:
  """A comma list of integers."""
  try:
    return [int(item) for item in strings(text)]
  except ValueError:
    raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of integers") from None


def _boolean(text: str) -> bool:
  if text.lower() in _TRUE + _FALSE:
    return text.lower() in _TRUE
  raise argparse.ArgumentTypeError(f"{text!r} is not true or false")


def add_bool(p: argparse.ArgumentParser, name: str, default: bool, help: str) -> None:
  """--name, --noname and --name=true|false, as absl's DEFINE_bool took them."""
  p.add_argument(f"--{name}", nargs="?", const=True, default=default, type=_boolean, help=help)
  p.add_argument(f"--no{name}", dest=name, action="store_false", help=argparse.SUPPRESS)


def fail(message: str) -> NoReturn:
  """A bad combination of flags, found after parsing: one `error:` line, exit status 2."""
  print(f"error: {message}", file=sys.stderr)
  sys.exit(2)
