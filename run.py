"""galax command line from a checkout (the same as the installed `galax` command).

  python run.py                                  # CartPole A2C (configs/cartpole_a2c.py)
  python run.py --config=pong_paac               # a config by its name in configs/
  python run.py --config=configs/pong_paac.py --config.envs_per_learner=64
  python run.py --config=configs/pong_paac.py --workdir=runs/pong --resume

`--config.<field>=<value>` overrides any field of galax/config/__init__.py's schema
(galax/__main__.py).
"""

from galax.__main__ import run

if __name__ == "__main__":
  run()
