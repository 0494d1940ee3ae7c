"""Run one config over several seeds and write one results file per run.

  python -m galax.results.experiment --config=configs/cartpole_a2c.py --seeds=0-4 --out=results
  python -m galax.results.experiment --config=configs/breakout_a2c.py --seeds=0,1,2 \\
      --config.eval.every_steps=250000 --name=breakout_a2c16 --method=A2C
  python -m galax.results.report results --out=docs/results        # tables and plots

Seeds run one `train` each in turn, or all in one program as the learners of an
independent-learner run (`--mode`: sequential, learners, or auto: learners where that is
the same experiment; galax/results/seed_runs.py). Each run writes its run record
`<out>/<name>/seed<s>.json` (config, git commit, device, steps/s, the training curve over
env steps and wall time, every evaluation, the final metric, energy) and its workdir under
`<out>/<name>/runs/`. `<out>/<name>/summary.json` holds GALA's best-policy evaluation: the
best final policy over seeds re-evaluated on fresh episodes. An experiment already there is
refused in one line; `--overwrite` replaces it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import sys
from typing import Callable, Sequence

import jax
from absl import app, flags, logging
from ml_collections import ConfigDict, config_flags

import galax.config as config_lib
from galax.config import CONFIGS_DIR, Config, cli
from galax.core.types import JsonDict, Params
from galax.evaluate import evaluator as eval_lib
from galax.results import paper_protocols as protocols
from galax.results import seed_runs
from galax.results.seed_runs import RESULT_KIND, RunRecord, json_float
from galax.runtime import peers
from galax.training.metrics import write_json

SUMMARY_KIND = "galax-experiment"
# The training loop's messages name the galax command's --workdir; here each run's workdir
# is a folder under --out, the flag the user typed.
RUN_FOLDER_TERMS = {"another --workdir": "another --out", "--workdir": "--out's run folder"}
# Best-policy re-evaluation envs are seeded apart from the periodic evaluations' envs.
BEST_POLICY_SEED_OFFSET = 10_000


def parse_seeds(text: str) -> list[int]:
  """'0,1,2' or '0-4' or '0-2,7' -> a list of distinct non-negative seeds, in order."""
  seeds: list[int] = []
  for part in str(text).split(","):
    part = part.strip()
    try:
      if "-" in part:
        lo, hi = (int(x) for x in part.split("-"))
        if hi < lo:
          raise ValueError
        seeds.extend(range(lo, hi + 1))
      elif part:
        seeds.append(int(part))
    except ValueError:
      raise ValueError(f"--seeds: cannot read {part!r}; use e.g. 0,1,2 or 0-4.") from None
  if not seeds:
    raise ValueError(f"--seeds={text!r} names no seed.")
  if len(set(seeds)) != len(seeds):
    raise ValueError(f"--seeds={text!r} repeats a seed.")
  return seeds


def _write_json(path: str, data: JsonDict) -> None:
  write_json(path, data, indent=1)


def default_method(algorithm: str, num_learners: int, combine: str) -> str:
  """The method's name in reports: "A2C", or with several learners "A2C-gossip"."""
  if num_learners == 1:
    return algorithm.upper()
  return f"{algorithm.upper()}-{combine}"


@cli.python_facing
def run_experiment(
  config: Config | ConfigDict,
  seeds: Sequence[int],
  out_dir: str,
  name: str,
  method: str | None = None,
  mode: str = "auto",
  best_policy_episodes: int = 10,
  log: Callable[[str], None] = print,
  overwrite: bool = False,
) -> list[RunRecord]:
  """Trains `config` once per seed, writes `<out>/<name>/seed<s>.json` and `summary.json`.

  An experiment already in `<out>/<name>` is refused (one ValueError), unless `overwrite`
  deletes it first. Returns the run records in seed order.
  """
  config = config_lib.from_data(config)  # typed, read once
  start_afresh(os.path.join(out_dir, name), name, overwrite)
  method = method or default_method(config.algorithm, config.num_learners, config.combine)
  mode, why = seed_runs.choose_mode(
    seeds,
    mode,
    num_learners=config.num_learners,
    combine=config.combine,
    lr_scaling=config.optimizer.lr_scaling,
    target_return=config.target_return,
    time_limit_s=config.time_limit_s,
  )
  log(f"experiment {name}: seeds {list(seeds)}, mode {mode} ({why})")
  exp_dir = os.path.join(out_dir, name)
  train_seeds = (
    seed_runs.train_seeds_as_learners if mode == "learners" else seed_runs.train_seeds_in_turn
  )
  records, final_params = train_seeds(config, seeds, exp_dir, name, method, log)
  is_writer = jax.process_index() == 0  # on several hosts, one process writes the files
  if is_writer:
    for record in records:
      _write_json(os.path.join(exp_dir, f"seed{record['seed']}.json"), record)
  summary = best_policy_summary(
    eval_lib.eval_settings(config), records, final_params, best_policy_episodes
  )
  summary.update(
    kind=SUMMARY_KIND,
    name=name,
    method=method,
    env_id=config.env.id,
    seeds=list(seeds),
    seed_mode=mode,
    final_metrics=[r["final_metric"] for r in records],
  )
  if is_writer:
    _write_json(os.path.join(exp_dir, "summary.json"), summary)
  best = summary.get("best_policy")
  if best:
    log(
      f"best final policy: seed {best['seed']} ({best['selected_by']}); fresh "
      f"{len(best['returns'])}-episode evaluation {best['mean']:.2f} +- {best['se']:.2f}"
    )
  return records


