"""Throughput of every architecture, measured in one run on one machine.

  python -m benchmarks.suite --env=Pong-v5 --num_envs=16,64 --learners=1,4
  python -m benchmarks.suite --env=CartPole-v1 --devices=8 --weak_scaling --learners=1,2,4,8

For each algorithm, env count N (all learners together) and learner count n it measures the
steady-state env steps/s of the jitted training step (compile time reported apart) and its
ratio to raw envpool stepping with N envs (random actions, same interface). Writes
`<out>.json` and `<out>.md` (a markdown table with the machine description and the command).

--weak_scaling keeps envs per learner fixed (N = n x --envs_per_learner) to compare how
all-reduce and gossip scale with the number of learners; with --devices=D the learners are
spread over D virtual CPU devices (set before jax is imported).

Each figure is measured in a fresh child process (--isolate, the default): envpool's
GFootball pools keep their memory after they are closed (~50 MB per env, measured), so one
process measuring raw, PPO and HTS-PPO at 16 and 64 envs grew to ~18 GB; a child per figure
also keeps env threads and compiled programs of earlier figures out of later ones.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import sys
from typing import Any

# --devices must act before jax is imported.
for _arg in sys.argv:
  if _arg.startswith("--devices="):
    _flag = f"--xla_force_host_platform_device_count={_arg.split('=', 1)[1]}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _flag).strip()

from absl import app, flags

from benchmarks import measure
from galax import config as config_lib
from galax.config import cli
from galax.envs import env_family

# algorithm -> (config name, learner rule): "one" runs 1 learner with all N envs, "many"
# splits N envs over n learners.
ALGORITHMS: dict[str, tuple[str, str]] = {
  "a2c": ("pong_paac", "one"),
  "allreduce": ("allreduce_a2c", "many"),
  "gala": ("gala_a2c", "many"),
  "hts_a2c": ("hts_a2c_atari", "one"),
  "ppo": ("ppo_gfootball", "one"),
  "hts_ppo": ("hts_ppo_gfootball", "one"),
  "impala": ("impala_atari", "one"),
  "a3c": ("a3c_atari", "many"),
  "ba3c": ("ba3c_breakout", "many"),
}

# PPO and HTS-PPO are the HTS paper's GFootball algorithms: they run on --ppo_env.
PPO_FAMILY = ("ppo", "hts_ppo")

_ENV = flags.DEFINE_string("env", "Pong-v5", "envpool id of the A2C-family algorithms.")
_PPO_ENV = flags.DEFINE_string(
  "ppo_env",
  "gfootball/academy_3_vs_1_with_keeper-v1",
  "envpool id of PPO and HTS-PPO ('same': --env).",
)
_NUM_ENVS = flags.DEFINE_list("num_envs", ["16", "32", "64", "128"], "Total env counts.")
_LEARNERS = flags.DEFINE_list("learners", ["1", "2", "4", "8"], "Learner counts.")
_ALGOS = flags.DEFINE_list("algorithms", ["raw", *ALGORITHMS], "What to measure.")
_SECONDS = flags.DEFINE_float("seconds", 10.0, "Measuring time per figure.")
_CALL_STEPS = flags.DEFINE_integer(
  "steps_per_call",
  4000,
  "Env steps per call to the training step, rounded to whole "
  "updates (at least one): updates_per_call = max(1, round(this / steps per update)).",
)
_WEAK = flags.DEFINE_bool("weak_scaling", False, "Fix envs per learner instead of total envs.")
_PER_LEARNER = flags.DEFINE_integer("envs_per_learner", 16, "Envs per learner (weak scaling).")
_NETWORK = flags.DEFINE_string(
  "network",
  "",
  "Run every algorithm with this network (e.g. archnips) instead of its config's own.",
)
_DEVICES = flags.DEFINE_integer("devices", 0, "Virtual CPU devices (0: the real ones).")
_ISOLATE = flags.DEFINE_bool("isolate", True, "Measure each figure in a fresh child process.")
_OUT = flags.DEFINE_string("out", "", "Write <out>.json and <out>.md.")


def _config(algorithm: str, env_id: str, learners: int, envs_per_learner: int) -> Any:
  name, _ = ALGORITHMS[algorithm]
  config = config_lib.load(name)
  if config.env.id != env_id:
    config.env.id = env_id
    if env_family(env_id) == "classic_control":  # vector observations need the MLP
      config.network.name = "mlp"
      config.env.options = type(config.env.options)()  # drop Atari options (BA3C's RGB)
  if _NETWORK.value:
    config.network.name = _NETWORK.value
  config.num_learners = learners
  config.envs_per_learner = envs_per_learner
  config.num_devices = 0
  steps_per_update = learners * envs_per_learner * config.t_max
  if algorithm.startswith("hts"):
    steps_per_update = learners * envs_per_learner * config.hts.alpha
  config.updates_per_call = max(1, round(_CALL_STEPS.value / steps_per_update))
  config.total_env_steps = 10**9
  config.target_return = 0.0
  return config


def _grid(algorithm: str) -> list[tuple[int, int]]:
  """(total envs, learners) pairs to measure for an algorithm."""
  rule = "one" if algorithm == "raw" else ALGORITHMS[algorithm][1]
  learners = [1] if rule == "one" else [n for n in map(int, _LEARNERS.value) if n > 1]
  pairs = []
  for n in learners:
    totals = [n * _PER_LEARNER.value] if _WEAK.value else list(map(int, _NUM_ENVS.value))
    pairs.extend((total, n) for total in totals if total % n == 0)
  return pairs


def env_of(algorithm: str) -> str:
  if algorithm in PPO_FAMILY and _PPO_ENV.value != "same":
    return _PPO_ENV.value
  return _ENV.value


def markdown(info: dict[str, Any], rows: list[dict[str, Any]], command: str) -> str:
  lines = [
    f"Measured {info['date']} on {info['device']}; CPU {info['cpu']}; jax {info['jax']}; "
    f"commit {info['commit']}.",
    "",
    f"`{command}`",
    "",
    "| algorithm | env | network | learners | envs | steps/s | vs raw envpool | compile s |",
    "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
  ]
  for r in rows:
    ratio = f"{r['ratio_to_raw']:.2f}" if r.get("ratio_to_raw") is not None else "-"
    lines.append(
      f"| {r['algorithm']} | {r['env']} | {r.get('network', '-')} | "
      f"{r['learners']} | {r['num_envs']} | "
      f"{r['steps_per_second']:.0f} | {ratio} | {r['compile_s']:.1f} |"
    )
  return "\n".join(lines) + "\n"


def measure_job(
  algorithm: str, env_id: str, total: int, learners: int, source: str
) -> tuple[dict[str, float], str]:
  """(figure, network name) of one table row, measured in this process."""
  if algorithm == "raw":
    config = _config(source, env_id, 1, total)
    return measure.raw_envpool(config, _SECONDS.value), "-"
  config = _config(algorithm, env_id, learners, total // learners)
  return measure.algorithm(config, _SECONDS.value), config.network.name


def _child_job(argv: list[str], job: tuple) -> tuple[dict[str, float], str]:
  flags.FLAGS(argv)  # a spawned child imports this module afresh: parse the same flags
  return measure_job(*job)


def _in_child(argv: list[str], job: tuple) -> tuple[dict[str, float], str]:
  """measure_job in a fresh spawned process (jax and envpool threads do not survive fork)."""
  context = multiprocessing.get_context("spawn")
  with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
    return pool.submit(_child_job, argv, job).result()


def _jobs(algorithms: list[str]) -> list[tuple[str, str, int, int, str]]:
  """(algorithm, env, total envs, learners, the algorithm whose env options it takes), raw
  envpool first: measured for every (env, total envs) an algorithm runs, with that
  algorithm's env options (Atari preprocessing, GFootball's representation)."""
  learning = [a for a in algorithms if a != "raw"]
  jobs = []
  if "raw" in algorithms:
    firsts = {}
    for algorithm in learning:
      for total, _ in _grid(algorithm):
        firsts.setdefault((env_of(algorithm), total), algorithm)
    jobs += [("raw", env, total, 1, firsts[env, total]) for env, total in sorted(firsts)]
  return jobs + [(a, env_of(a), total, n, a) for a in learning for total, n in _grid(a)]


def main(argv):
  del argv
  info = measure.machine()
  command = "python " + " ".join(sys.argv)
  print(f"device: {info['device']}; cpu: {info['cpu']}; jax {info['jax']}", flush=True)
  for algorithm in _ALGOS.value:
    if algorithm != "raw" and algorithm not in ALGORITHMS:
      raise ValueError(f"Unknown algorithm {algorithm!r}; choose from {['raw', *ALGORITHMS]}.")
  raw: dict[tuple[str, int], float] = {}
  rows, skipped = [], set()
  for algorithm, env_id, total, learners, source in _jobs(_ALGOS.value):
    if algorithm in skipped:
      continue
    job = (algorithm, env_id, total, learners, source)
    try:
      if _ISOLATE.value:
        figure, network = _in_child(sys.argv, job)
      else:
        figure, network = measure_job(*job)
    except (FileNotFoundError, ValueError) as e:
      print(f"{algorithm:>10}: skipped ({e})", flush=True)
      skipped.add(algorithm)
      continue
    if algorithm == "raw":
      raw[env_id, total] = figure["steps_per_second"]
    base = raw.get((env_id, total))
    ratio = figure["steps_per_second"] / base if base else None
    row = dict(
      algorithm=algorithm,
      env=env_id,
      network=network,
      num_envs=total,
      learners=learners,
      steps_per_second=figure["steps_per_second"],
      compile_s=figure["compile_s"],
      ratio_to_raw=ratio,
    )
    rows.append(row)
    print(
      f"{algorithm:>10} {env_id} learners {learners:>2} envs {total:>4}: "
      f"{row['steps_per_second']:>9.0f} steps/s"
      + (f" ({ratio:.2f} of raw)" if ratio is not None else "")
      + f", compile {row['compile_s']:.1f}s",
      flush=True,
    )
  if _OUT.value:
    os.makedirs(os.path.dirname(_OUT.value) or ".", exist_ok=True)
    with open(_OUT.value + ".json", "w") as f:
      json.dump(dict(machine=info, command=command, rows=rows), f, indent=2)
    with open(_OUT.value + ".md", "w") as f:
      f.write(markdown(info, rows, command))


if __name__ == "__main__":
  cli.answer_help(sys.argv, sys.modules[__name__])  # --help: exit 0, as galax's commands
  app.run(main)
