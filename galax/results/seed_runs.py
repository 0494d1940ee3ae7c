"""An experiment's seeds trained, and each run's record (`galax.results.experiment`).

Seeds run in one of two ways (`choose_mode`, the experiment's `--mode`):

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

Either way each seed gets a run record (`run_record`, saved as `<out>/<name>/seed<s>.json`):
config, git commit, device, steps/s, the training curve over env steps and wall time (from
its metrics.csv, `read_curve`), every evaluation, the final metric, energy; per seed, in
per-seed units (steps, speed) for seeds run as learners.
"""

from __future__ import annotations

import csv
import datetime
import math
import os
from typing import TYPE_CHECKING, Callable, Sequence

import jax

import galax.config as config_lib
from galax.config import Config
from galax.core.types import JsonDict, Params
from galax.evaluate import evaluator as eval_lib
from galax.evaluate import periodic
from galax.parallel.layout import to_host
from galax.results import paper_protocols as protocols
from galax.results import provenance
from galax.training.loop import train

if TYPE_CHECKING:
  from galax.framework.update import LearnerState
  from galax.training.loop import TrainResult

RESULT_KIND = "galax-run"
RunRecord = JsonDict  # one run's results (`run_record`), saved as <name>/seed<s>.json
# Trained seeds: their run records and final params (pytrees of host arrays), in seed order.
SeedRuns = tuple[list[RunRecord], list[Params]]


