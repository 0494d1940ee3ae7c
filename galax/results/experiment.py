"""Run one config over several seeds and write one results file per run.

  python -m galax.experiment --config=configs/cartpole_a2c.py --seeds=0-4 --out=results
  python -m galax.experiment --config=configs/breakout_a2c.py --seeds=0,1,2 \\
      --config.eval.every_steps=250000 --name=breakout_a2c16 --method=A2C
  python -m galax.report results --out=docs/results        # tables and plots

Seeds run in one of two ways (`--mode`):

  sequential  one `train` per seed, config.seed = s (each run as `run.py` would do it).
  learners    all seeds in one program, as the learners of an independent-learner run
              (vmapped on the learner axis, sharded over the devices): learner i starts
              from params of seed s0 + i (`config.initial_params="per_learner"`), has its
              own envs, and is evaluated on its own (`config.eval.learners="all"`). Per
              seed it is the same algorithm with the same budget; env seeds differ from the
              sequential runs', and wall times are those of the joint run (the seeds
              share the hardware), so time metrics of such runs are not comparable with
              sequential ones.
  auto        learners where that is the same experiment (one independent learner per
              run, consecutive seeds, no lr scaling by learners, no early stop on a target
              or time limit), else sequential.

Each run writes `<out>/<name>/seed<s>.json` (config, git commit, device, steps/s, the
training curve over env steps and wall time, every evaluation, the final metric, energy)
and its workdir under `<out>/<name>/runs/`. `<out>/<name>/summary.json` holds GALA's
best-policy evaluation: the best final policy over seeds re-evaluated on fresh episodes.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import json
import math
import os
from typing import TYPE_CHECKING, Callable, Sequence

import ml_collections

from galax.runtime import jax_quiet

jax = jax_quiet.import_jax()  # without the CUDA plugin's lines on a machine with no GPU

from galax.config.settings import RunSettings
from galax.core.types import JsonDict, Params
from galax.evaluate import evaluator as eval_lib
from galax.results import paper_protocols as protocols
from galax.results import provenance

if TYPE_CHECKING:
  from galax.algorithms.algorithm import LearnerState
  from galax.training.loop import TrainResult

RESULT_KIND = "galax-run"
SUMMARY_KIND = "galax-experiment"
# Best-policy re-evaluation envs are seeded apart from the periodic evaluations' envs.
BEST_POLICY_SEED_OFFSET = 10_000
RunRecord = JsonDict  # one run's results (`run_record`), saved as <name>/seed<s>.json
# Trained seeds: their run records and final params (pytrees of host arrays), in seed order.
SeedRuns = tuple[list[RunRecord], list[Params]]


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


def choose_mode(seeds: Sequence[int], requested: str = "auto", *, num_learners: int,
                combine: str, lr_scaling: str, target_return: float, time_limit_s: float
                ) -> tuple[str, str]:
  """('sequential' | 'learners', why) for a config's learners (`num_learners`, `combine`),
  its `optimizer.lr_scaling` and early stops. Raises ValueError if 'learners' cannot be used."""
  if requested not in ("auto", "sequential", "learners"):
    raise ValueError(f"--mode={requested!r}; use auto, sequential or learners.")
  if requested == "sequential":
    return "sequential", "requested"
  blockers = []
  if len(seeds) < 2:
    blockers.append("a single seed")
  if num_learners != 1 or combine != "independent":
    blockers.append(f"each run has {num_learners} learner(s) combined by "
                    f"{combine!r} (needs 1 independent learner)")
  if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
    blockers.append("seeds are not consecutive")
  if lr_scaling == "sqrt_learners":
    blockers.append("lr scales with the number of learners")
  if target_return:
    blockers.append("target_return stops the joint run for all seeds")
  if time_limit_s:
    blockers.append("time_limit_s would be shared by all seeds")
  if blockers:
    if requested == "learners":
      raise ValueError("--mode=learners is not possible: " + "; ".join(blockers) + ".")
    return "sequential", "; ".join(blockers)
  return "learners", "one independent learner per seed"


def learners_config(config: ml_collections.ConfigDict, seeds: Sequence[int]
                    ) -> ml_collections.ConfigDict:
  """The joint config that runs `seeds` as independent learners with per-seed budgets."""
  n = len(seeds)
  joint = config.copy_and_resolve_references()
  joint.seed = int(seeds[0])
  joint.num_learners = n
  joint.initial_params = "per_learner"
  joint.learner_stats = True
  joint.total_env_steps = config.total_env_steps * n
  joint.log_every_steps = config.log_every_steps * n
  joint.checkpoint_every_steps = config.checkpoint_every_steps * n
  joint.eval.every_steps = config.eval.every_steps * n
  joint.eval.learners = "all"
  return joint


def read_curve(metrics_csv: str, return_column: str = "mean_return",
               steps_divisor: int = 1) -> dict[str, list[float | None]]:
  """The training curve of a run from its metrics.csv: env steps, times, running return."""
  curve: dict[str, list[float]] = dict(env_steps=[], wall_time_s=[], train_time_s=[],
                                       mean_return=[])
  if not os.path.exists(metrics_csv):
    return curve
  with open(metrics_csv, newline="") as f:
    for row in csv.DictReader(f):
      curve["env_steps"].append(int(row["env_steps"]) // steps_divisor)
      curve["wall_time_s"].append(float(row["wall_time_s"]))
      curve["train_time_s"].append(float(row.get("train_time_s") or row["wall_time_s"]))
      # NaN before the first episode ends: None in JSON (report reads it back as NaN).
      curve["mean_return"].append(_json_float(float(row[return_column])))
  return curve


def _json_float(x: float | None) -> float | None:
  """NaN/inf are not JSON: None stands for them."""
  if isinstance(x, float) and not math.isfinite(x):
    return None
  return x


def run_record(*, name: str, method: str, config_json: JsonDict, frames_per_step: int,
               seed: int, mode: str, simulators: int, result: TrainResult,
               curve: dict[str, list[float]],
               evaluations: list[eval_lib.EvalRecord | JsonDict], env_steps: int,
               extra: JsonDict | None = None) -> RunRecord:
  """One run's results (JSON-serialisable); `config_json`: the run's config as JSON data,
  `frames_per_step`: its env's (`evaluation.frames_per_step`)."""
  evals = [e.to_json() if hasattr(e, "to_json") else dict(e) for e in evaluations]
  final = (protocols.final_metric([e["returns"] for e in evals]) if evals else None)
  record = dict(
      kind=RESULT_KIND, version=1, name=name, method=method, env_id=config_json["env"]["id"],
      seed=int(seed), seed_mode=mode, simulators=int(simulators),
      created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
      git=provenance.git_info(), device=provenance.device_info(),
      config=config_json, env_steps=int(env_steps), frames_per_step=frames_per_step,
      steps_per_second=_json_float(result.steps_per_second),
      compile_time_s=result.compile_time_s, wall_time_s=result.wall_time_s,
      train_time_s=result.train_time_s, eval_time_s=result.eval_time_s,
      train_mean_return=_json_float(float(result.mean_return)),
      train_curve=curve, evaluations=evals,
      final_metric=_json_float(final), energy=result.energy)
  record.update(extra or {})
  return record


