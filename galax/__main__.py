"""galax command line: train an agent from a config (installed as `galax`).

  galax                                          # CartPole A2C (configs/cartpole_a2c.py)
  galax --config=pong_fast                       # a config by its name in configs/
  galax pong_fast                                # the same
  galax --config=configs/pong_paac.py --config.envs_per_learner=64
  galax --config=pong_paac --workdir=runs/pong --resume
  python -m galax ... / python run.py ...        # the same command

`--config.<field>=<value>` overrides any field of galax/config/__init__.py's schema; `--help` lists
the configs; `--help_config` lists every field with its default and meaning, and
`--help_config=NAME` a config's values; `--version` prints galax-rl's version (and the commit,
in a checkout).
"""

import importlib.metadata
import json
import os
import socket
import sys

import jax
from absl import app, flags, logging
from ml_collections import config_flags

from galax.config import CONFIGS_DIR, cli, config_names, resume
from galax.config import help as config_help
from galax.runtime import peers, provenance, supervise
from galax.runtime import workdir as workdirs
from galax.training import terminal_bar as progress_bar
from galax.training.loop import train

_DEFAULT_CONFIG = os.path.join(CONFIGS_DIR, "cartpole_a2c.py")

_WORKDIR = flags.DEFINE_string(
  "workdir",
  None,
  "Where metrics, checkpoints and results go (default: runs/<config name>_seed<seed>).",
)
_RESUME = flags.DEFINE_bool("resume", False, "Continue from the latest checkpoint in --workdir.")
_OVERWRITE = flags.DEFINE_bool(
  "overwrite",
  False,
  "Delete the run already in --workdir (its checkpoints, metrics, results) and start afresh.",
)
# Multi-host (--config.distributed=True): left unset, jax.distributed.initialize() detects
# them on Cloud TPU, SLURM, Open MPI and Kubernetes (see docs/multihost.md).
_COORDINATOR = flags.DEFINE_string(
  "coordinator_address", None, "host:port of process 0's coordinator (multi-host)."
)
_NUM_PROCESSES = flags.DEFINE_integer("num_processes", None, "Processes in the job (multi-host).")
_PROCESS_ID = flags.DEFINE_integer("process_id", None, "This process's index (multi-host).")
_PEER_TIMEOUT = flags.DEFINE_float(
  "peer_timeout_s",
  30.0,
  "Multi-host: a process silent this long counts as lost; the "
  "others then exit (75) with one line (docs/multihost.md).",
)


def main(argv):
  logging.set_verbosity(logging.WARNING)  # orbax logs every file it writes at INFO
  if len(argv) > 1:
    cli.fail(
      f"unexpected argument(s) {' '.join(argv[1:])!r}: a config comes first or as "
      f"--config=NAME, other options as --name=value."
    )
  if _RESUME.value and _OVERWRITE.value:
    cli.fail("--resume continues the run in --workdir and --overwrite deletes it: give one.")
  config = flags.FLAGS["config"].value
  workdir = _WORKDIR.value
  if workdir is None:
    name = os.path.splitext(os.path.basename(flags.FLAGS["config"].config_filename))[0]
    workdir = os.path.join("runs", f"{name}_seed{config.seed}")
  saved = workdirs.read_config_json(workdir) if _RESUME.value else None
  if saved is not None:  # the run's config rules, plus this command's overrides
    flag = flags.FLAGS["config"]
    config = resume.command_config(
      saved,
      json.loads(config.to_json_best_effort()),
      config_flags.get_override_values(flag),
      names_config=bool(flag.present),  # galax/config/resume.py
    )
  spread = config.num_learners > 1 and config.num_devices != 1  # collectives between devices
  supervised = config.distributed or (spread and supervise.virtual_cpu_devices() > 1)
  if supervised and not supervise.is_child():  # JAX's and XLA's aborts go to a log file
    if not config.distributed:  # several learners on one machine's virtual CPU devices
      sys.exit(supervise.run_child(_child_argv(), workdir, "0", job=False))
    process = (
      str(_PROCESS_ID.value)
      if _PROCESS_ID.value is not None
      else f"-{socket.gethostname()}-{os.getpid()}"
    )
    sys.exit(supervise.run_child(_child_argv(), workdir, process))
  if config.distributed:
    peers.initialize(
      coordinator_address=_COORDINATOR.value,
      num_processes=_NUM_PROCESSES.value,
      process_id=_PROCESS_ID.value,
      peer_timeout_s=_PEER_TIMEOUT.value,
    )

  log = print if jax.process_index() == 0 else (lambda _: None)  # one progress log per job
  bar = progress_bar.TerminalBar() if jax.process_index() == 0 and progress_bar.wanted() else None
  try:
    train(
      config,
      workdir=workdir,
      resume=_RESUME.value,
      log=bar.log if bar else log,
      on_call=bar.update if bar else None,
      overwrite=_OVERWRITE.value,
    )
  finally:
    if bar:
      bar.close()


def _child_argv() -> list[str]:
  """This command again, for the supervised child (`python -m galax` as a module: a script
  path inside the package would put galax/ first on sys.path)."""
  if os.path.basename(sys.argv[0]) == "__main__.py":
    return ["-m", "galax", *sys.argv[1:]]
  return list(sys.argv)


def version_line() -> str:
  """`galax --version`: the distribution's version, and where galax runs from a git checkout
  (an editable install, run.py) its commit, which says more than the version."""
  try:
    version = importlib.metadata.version("galax-rl")
  except importlib.metadata.PackageNotFoundError:
    version = "(not installed)"
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  git = provenance.git_info() if os.path.exists(os.path.join(root, ".git")) else {}
  if not git.get("commit"):
    return f"galax-rl {version}"
  dirty = " with uncommitted changes" if git["dirty"] else ""
  return f"galax-rl {version}, checkout {root} at commit {git['commit'][:12]}{dirty}"


def run() -> None:
  """The `galax` command, `python -m galax` and run.py."""
  if "--version" in sys.argv[1:]:
    print(version_line())
    sys.exit(0)
  # Checked before the flag exists: ml_collections applies --config.<key> overrides while
  # it defines the flag, with a traceback for a misspelt key.
  config_help.answer(sys.argv)
  sys.argv = cli.prepare_argv(sys.argv, _DEFAULT_CONFIG)
  config_flags.DEFINE_config_file(
    "config",
    _DEFAULT_CONFIG,
    "Experiment config: a file, or a name in configs/: "
    + ", ".join(config_names())
    + ". Override any field with --config.<field>=<value> "
    "(the fields: galax/config/__init__.py's base_config).",
    lock_config=True,
  )
  cli.answer_help(sys.argv, sys.modules[__name__])
  app.run(cli.guarded(main), flags_parser=cli.parse_flags)


if __name__ == "__main__":
  run()