def start_afresh(exp_dir: str, name: str, overwrite: bool) -> None:
  """ValueError (one line) if `exp_dir` holds an experiment's files (its records would mix
  with the new ones in a report, and its runs' workdirs refuse new runs); with `overwrite`,
  deletes them."""
  held = sorted(
    f
    for f in (os.listdir(exp_dir) if os.path.isdir(exp_dir) else [])
    if f == "runs" or (f.endswith(".json") and (f.startswith("seed") or f == "summary.json"))
  )
  if held and not overwrite:
    raise ValueError(
      f"--out {os.path.dirname(exp_dir) or '.'!r} already holds experiment {name!r} "
      f"({', '.join(held)}); replace it with --overwrite, or choose another --out or --name."
    )
  for item in held:
    path = os.path.join(exp_dir, item)
    shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def best_policy_summary(
  evals: eval_lib.EvalSettings,
  records: Sequence[RunRecord],
  final_params: Sequence[Params],
  episodes: int,
) -> JsonDict:
  """GALA Table 1: pick the best final policy over seeds, evaluate it on fresh episodes
  (under the experiment's `evals`, with the chosen seed's env seeds).

  The selection uses each run's last evaluation (its final policy) where evaluations
  exist, else the training running return; the reported episodes are new ones (other env
  seeds), so the selection does not bias them upwards.
  """
  if not records or episodes <= 0:
    return {}
  if all(r["evaluations"] for r in records):
    scores = [r["evaluations"][-1]["returns"] for r in records]
    selected_by = "final evaluation"
  else:
    scores = [
      [r["train_mean_return"] if r["train_mean_return"] is not None else -math.inf] for r in records
    ]
    selected_by = "training return"
  best = protocols.best_policy(scores)
  best_seed = dataclasses.replace(evals, seed=int(records[best]["seed"]))
  returns = eval_lib.evaluate_params(
    best_seed, final_params[best], episodes, seed_offset=BEST_POLICY_SEED_OFFSET
  )
  mean, se = protocols.mean_and_standard_error(returns) if len(returns) else (math.nan, 0.0)
  return dict(
    best_policy=dict(
      seed=records[best]["seed"],
      selected_by=selected_by,
      greedy=evals.greedy,
      returns=[float(x) for x in returns],
      mean=json_float(mean),
      se=json_float(se),
    )
  )


def load_results(path: str) -> tuple[list[RunRecord], list[JsonDict]]:
  """All run records and experiment summaries under `path` (a directory or one file)."""
  files = (
    [path]
    if os.path.isfile(path)
    else sorted(
      os.path.join(root, f)
      for root, _, names in os.walk(path)
      for f in names
      if f.endswith(".json")
    )
  )
  runs, summaries = [], []
  for file in files:
    try:
      with open(file) as f:
        data = json.load(f)
    except (OSError, json.JSONDecodeError):
      continue
    if isinstance(data, dict) and data.get("kind") == RESULT_KIND:
      runs.append(data)
    elif isinstance(data, dict) and data.get("kind") == SUMMARY_KIND:
      summaries.append(data)
  return runs, summaries


def main(argv: Sequence[str]) -> None:
  logging.set_verbosity(logging.WARNING)
  if len(argv) > 1:
    raise ValueError(f"Unexpected arguments: {argv[1:]}")
  config = flags.FLAGS["config"].value
  if config.distributed:
    peers.initialize()
  name = (
    flags.FLAGS["name"].value
    or os.path.splitext(os.path.basename(flags.FLAGS["config"].config_filename))[0]
  )
  run_experiment(
    config,
    parse_seeds(flags.FLAGS["seeds"].value),
    flags.FLAGS["out"].value,
    name,
    flags.FLAGS["method"].value or None,
    flags.FLAGS["mode"].value,
    flags.FLAGS["best_policy_episodes"].value,
    overwrite=flags.FLAGS["overwrite"].value,
  )


def _cli() -> None:
  default_config = os.path.join(CONFIGS_DIR, "cartpole_a2c.py")
  sys.argv = cli.prepare_argv(sys.argv, default_config)  # run.py's checks, one-line errors
  config_flags.DEFINE_config_file(
    "config", default_config, "Experiment config: a file, or a name in configs/.", lock_config=True
  )
  flags.DEFINE_string("seeds", "0,1,2", "Seeds: 0,1,2 or 0-4.")
  flags.DEFINE_string("out", "results", "Results directory.")
  flags.DEFINE_string("name", "", "Experiment name (default: the config file's name).")
  flags.DEFINE_string("method", "", "Label in tables and plots (default: from the config).")
  flags.DEFINE_enum("mode", "auto", ["auto", "sequential", "learners"], "How seeds run.")
  flags.DEFINE_integer(
    "best_policy_episodes",
    10,
    "Episodes of the best-policy re-evaluation (GALA Table 1); 0 = skip.",
  )
  flags.DEFINE_bool("overwrite", False, "Delete the experiment already in --out/--name first.")
  cli.answer_help(sys.argv, sys.modules[__name__])
  app.run(cli.guarded(main, RUN_FOLDER_TERMS), flags_parser=cli.parse_flags)


if __name__ == "__main__":
  _cli()
