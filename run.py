"""galax command line: train an agent from a config file.

  python run.py                                  # CartPole A2C (configs/cartpole_a2c.py)
  python run.py --config=configs/pong_paac.py --config.envs_per_learner=64
  python run.py --config=configs/pong_paac.py --workdir=runs/pong --resume

`--config.<field>=<value>` overrides any field of galax/config.py's schema.
"""

import difflib
import os
import sys

from absl import app, flags, logging
from ml_collections import config_flags

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_config_file(argv):
  from galax.config import load  # pylint: disable=g-import-not-at-top

  path = os.path.join(_HERE, "configs", "cartpole_a2c.py")
  for i, arg in enumerate(argv):
    if arg.startswith("--config="):
      path = arg.split("=", 1)[1]
    elif arg == "--config" and i + 1 < len(argv):
      path = argv[i + 1]
  return load(path.split(":")[0])


def _unknown_override(config, dotted: str) -> str | None:
  """The first part of `dotted` that the config lacks, with suggestions, or None."""
  node, walked = config, []
  for part in dotted.split("."):
    keys = list(node.keys()) if hasattr(node, "keys") else []
    if part not in keys:
      close = difflib.get_close_matches(part, keys, n=3)
      where = ".".join(["config", *walked])
      hint = f" Did you mean {', '.join(repr('.'.join([where, c])) for c in close)}?" if close else ""
      return f"Unknown config key {'.'.join([where, part])!r} (from --config.{dotted}).{hint}"
    node, walked = node[part], [*walked, part]
  return None


def _check_config_overrides(argv) -> None:
  """Exits with a clear message if a --config.<key> override names no field.

  (ml_collections applies overrides while the flag is defined and would raise a bare
  KeyError traceback.)
  """
  overrides = [a[len("--config."):].split("=", 1)[0] for a in argv[1:]
               if a.startswith("--config.") and "=" in a]
  if not overrides:
    return
  try:
    config = _load_config_file(argv)
  except Exception:  # pylint: disable=broad-except
    return  # a broken config file gets ml_collections' own error
  for dotted in overrides:
    message = _unknown_override(config, dotted)
    if message:
      print(f"error: {message}", file=sys.stderr)
      sys.exit(2)


if __name__ == "__main__":
  _check_config_overrides(sys.argv)

_CONFIG = config_flags.DEFINE_config_file(
    "config", os.path.join(_HERE, "configs", "cartpole_a2c.py"), "Experiment config file.",
    lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Where metrics, checkpoints and results go "
                               "(default: runs/<config name>_seed<seed>).")
_RESUME = flags.DEFINE_bool("resume", False, "Continue from the latest checkpoint in --workdir.")
# Multi-host (--config.distributed=True): left unset, jax.distributed.initialize() detects
# them on Cloud TPU, SLURM, Open MPI and Kubernetes (see docs/multihost.md).
_COORDINATOR = flags.DEFINE_string("coordinator_address", None,
                                   "host:port of process 0's coordinator (multi-host).")
_NUM_PROCESSES = flags.DEFINE_integer("num_processes", None, "Processes in the job (multi-host).")
_PROCESS_ID = flags.DEFINE_integer("process_id", None, "This process's index (multi-host).")


def main(argv):
  logging.set_verbosity(logging.WARNING)  # orbax logs every file it writes at INFO
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  config = _CONFIG.value
  import jax  # pylint: disable=g-import-not-at-top

  if config.distributed:
    jax.distributed.initialize(coordinator_address=_COORDINATOR.value,
                               num_processes=_NUM_PROCESSES.value,
                               process_id=_PROCESS_ID.value)
  from galax.train import train  # pylint: disable=g-import-not-at-top

  workdir = _WORKDIR.value
  if workdir is None:
    name = os.path.splitext(os.path.basename(flags.FLAGS["config"].config_filename))[0]
    workdir = os.path.join("runs", f"{name}_seed{config.seed}")
  try:
    log = print if jax.process_index() == 0 else (lambda _: None)  # one progress log per job
    train(config, workdir=workdir, resume=_RESUME.value, log=log)
  except (ValueError, FileNotFoundError) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
  app.run(main)
