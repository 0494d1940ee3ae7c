"""galax against CleanRL's envpool+JAX PPO on real Atari (Pong-v5): same machine, same wall time.

  python -m benchmarks.atari_peer                        # peer then galax, 1 seed, 30 min each
  python -m benchmarks.atari_peer --only=peer --seconds=60 --out=/tmp/atari_peer
  python -m benchmarks.atari_peer --galax_config=pong_paac --seeds=3

The peer is `cleanrl/ppo_atari_envpool_xla_jax_scan.py` from the `cleanrl` wheel on PyPI,
version 1.2.0 (sha256 of the wheel below), not a copy in this repository. cleanrl 1.2.0 cannot
be installed next to galax: it declares Requires-Python <3.11 and pins gym==0.23.1, torch,
stable-baselines3==1.2.0, wandb<0.14, and for this script jax<0.4, flax<0.7, envpool<0.7.
So the benchmark takes the script out of the wheel itself: from an installed cleanrl 1.2.0
(`pip install --no-deps --ignore-requires-python cleanrl==1.2.0`) if there is one, else from
`pip download cleanrl==1.2.0 --no-deps --ignore-requires-python` into --peer_cache (checked
against WHEEL_SHA256). Everything the script imports at run time is already a galax
dependency (envpool, jax, flax, optax, numpy, gymnasium through envpool, tensorboardX).

`SCRIPT_PATCHES[script] + PATCHES` (benchmarks/cleanrl_script.py, which takes the script
out of the wheel) are exact text substitutions on the script's
source, applied in order to a copy in a temporary directory; each (old, new, why) must match
(every occurrence of `old` is replaced), else the run stops with one line, so a different
script cannot skip a patch silently. Adapter patches, for today's stack (Python 3.11+,
envpool 1.2 with the gymnasium API, jax 0.10, flax 0.12, no torch): distutils' strtobool
(removed in Python 3.12) inlined; `gym` -> `gymnasium` (envpool 1.x spaces); torch's
SummaryWriter -> tensorboardX's (same add_scalar/add_text); envpool's own read-only
num_envs/single_*_space/is_vector_env kept; `reset()` -> (obs, info); XLA `step` -> (obs,
reward, terminated, truncated, info) with done = terminated or truncated, as envpool 0.6's
gym API had it, and `truncated` in place of the gone info["TimeLimit.truncated"];
`jax.tree_map` -> `jax.tree.map` (removed in jax 0.6); `AgentParams.__contains__` -> False
(flax >= 0.8's TrainState asks whether params hold an '_overwrite_with_gradient' collection;
a struct dataclass cannot answer `in`). Instrumentation patches: a `--time-limit-s` flag
that ends the loop after the first update past the budget (clock: CleanRL's own start_time,
set after env and network setup, so the first update's compile counts, as in galax's
train_time_s), and CSV rows per update (peer_updates.csv: wall, global_step, CleanRL's
avg_episodic_return, SPS) and per finished episode (peer_episodes.csv). An env finished an
episode in an update iff its running episode length is below num_steps (128); the script
keeps only each env's last finished episode, which is exact for Pong (a game lasts >700
agent steps). The algorithm keeps CleanRL's defaults: 8 envs x 128 steps, 4 epochs x 4
minibatches, Adam 2.5e-4 annealed linearly over --peer_steps (CleanRL's 10M by default,
whatever the wall budget), clip 0.1, entropy 0.01, value 0.5, grad norm 0.5, the Nature CNN,
envpool's episodic_life and reward_clip. Returns are raw game scores of full games
(info["reward"]).

--peer_script=ppo_atari_envpool_xla_jax takes CleanRL's other envpool+JAX PPO from the same
wheel: the same algorithm and settings, its rollout and its 16 minibatch updates unrolled in
one jit instead of lax.scan loops. On CPU it is the faster one, as XLA:CPU computes
convolution weight gradients several times slower inside a loop (docs/benchmarks.md).
--peer_flags passes extra flags to the script (smoke tests only: not CleanRL's defaults).

galax runs `python run.py --config=<--galax_config> --config.time_limit_s=<--seconds>` (its
metrics.csv: env_steps, mean_return, train_time_s). Both learners are scored the same way:
the mean raw return of the last --window finished games (galax: `config.stats_window`),
against agent steps (x4 frames) and training seconds. steps/s is steady state (first,
compiling update excluded), measured in this run on this machine. Runs go one after the
other, never concurrently. Writes results.json (resumable), results.md and curves.png.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

from benchmarks import atari_curves  # benchmarks/: galax's metrics.csv as a curve
from benchmarks.cleanrl_script import CLEANRL_VERSION, SCRIPT_PATCHES, patch, peer_source

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_rows(path: str, names: list[str] | None = None) -> list[dict]:
  if not os.path.exists(path):
    return []
  with open(path, newline="") as f:
    return list(csv.DictReader(f, fieldnames=names))


def running_mean(returns: list[float], window: int) -> list[float]:
  return [
    sum(returns[max(0, i + 1 - window) : i + 1]) / len(returns[max(0, i + 1 - window) : i + 1])
    for i in range(len(returns))
  ]


def steady_rate(points: list[tuple[float, float]]) -> float:
  """Steps/s between the first and last (seconds, steps) points: the compiling call dropped."""
  if len(points) < 2 or points[-1][0] <= points[0][0]:
    return float("nan")
  return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])


def peer_run(seed: int, args: argparse.Namespace, workdir: str) -> dict:
  shutil.rmtree(workdir, ignore_errors=True)
  os.makedirs(workdir)
  with tempfile.TemporaryDirectory() as tmp:
    script = os.path.join(tmp, f"{args.peer_script}.py")
    with open(script, "w") as f:
      f.write(patch(args.peer_script, peer_source(args.peer_script, args.peer_cache)))
    cmd = [
      sys.executable,
      script,
      "--env-id",
      args.env_id,
      "--total-timesteps",
      str(args.peer_steps),
      "--seed",
      str(seed),
      "--time-limit-s",
      str(args.seconds),
      "--track",
      "False",
      "--capture-video",
      "False",
      *args.peer_flags.split(),
    ]
    with open(os.path.join(workdir, "peer.log"), "w") as log:
      proc = subprocess.run(
        cmd, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, timeout=args.seconds + 900
      )
  if proc.returncode:
    sys.exit(f"error: the peer exited with {proc.returncode}; see {workdir}/peer.log")
  updates = read_rows(os.path.join(workdir, "peer_updates.csv"), ["wall", "step", "avg", "sps"])
  games = read_rows(os.path.join(workdir, "peer_episodes.csv"), ["wall", "step", "ret", "len"])
  smooth = running_mean([float(g["ret"]) for g in games], args.window)
  curve = [(float(g["wall"]), int(g["step"]), r) for g, r in zip(games, smooth)]
  return dict(
    curve=curve,
    episodes=len(games),
    flags=args.peer_flags,
    script=f"cleanrl {CLEANRL_VERSION} {args.peer_script}",
    cleanrl_curve=[(float(u["wall"]), int(u["step"]), float(u["avg"])) for u in updates],
    steps_per_s=steady_rate([(float(u["wall"]), int(u["step"])) for u in updates]),
    agent_steps=int(updates[-1]["step"]) if updates else 0,
    seconds=float(updates[-1]["wall"]) if updates else 0.0,
  )


def galax_run(seed: int, args: argparse.Namespace, workdir: str) -> dict:
  shutil.rmtree(workdir, ignore_errors=True)
  cmd = [
    sys.executable,
    os.path.join(REPO, "run.py"),
    f"--config={args.galax_config}",
    f"--workdir={workdir}",
    f"--config.seed={seed}",
    f"--config.time_limit_s={args.seconds}",
    f"--config.stats_window={args.window}",
    "--config.checkpoint_every_steps=0",
    f"--config.log_every_steps={args.galax_log_every}",
    *[f"--config.{item}" for item in args.galax_set],
  ]
  log_path = workdir.rstrip("/") + ".log"
  with open(log_path, "w") as log:
    proc = subprocess.run(
      cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=args.seconds + 900
    )
  if proc.returncode:
    sys.exit(f"error: galax exited with {proc.returncode}; see {log_path}")
  curve = [
    (r["train_time_s"], int(r["env_steps"]), r["mean_return"])
    for r in atari_curves.read_curve(workdir)
  ]
  result = json.load(open(os.path.join(workdir, "result.json")))
  sps = result.get("steps_per_second")
  return dict(
    curve=curve,
    episodes=result.get("episodes"),
    config=args.galax_config,
    overrides=args.galax_set,
    steps_per_s=float("nan") if sps is None else float(sps),
    agent_steps=int(result["env_steps"]),
    seconds=float(result["train_time_s"]),
  )


def minutes_to(curve: list, target: float) -> float | None:
  return next((wall / 60 for wall, _, ret in curve if ret >= target), None)


def write_table(out: str, results: dict, args: argparse.Namespace) -> str:
  lines = [
    f"{args.env_id}, {args.seconds:.0f} s of training per run on this machine; return: "
    f"mean raw score of the last {args.window} finished games.",
    "",
    f"| learner | seed | agent steps/s | agent steps | return at the budget | "
    f"minutes to {args.target:g} |",
    "| --- | --- | --- | --- | --- | --- |",
  ]
  for key, r in sorted(results.items()):
    env_id, learner, seed = key.split("|")
    if env_id != args.env_id:
      continue
    final = f"{r['curve'][-1][2]:.2f}" if r["curve"] else "no finished game"
    reach = minutes_to(r["curve"], args.target)
    lines.append(
      f"| {learner} | {seed} | {r['steps_per_s']:,.0f} | {r['agent_steps']:,} | "
      f"{final} | {'not reached' if reach is None else f'{reach:.1f}'} |"
    )
  text = "\n".join(lines) + "\n"
  with open(os.path.join(out, "results.md"), "w") as f:
    f.write(text)
  return text


def plot(out: str, results: dict, args: argparse.Namespace) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
  colors = {"galax": "C0", "cleanrl": "C1"}
  for key, r in sorted(results.items()):
    env_id, learner, seed = key.split("|")
    if env_id != args.env_id:
      continue
    if not r["curve"]:
      continue
    wall, steps, ret = zip(*r["curve"])
    label = f"{learner} seed {seed}"
    axes[0].plot([w / 60 for w in wall], ret, color=colors.get(learner), label=label)
    axes[1].plot(steps, ret, color=colors.get(learner), label=label)
  for ax, xlabel in zip(axes, ("training minutes", "agent steps (x4 frames)")):
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"return (last {args.window} games)")
    ax.set_title(args.env_id)
    ax.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(os.path.join(out, "curves.png"), dpi=110)


def main(argv: list[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--seconds", type=float, default=1800.0, help="training budget per run")
  parser.add_argument("--seeds", type=int, default=1)
  parser.add_argument("--only", choices=("peer", "galax", "both"), default="both")
  parser.add_argument("--out", default="docs/results/atari_peer")
  parser.add_argument("--env_id", default="Pong-v5")
  parser.add_argument("--window", type=int, default=10, help="finished games in the mean return")
  parser.add_argument("--target", type=float, default=18.0)
  parser.add_argument(
    "--peer_steps",
    type=int,
    default=10_000_000,
    help="the peer's --total-timesteps (its lr anneals over it)",
  )
  parser.add_argument(
    "--peer_script", choices=sorted(SCRIPT_PATCHES), default="ppo_atari_envpool_xla_jax_scan"
  )
  parser.add_argument(
    "--peer_flags",
    default="",
    help="extra flags for the peer script (smoke tests; not CleanRL's defaults)",
  )
  parser.add_argument("--peer_cache", default=os.path.expanduser("~/.cache/galax/cleanrl"))
  parser.add_argument("--galax_config", default="pong_fast", help="a name in configs/ or a path")
  parser.add_argument(
    "--galax_set",
    action="append",
    default=[],
    help="field=value override of the galax config (repeatable)",
  )
  parser.add_argument("--galax_log_every", type=int, default=20_000)
  args = parser.parse_args(argv)
  os.makedirs(args.out, exist_ok=True)
  path = os.path.join(args.out, "results.json")
  results = json.load(open(path)) if os.path.exists(path) else {}
  learners = {"peer": ["cleanrl"], "galax": ["galax"], "both": ["cleanrl", "galax"]}[args.only]
  for seed in range(args.seeds):
    for learner in learners:
      key = f"{args.env_id}|{learner}|{seed}"
      if key in results:
        continue
      workdir = os.path.abspath(os.path.join(args.out, f"{learner}_seed{seed}"))
      run = (peer_run if learner == "cleanrl" else galax_run)(seed, args, workdir)
      results[key] = run
      last = f"{run['curve'][-1][2]:.2f}" if run["curve"] else "n/a"
      print(
        f"{key}: {run['agent_steps']:,} agent steps in {run['seconds']:.0f} s, "
        f"{run['steps_per_s']:,.0f} steps/s, return {last}",
        flush=True,
      )
      with open(path, "w") as f:
        json.dump(results, f, indent=1)
  print(write_table(args.out, results, args))
  plot(args.out, results, args)


if __name__ == "__main__":
  main(sys.argv[1:])