def choose_mode(
  seeds: Sequence[int],
  requested: str = "auto",
  *,
  num_learners: int,
  combine: str,
  lr_scaling: str,
  target_return: float,
  time_limit_s: float,
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
    blockers.append(
      f"each run has {num_learners} learner(s) combined by "
      f"{combine!r} (needs 1 independent learner)"
    )
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


def learners_config(config: Config, seeds: Sequence[int]) -> Config:
  """The joint config that runs `seeds` as independent learners with per-seed budgets."""
  n = len(seeds)
  return config_lib.with_fields(
    config,
    {
      "seed": int(seeds[0]),
      "num_learners": n,
      "initial_params": "per_learner",
      "learner_stats": True,
      "total_env_steps": config.total_env_steps * n,
      "log_every_steps": config.log_every_steps * n,
      "checkpoint_every_steps": config.checkpoint_every_steps * n,
      "eval.every_steps": config.eval.every_steps * n,
      "eval.learners": "all",
    },
  )


def read_curve(
  metrics_csv: str, return_column: str = "mean_return", steps_divisor: int = 1
) -> dict[str, list[float | None]]:
  """The training curve of a run from its metrics.csv: env steps, times, running return."""
  curve: dict[str, list[float]] = dict(
    env_steps=[], wall_time_s=[], train_time_s=[], mean_return=[]
  )
  if not os.path.exists(metrics_csv):
    return curve
  with open(metrics_csv, newline="") as f:
    for row in csv.DictReader(f):
      curve["env_steps"].append(int(row["env_steps"]) // steps_divisor)
      curve["wall_time_s"].append(float(row["wall_time_s"]))
      curve["train_time_s"].append(float(row.get("train_time_s") or row["wall_time_s"]))
      # NaN before the first episode ends: None in JSON (report reads it back as NaN).
      curve["mean_return"].append(json_float(float(row[return_column])))
  return curve


def json_float(x: float | None) -> float | None:
  """NaN/inf are not JSON: None stands for them."""
  if isinstance(x, float) and not math.isfinite(x):
    return None
  return x


def run_record(
  *,
  name: str,
  method: str,
  config_json: JsonDict,
  frames_per_step: int,
  seed: int,
  mode: str,
  simulators: int,
  result: TrainResult,
  curve: dict[str, list[float]],
  evaluations: list[periodic.EvalRecord | JsonDict],
  env_steps: int,
  git: JsonDict,
  extra: JsonDict | None = None,
) -> RunRecord:
  """One run's results (JSON-serialisable); `config_json`: the run's config as JSON data,
  `frames_per_step`: its env's (`evaluation.frames_per_step`), `git`: the commit it ran at
  (`TrainResult.git`, read as it began)."""
  evals = [e.to_json() if hasattr(e, "to_json") else dict(e) for e in evaluations]
  final = protocols.final_metric([e["returns"] for e in evals]) if evals else None
  record = dict(
    kind=RESULT_KIND,
    version=1,
    name=name,
    method=method,
    env_id=config_json["env"]["id"],
    seed=int(seed),
    seed_mode=mode,
    simulators=int(simulators),
    created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    git=git,
    device=provenance.device_info(),
    config=config_json,
    env_steps=int(env_steps),
    frames_per_step=frames_per_step,
    steps_per_second=json_float(result.steps_per_second),
    compile_time_s=result.compile_time_s,
    wall_time_s=result.wall_time_s,
    train_time_s=result.train_time_s,
    eval_time_s=result.eval_time_s,
    train_mean_return=json_float(float(result.mean_return)),
    train_curve=curve,
    evaluations=evals,
    final_metric=json_float(final),
    energy=result.energy,
  )
  record.update(extra or {})
  return record


def _final_params(state: LearnerState, learner: int) -> Params:
  return jax.tree.map(lambda x: x[learner], to_host(state.params))


def train_seeds_as_learners(
  config: Config,
  seeds: Sequence[int],
  exp_dir: str,
  name: str,
  method: str,
  log: Callable[[str], None],
) -> SeedRuns:
  """One joint `train`, learner i = seed i; its records in per-seed units (steps, speed)."""
  n = len(seeds)
  workdir = os.path.join(exp_dir, "runs", f"seeds{seeds[0]}-{seeds[-1]}")
  result = train(learners_config(config, seeds), workdir=workdir, log=log)
  by_learner = periodic.records_by_learner(result.evaluations)
  frames = eval_lib.frames_per_step(config_lib.run_settings(config).env)  # the same for every seed
  records: list[RunRecord] = []
  final_params: list[Params] = []
  for i, seed in enumerate(seeds):
    evals = [
      dict(r.to_json(), env_steps=r.env_steps // n, learner=0) for r in by_learner.get(i, [])
    ]
    curve = read_curve(os.path.join(workdir, "metrics.csv"), f"mean_return/learner{i}", n)
    seed_config = config_lib.with_fields(config, {"seed": int(seed)})
    records.append(
      run_record(
        name=name,
        method=method,
        config_json=config_lib.typed.json_data(seed_config),
        frames_per_step=frames,
        seed=seed,
        mode="learners",
        simulators=config.envs_per_learner,
        result=result,
        curve=curve,
        evaluations=evals,
        env_steps=result.env_steps // n,
        git=result.git,
        extra=dict(
          train_mean_return=json_float(result.learner_returns[i]),
          steps_per_second=json_float(result.steps_per_second / n),
          joint_steps_per_second=json_float(result.steps_per_second),
          joint_env_steps=result.env_steps,
          workdir=workdir,
        ),
      )
    )
    final_params.append(_final_params(result.state, i))
  return records, final_params


def train_seeds_in_turn(
  config: Config,
  seeds: Sequence[int],
  exp_dir: str,
  name: str,
  method: str,
  log: Callable[[str], None],
) -> SeedRuns:
  """One `train` per seed, as `run.py` would run it with config.seed = s."""
  records: list[RunRecord] = []
  final_params: list[Params] = []
  for seed in seeds:
    run_config = config_lib.with_fields(config, {"seed": int(seed)})
    workdir = os.path.join(exp_dir, "runs", f"seed{seed}")
    result = train(run_config, workdir=workdir, log=log)
    curve = read_curve(os.path.join(workdir, "metrics.csv"))
    frames = eval_lib.frames_per_step(config_lib.run_settings(run_config).env)
    records.append(
      run_record(
        name=name,
        method=method,
        config_json=config_lib.typed.json_data(run_config),
        frames_per_step=frames,
        seed=seed,
        mode="sequential",
        simulators=config.num_learners * config.envs_per_learner,
        result=result,
        curve=curve,
        evaluations=result.evaluations,
        env_steps=result.env_steps,
        git=result.git,
        extra=dict(workdir=workdir),
      )
    )
    final_params.append(_final_params(result.state, 0))
    result.state = None  # free device memory before the next seed
  return records, final_params