def _write_json(path: str, data: JsonDict) -> None:
  from galax.training.metrics import write_json  # pylint: disable=g-import-not-at-top

  write_json(path, data, indent=1)


def _final_params(state: LearnerState, learner: int) -> Params:
  from galax.parallel.layout import to_host  # pylint: disable=g-import-not-at-top

  return jax.tree.map(lambda x: x[learner], to_host(state.params))


def default_method(algorithm: str, num_learners: int, combine: str) -> str:
  """The method's name in reports: "A2C", or with several learners "A2C-gossip"."""
  if num_learners == 1:
    return algorithm.upper()
  return f"{algorithm.upper()}-{combine}"


def run_experiment(config: ml_collections.ConfigDict, seeds: Sequence[int], out_dir: str,
                   name: str,
                   method: str | None = None, mode: str = "auto",
                   best_policy_episodes: int = 10,
                   log: Callable[[str], None] = print) -> list[RunRecord]:
  """Trains `config` once per seed, writes `<out>/<name>/seed<s>.json` and `summary.json`.

  Returns the run records in seed order.
  """
  method = method or default_method(config.algorithm, config.num_learners, config.combine)
  mode, why = choose_mode(seeds, mode, num_learners=config.num_learners,
                          combine=config.combine, lr_scaling=config.optimizer.lr_scaling,
                          target_return=config.target_return, time_limit_s=config.time_limit_s)
  log(f"experiment {name}: seeds {list(seeds)}, mode {mode} ({why})")
  exp_dir = os.path.join(out_dir, name)
  train_seeds = _train_seeds_as_learners if mode == "learners" else _train_seeds_in_turn
  records, final_params = train_seeds(config, seeds, exp_dir, name, method, log)
  is_writer = jax.process_index() == 0  # on several hosts, one process writes the files
  if is_writer:
    for record in records:
      _write_json(os.path.join(exp_dir, f"seed{record['seed']}.json"), record)
  summary = best_policy_summary(RunSettings.from_config(config).eval, records,
                                final_params, best_policy_episodes)
  summary.update(kind=SUMMARY_KIND, name=name, method=method, env_id=config.env.id,
                 seeds=list(seeds), seed_mode=mode,
                 final_metrics=[r["final_metric"] for r in records])
  if is_writer:
    _write_json(os.path.join(exp_dir, "summary.json"), summary)
  best = summary.get("best_policy")
  if best:
    log(f"best final policy: seed {best['seed']} ({best['selected_by']}); fresh "
        f"{len(best['returns'])}-episode evaluation {best['mean']:.2f} +- {best['se']:.2f}")
  return records


