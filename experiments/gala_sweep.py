"""GALA's headline experiment (Assran et al. 2019, Fig. 1a): the simulator sweep.

  python -m experiments.gala_sweep --out=docs/results/gala_sweep --steps=2000000 --seeds=0-9

A2C and GALA-A2C at 16, 32, 64, 128 and 256 simulators (envs), 10 runs each; a run
succeeds when its final return beats half the mean final return of 16-simulator A2C (the
paper's criterion). Each learner keeps the paper's 16 simulators:
* A2C at n simulators is n / 16 learners averaging their gradients every step, which is
  one learner of n envs (the paper's footnote 2), so it runs as one. Its lr follows
  Stooke & Abbeel's square-root rule: lr x sqrt(n / 16).
* GALA-A2C at n simulators is n / 16 learners of 16 envs on a directed ring (gossip
  with one peer), each with A2C's hyper-parameters at that simulator count (the same
  lr x sqrt(n / 16)): the two differ only in how learners combine. At 16 simulators GALA
  has one learner and is A2C; it is not run twice.
Base learner: experiments/minatar.py's A2C at `--settings` ("learning" by default: the
MLP, GAE, Adam 1e-2 annealed, 16 envs x t_max 16). `--a2c_lr` and `--gala_lr` replace the
base rate of a 16-env learner (before the square-root rule) for each method, to run each at
its own best rate (docs/results/gala_best/); where they differ, GALA at 16 simulators is
not A2C's runs and is left out. The final return is the mean of the
last 100 training episodes (all learners' episodes for GALA).

A2C's seeds run together, as independent learners of one program (each from its own
seed's parameters, envs and action keys: `initial_params="per_learner"`); GALA's seeds run
one after another. Results go to `<out>/runs.json` (an interrupted sweep resumes),
`<out>/sweep.md` (table) and `<out>/sweep.png` (success rate vs simulators).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Callable, Sequence

import ml_collections
import numpy as np

from . import minatar

SIMULATORS = (16, 32, 64, 128, 256)
ENVS_PER_LEARNER = 16  # GALA Table 2: simulators per learner


def a2c_config(
  env_id: str,
  steps: int,
  simulators: int,
  seeds: Sequence[int],
  settings: str,
  base_lr: float | None = None,
) -> ml_collections.ConfigDict:
  """A2C at `simulators` envs, one independent learner per seed."""
  c = minatar.a2c_config(env_id, steps * len(seeds), settings)  # steps per seed
  if base_lr:
    c.optimizer.learning_rate = float(base_lr)
  c.envs_per_learner = simulators
  c.optimizer.learning_rate *= math.sqrt(simulators / ENVS_PER_LEARNER)
  c.num_learners = len(seeds)
  c.combine = "independent"
  c.initial_params = "per_learner"  # learner i starts from seed seeds[0] + i
  c.learner_stats = True
  c.seed = int(seeds[0])
  return _quiet(c)


def gala_config(
  env_id: str, steps: int, simulators: int, seed: int, settings: str, base_lr: float | None = None
) -> ml_collections.ConfigDict:
  """GALA-A2C: simulators / 16 learners of 16 envs on a ring."""
  c = minatar.a2c_config(env_id, steps, settings)
  if base_lr:
    c.optimizer.learning_rate = float(base_lr)
  c.optimizer.learning_rate *= math.sqrt(simulators / ENVS_PER_LEARNER)
  c.num_learners = simulators // ENVS_PER_LEARNER
  c.combine = "gossip"
  c.gossip.topology = "ring"
  c.seed = int(seed)
  return _quiet(c)


def _quiet(c: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  c.eval.every_steps = 0  # the training return is the score
  c.log_every_steps = 0
  return c


def _runs_file(out: str) -> tuple[dict, Callable[[str, dict], None]]:
  """`<out>/runs.json`'s runs (empty at first) and `save(key, record)`, which adds a run and
  rewrites the file whole (an interrupted sweep resumes from it)."""
  os.makedirs(out, exist_ok=True)
  path = os.path.join(out, "runs.json")
  runs = json.load(open(path)) if os.path.exists(path) else {}

  def save(key: str, record: dict) -> None:
    runs[key] = record
    with open(path + ".tmp", "w") as f:
      json.dump(runs, f, indent=1)
    os.replace(path + ".tmp", path)

  return runs, save


def _train(config: ml_collections.ConfigDict):
  """One run of `config`, checked first, in memory and silent (no workdir, no log)."""
  from galax import config as config_lib
  from galax.training.loop import train

  config_lib.validate(config)
  return train(config, workdir=None, log=lambda _: None)


def run_sweep(
  env_id: str,
  steps: int,
  seeds: Sequence[int],
  out: str,
  simulators: Sequence[int] = SIMULATORS,
  settings: str = "learning",
  log: Callable[[str], None] = print,
  a2c_lr: float | None = None,
  gala_lr: float | None = None,
) -> dict:
  """Trains what `<out>/runs.json` lacks; returns {method: {simulators: [returns]}}."""
  if any(n % ENVS_PER_LEARNER for n in simulators):
    raise ValueError(
      f"--sims={list(simulators)}: each must be a multiple of "
      f"{ENVS_PER_LEARNER} (simulators per learner)."
    )
  runs, save = _runs_file(out)
  for n in simulators:
    key = f"A2C|{n}"
    if key not in runs:
      c = a2c_config(env_id, steps, n, seeds, settings, a2c_lr)
      r = _train(c)
      save(
        key,
        dict(
          returns=[float(x) for x in r.learner_returns],
          seeds=list(seeds),
          steps_per_second=r.steps_per_second,
          lr=c.optimizer.learning_rate,
        ),
      )
      log(f"A2C {n} sims: {np.round(runs[key]['returns'], 2).tolist()}")
    if n == ENVS_PER_LEARNER:
      continue
    for seed in seeds:
      key = f"GALA-A2C|{n}|{seed}"
      if key in runs:
        continue
      c = gala_config(env_id, steps, n, seed, settings, gala_lr)
      r = _train(c)
      save(
        key,
        dict(
          returns=[float(r.mean_return)],
          steps_per_second=r.steps_per_second,
          lr=c.optimizer.learning_rate,
        ),
      )
      log(f"GALA-A2C {n} sims seed {seed}: {r.mean_return:.2f}")
  return collect(runs, simulators, same_rate=(a2c_lr or None) == (gala_lr or None))


def collect(runs: dict, simulators: Sequence[int], same_rate: bool = True) -> dict:
  """{method: {simulators: [final returns]}}; GALA at 16 simulators is A2C's runs (when
  both run at the same base rate)."""
  table: dict[str, dict[int, list[float]]] = {"A2C": {}, "GALA-A2C": {}}
  for key, record in runs.items():
    method, n, *_ = key.split("|")
    if int(n) in simulators:
      table[method].setdefault(int(n), []).extend(record["returns"])
  if same_rate and ENVS_PER_LEARNER in table["A2C"]:
    table["GALA-A2C"][ENVS_PER_LEARNER] = table["A2C"][ENVS_PER_LEARNER]
  return table


def write_summary(table: dict, out: str, env_id: str, steps: int) -> str:
  """sweep.md and sweep.png; returns the markdown."""
  from galax.results.paper_protocols import success_rate

  reference = float(np.mean(table["A2C"][ENVS_PER_LEARNER]))
  sims = sorted(set(table["A2C"]) | set(table["GALA-A2C"]))
  lines = [
    f"# GALA Fig. 1a on {env_id}, {steps:,} agent steps per run",
    "",
    f"Success: final return > 0.5 x {reference:.2f} (mean of 16-simulator A2C).",
    "",
    "| simulators | A2C success | A2C mean return | GALA-A2C success | GALA-A2C mean return |",
    "| --- | --- | --- | --- | --- |",
  ]
  rates = {}
  for n in sims:
    cells = []
    for method in ("A2C", "GALA-A2C"):
      v = table[method].get(n, [])
      rate = success_rate(v, 0.5 * reference)
      rates.setdefault(method, []).append(rate)
      cells += [f"{100 * rate:.0f}% of {len(v)}" if v else "-", f"{np.mean(v):.2f}" if v else "-"]
    lines.append(f"| {n} | " + " | ".join(cells) + " |")
  text = "\n".join(lines) + "\n"
  with open(os.path.join(out, "sweep.md"), "w") as f:
    f.write(text)
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(5, 3.5))
  for method, marker in (("A2C", "o"), ("GALA-A2C", "s")):
    ax.plot(sims, [100 * r for r in rates[method]], marker=marker, label=method)
  ax.set_xscale("log", base=2)
  ax.set_xticks(sims, [str(n) for n in sims])
  ax.set(
    xlabel="simulators", ylabel="successful runs (%)", ylim=(-5, 105), title=env_id.split("/")[-1]
  )
  ax.legend()
  fig.tight_layout()
  fig.savefig(os.path.join(out, "sweep.png"), dpi=120)
  plt.close(fig)
  return text


def main(argv: Sequence[str] | None = None) -> None:
  from galax.results.experiment import parse_seeds

  parser = argparse.ArgumentParser(
    prog="python -m experiments.gala_sweep",
    description=__doc__,
    formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  parser.add_argument("--out", default="results/gala_sweep")
  parser.add_argument("--env", default="gymnax/Breakout-MinAtar")
  parser.add_argument("--steps", type=int, default=2_000_000, help="agent steps per run")
  parser.add_argument("--seeds", default="0-9")
  parser.add_argument("--sims", default=",".join(map(str, SIMULATORS)))
  parser.add_argument("--settings", choices=minatar.SETTINGS, default="learning")
  parser.add_argument(
    "--a2c_lr",
    type=float,
    default=0.0,
    help="A2C's base rate per 16-env learner (0: the settings')",
  )
  parser.add_argument(
    "--gala_lr",
    type=float,
    default=0.0,
    help="GALA-A2C's base rate per 16-env learner (0: the settings')",
  )
  args = parser.parse_args(sys.argv[1:] if argv is None else argv)
  try:
    if args.steps <= 0:
      raise ValueError(f"--steps must be > 0, got {args.steps}.")
    sims = [int(s) for s in args.sims.split(",") if s.strip()]
    if ENVS_PER_LEARNER not in sims:
      raise ValueError(
        f"--sims={args.sims!r} must include {ENVS_PER_LEARNER}: "
        "16-simulator A2C is the success reference."
      )
    if args.a2c_lr < 0 or args.gala_lr < 0:
      raise ValueError("--a2c_lr and --gala_lr must be >= 0.")
    table = run_sweep(
      args.env,
      args.steps,
      parse_seeds(args.seeds),
      args.out,
      sims,
      args.settings,
      a2c_lr=args.a2c_lr or None,
      gala_lr=args.gala_lr or None,
    )
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
  print(write_summary(table, args.out, args.env, args.steps))


if __name__ == "__main__":
  main()
