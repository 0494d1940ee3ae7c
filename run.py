"""galax command line: train an agent from a config file.

  python run.py                                  # CartPole A2C (configs/cartpole_a2c.py)
  python run.py --config=pong_paac               # a config by its name in configs/
  python run.py --config=configs/pong_paac.py --config.envs_per_learner=64
  python run.py --config=configs/pong_paac.py --workdir=runs/pong --resume

`--config.<field>=<value>` overrides any field of galax/config.py's schema.
"""

import os
import socket
import sys

from absl import app, flags, logging
from ml_collections import config_flags

from galax import cli, supervise

_HERE = os.path.dirname(os.path.abspath(__file__))
_DEFAULT_CONFIG = os.path.join(_HERE, "configs", "cartpole_a2c.py")

if __name__ == "__main__":
  sys.argv = cli.prepare_argv(sys.argv, _DEFAULT_CONFIG)

_CONFIG = config_flags.DEFINE_config_file(
    "config", _DEFAULT_CONFIG, "Experiment config: a file, or a name in configs/ (pong_paac).",
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
_PEER_TIMEOUT = flags.DEFINE_float("peer_timeout_s", 30.0,
                                   "Multi-host: a process silent this long counts as lost; the "
                                   "others then exit (75) with one line (docs/multihost.md).")


def main(argv):
  logging.set_verbosity(logging.WARNING)  # orbax logs every file it writes at INFO
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  config = _CONFIG.value
  workdir = _WORKDIR.value
  if workdir is None:
    name = os.path.splitext(os.path.basename(flags.FLAGS["config"].config_filename))[0]
    workdir = os.path.join("runs", f"{name}_seed{config.seed}")
  if config.distributed and not supervise.is_child():  # JAX's aborts go to a log file
    process = (str(_PROCESS_ID.value) if _PROCESS_ID.value is not None
               else f"-{socket.gethostname()}-{os.getpid()}")
    sys.exit(supervise.run_child(sys.argv, workdir, process))
  import jax  # pylint: disable=g-import-not-at-top

  if config.distributed:
    from galax import peers  # pylint: disable=g-import-not-at-top

    peers.initialize(coordinator_address=_COORDINATOR.value, num_processes=_NUM_PROCESSES.value,
                     process_id=_PROCESS_ID.value, peer_timeout_s=_PEER_TIMEOUT.value)
  from galax.train import train  # pylint: disable=g-import-not-at-top

  log = print if jax.process_index() == 0 else (lambda _: None)  # one progress log per job
  train(config, workdir=workdir, resume=_RESUME.value, log=log)


if __name__ == "__main__":
  app.run(cli.guarded(main))