def _train_seeds_as_learners(config: ml_collections.ConfigDict, seeds: Sequence[int],
                             exp_dir: str, name: str, method: str,
                             log: Callable[[str], None]) -> SeedRuns:
  """One joint `train`, learner i = seed i; its records in per-seed units (steps, speed)."""
  from galax.training.loop import train  # pylint: disable=g-import-not-at-top

  n = len(seeds)
  workdir = os.path.join(exp_dir, "runs", f"seeds{seeds[0]}-{seeds[-1]}")
  result = train(learners_config(config, seeds), workdir=workdir, log=log)
  by_learner = eval_lib.records_by_learner(result.evaluations)
  frames = eval_lib.frames_per_step(RunSettings.from_config(config).env)  # the same for every seed
  records: list[RunRecord] = []
  final_params: list[Params] = []
  for i, seed in enumerate(seeds):
    evals = [dict(r.to_json(), env_steps=r.env_steps // n, learner=0)
             for r in by_learner.get(i, [])]
    curve = read_curve(os.path.join(workdir, "metrics.csv"), f"mean_return/learner{i}", n)
    seed_config = config.copy_and_resolve_references()
    seed_config.seed = int(seed)
    records.append(run_record(
        name=name, method=method, config_json=json.loads(seed_config.to_json_best_effort()),
        frames_per_step=frames, seed=seed, mode="learners",
        simulators=config.envs_per_learner, result=result, curve=curve, evaluations=evals,
        env_steps=result.env_steps // n,
        extra=dict(train_mean_return=_json_float(result.learner_returns[i]),
                   steps_per_second=_json_float(result.steps_per_second / n),
                   joint_steps_per_second=_json_float(result.steps_per_second),
                   joint_env_steps=result.env_steps, workdir=workdir)))
    final_params.append(_final_params(result.state, i))
  return records, final_params


def _train_seeds_in_turn(config: ml_collections.ConfigDict, seeds: Sequence[int],
                         exp_dir: str, name: str, method: str,
                         log: Callable[[str], None]) -> SeedRuns:
  """One `train` per seed, as `run.py` would run it with config.seed = s."""
  from galax.training.loop import train  # pylint: disable=g-import-not-at-top

  records: list[RunRecord] = []
  final_params: list[Params] = []
  for seed in seeds:
    run_config = config.copy_and_resolve_references()
    run_config.seed = int(seed)
    workdir = os.path.join(exp_dir, "runs", f"seed{seed}")
    result = train(run_config, workdir=workdir, log=log)
    curve = read_curve(os.path.join(workdir, "metrics.csv"))
    frames = eval_lib.frames_per_step(RunSettings.from_config(run_config).env)
    records.append(run_record(
        name=name, method=method, config_json=json.loads(run_config.to_json_best_effort()),
        frames_per_step=frames, seed=seed, mode="sequential",
        simulators=config.num_learners * config.envs_per_learner, result=result,
        curve=curve, evaluations=result.evaluations, env_steps=result.env_steps,
        extra=dict(workdir=workdir)))
    final_params.append(_final_params(result.state, 0))
    result.state = None  # free device memory before the next seed
  return records, final_params


def best_policy_summary(evals: eval_lib.EvalSettings, records: Sequence[RunRecord],
                        final_params: Sequence[Params], episodes: int) -> JsonDict:
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
    scores = [[r["train_mean_return"] if r["train_mean_return"] is not None else -math.inf]
              for r in records]
    selected_by = "training return"
  best = protocols.best_policy(scores)
  best_seed = dataclasses.replace(evals, seed=int(records[best]["seed"]))
  returns = eval_lib.evaluate_params(best_seed, final_params[best], episodes,
                                     seed_offset=BEST_POLICY_SEED_OFFSET)
  mean, se = protocols.mean_and_standard_error(returns) if len(returns) else (math.nan, 0.0)
  return dict(best_policy=dict(seed=records[best]["seed"], selected_by=selected_by,
                               greedy=evals.greedy,
                               returns=[float(x) for x in returns],
                               mean=_json_float(mean), se=_json_float(se)))


def load_results(path: str) -> tuple[list[RunRecord], list[JsonDict]]:
  """All run records and experiment summaries under `path` (a directory or one file)."""
  files = [path] if os.path.isfile(path) else sorted(
      os.path.join(root, f) for root, _, names in os.walk(path) for f in names
      if f.endswith(".json"))
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
  from absl import flags, logging  # pylint: disable=g-import-not-at-top

  logging.set_verbosity(logging.WARNING)
  if len(argv) > 1:
    raise ValueError(f"Unexpected arguments: {argv[1:]}")
  config = flags.FLAGS["config"].value
  if config.distributed:
    from galax.runtime import peers  # pylint: disable=g-import-not-at-top

    peers.initialize()
  name = flags.FLAGS["name"].value or os.path.splitext(
      os.path.basename(flags.FLAGS["config"].config_filename))[0]
  run_experiment(config, parse_seeds(flags.FLAGS["seeds"].value), flags.FLAGS["out"].value,
                 name, flags.FLAGS["method"].value or None, flags.FLAGS["mode"].value,
                 flags.FLAGS["best_policy_episodes"].value)


def _cli() -> None:
  import sys  # pylint: disable=g-import-not-at-top

  from absl import app, flags  # pylint: disable=g-import-not-at-top
  from ml_collections import config_flags  # pylint: disable=g-import-not-at-top

  from galax.config import (
    CONFIGS_DIR,  # pylint: disable=g-import-not-at-top
    cli,  # pylint: disable=g-import-not-at-top
  )

  default_config = os.path.join(CONFIGS_DIR, "cartpole_a2c.py")
  sys.argv = cli.prepare_argv(sys.argv, default_config)  # run.py's checks, one-line errors
  config_flags.DEFINE_config_file("config", default_config,
                                  "Experiment config: a file, or a name in configs/.",
                                  lock_config=True)
  flags.DEFINE_string("seeds", "0,1,2", "Seeds: 0,1,2 or 0-4.")
  flags.DEFINE_string("out", "results", "Results directory.")
  flags.DEFINE_string("name", "", "Experiment name (default: the config file's name).")
  flags.DEFINE_string("method", "", "Label in tables and plots (default: from the config).")
  flags.DEFINE_enum("mode", "auto", ["auto", "sequential", "learners"], "How seeds run.")
  flags.DEFINE_integer("best_policy_episodes", 10, "Episodes of the best-policy "
                       "re-evaluation (GALA Table 1); 0 = skip.")
  cli.answer_help(sys.argv, sys.modules[__name__])
  app.run(cli.guarded(main), flags_parser=cli.parse_flags)


if __name__ == "__main__":
  _cli()
