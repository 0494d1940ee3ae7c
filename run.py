"""galax command line: train an agent from a config file.

  python run.py                                  # CartPole A2C (configs/cartpole_a2c.py)
  python run.py --config=configs/pong_paac.py --config.envs_per_learner=64
  python run.py --config=configs/pong_paac.py --workdir=runs/pong --resume

`--config.<field>=<value>` overrides any field of galax/config.py's schema.
"""

import os
import sys

from absl import app, flags, logging
from ml_collections import config_flags

_HERE = os.path.dirname(os.path.abspath(__file__))
_CONFIG = config_flags.DEFINE_config_file(
    "config", os.path.join(_HERE, "configs", "cartpole_a2c.py"), "Experiment config file.",
    lock_config=True)
_WORKDIR = flags.DEFINE_string("workdir", None, "Where metrics, checkpoints and results go "
                               "(default: runs/<config name>_seed<seed>).")
_RESUME = flags.DEFINE_bool("resume", False, "Continue from the latest checkpoint in --workdir.")


def main(argv):
  logging.set_verbosity(logging.WARNING)  # orbax logs every file it writes at INFO
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
  config = _CONFIG.value
  if config.distributed:
    import jax  # pylint: disable=g-import-not-at-top

    jax.distributed.initialize()
  from galax.train import train  # pylint: disable=g-import-not-at-top

  workdir = _WORKDIR.value
  if workdir is None:
    name = os.path.splitext(os.path.basename(flags.FLAGS["config"].config_filename))[0]
    workdir = os.path.join("runs", f"{name}_seed{config.seed}")
  try:
    train(config, workdir=workdir, resume=_RESUME.value)
  except (ValueError, FileNotFoundError) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
  app.run(main)
