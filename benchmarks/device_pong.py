"""The Pong phases of benchmarks/device.py: CleanRL's envpool PPO and galax's run.py on
Pong-v5 through benchmarks/atari_peer.py's runs, scored from their curves (steady steps/s,
returns, time to 18), and the many-env Pong config for the rest of the budget. A phase takes
device_context.py's `Context` and returns its figures, as every phase does.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
from typing import Any

from benchmarks import atari_peer, cleanrl_script
from benchmarks.device_context import SMALL_PPO, Context, Skipped, scale_overrides


def _peer_args(
  ctx: Context, seconds: float, config: str = "pong_fast", window: int = 10
) -> argparse.Namespace:
  galax_set = scale_overrides(ctx.scale) + (["updates_per_call=2"] if ctx.scale.envs else [])
  smoke = (
    "--num-envs 2 --num-steps 8 --num-minibatches 2 --update-epochs 1" if ctx.scale.envs else ""
  )
  return argparse.Namespace(
    seconds=seconds,
    window=window,
    env_id="Pong-v5",
    peer_steps=10_000_000,
    peer_script="ppo_atari_envpool_xla_jax_scan",
    peer_flags=smoke,
    peer_cache=ctx.args.peer_cache,
    galax_config=config,
    galax_set=galax_set,
    galax_log_every=2_000 if ctx.scale.envs else 10_000,
    target=18.0,
  )


def _early_rate(workdir: str, first_s: float) -> float:
  """Steady steps/s over the metrics.csv rows of the first `first_s` seconds (every row,
  with or without a finished game; the first, compiling call dropped)."""
  rows = atari_peer.read_rows(os.path.join(workdir, "metrics.csv"))
  return atari_peer.steady_rate(
    [
      (float(r["train_time_s"]), float(r["env_steps"]))
      for r in rows
      if float(r["train_time_s"]) <= first_s
    ]
  )


def _run_figures(run: dict[str, Any], first_s: float, workdir: str = "") -> dict[str, Any]:
  return dict(
    steps_per_s=run["steps_per_s"],
    agent_steps=run["agent_steps"],
    seconds=run["seconds"],
    episodes=run["episodes"],
    steps_per_s_first=_early_rate(workdir, first_s) if workdir else None,
    first_s=first_s,
    final_return=run["curve"][-1][2] if run["curve"] else None,
    best_return=max((r for _, _, r in run["curve"]), default=None),
    minutes_to_18=atari_peer.minutes_to(run["curve"], 18.0),
    steps_to_18=next((s for _, s, r in run["curve"] if r >= 18.0), None),
    curve=run["curve"],
  )


def pong_cleanrl(ctx: Context) -> dict[str, Any]:
  args = _peer_args(ctx, ctx.scale.pong_seconds)
  wheel = os.path.join(args.peer_cache, cleanrl_script.WHEEL)
  try:
    installed = importlib.metadata.version("cleanrl") == cleanrl_script.CLEANRL_VERSION
  except importlib.metadata.PackageNotFoundError:
    installed = False
  if not installed and not os.path.exists(wheel):
    raise Skipped(
      f"no {wheel} (no network here): pip download cleanrl=="
      f"{cleanrl_script.CLEANRL_VERSION} --no-deps --ignore-requires-python "
      f"-d {args.peer_cache}"
    )
  run = atari_peer.peer_run(0, args, ctx.workdir("cleanrl"))
  ctx.record(**_run_figures(run, args.seconds))
  return dict(summary=f"{run['steps_per_s']:,.0f} steps/s, {run['agent_steps']:,} steps")


def _galax_envs(workdir: str) -> int:
  with open(os.path.join(workdir, "config.json")) as f:
    config = json.load(f)
  return config["envs_per_learner"] * config["num_learners"]


def pong_fast(ctx: Context) -> dict[str, Any]:
  args = _peer_args(ctx, ctx.scale.pong_seconds)
  workdir = ctx.workdir("galax")
  run = atari_peer.galax_run(0, args, workdir)
  ctx.record(num_envs=_galax_envs(workdir), **_run_figures(run, args.seconds, workdir))
  return dict(summary=f"{run['steps_per_s']:,.0f} steps/s, {run['agent_steps']:,} steps")


def many_env_config(name: str) -> tuple[str, str]:
  """(config, note): --many_config, else the first Pong config in configs/ with >= 64 envs,
  else pong_fast (noted)."""
  from galax import config as config_lib

  if name:
    return name, ""
  found = [
    n
    for n in config_lib.config_names()
    if (c := config_lib.load(n)).env.id == "Pong-v5" and c.envs_per_learner * c.num_learners >= 64
  ]
  if found:
    return found[0], f"many-env Pong configs in configs/: {', '.join(found)}"
  return "pong_fast", "no Pong config in configs/ has >= 64 envs: pong_fast instead"


def _algorithm(config: str) -> str:
  """The config's algorithm, or "" for a config that does not load: run.py then names
  the problem in one line, and the phase records it."""
  from galax import config as config_lib

  try:
    return str(config_lib.load(config).algorithm)
  except (FileNotFoundError, ValueError):
    return ""


def rate_text(steps_per_s: float | None) -> str:
  """ "12,345 steps/s", or "no steady rate" where the window held one call or none."""
  if steps_per_s is None or not math.isfinite(steps_per_s):
    return "no steady rate"
  return f"{steps_per_s:,.0f} steps/s"


def pong_many_to_18(ctx: Context) -> dict[str, Any]:
  """The many-env config for what the budget left (stops at 18): its first pong_seconds
  give the 60 s figure beside pong_fast's, with no second compile."""
  config, note = many_env_config(ctx.args.many_config)
  seconds = max(ctx.scale.pong_seconds, ctx.seconds - ctx.scale.startup_s)
  args = _peer_args(ctx, seconds, config, window=100)
  if ctx.scale.envs and _algorithm(config) == "ppo":  # smoke: one small epoch, not 32 steps
    args.galax_set += [f"{k}={v}" for k, v in SMALL_PPO.items() if not k.startswith("hts.")]
  args.galax_set += ctx.args.many_set  # --many_set: a seed, async envs, ... (run.py checks)
  ctx.record(config=config, note=note, time_limit_s=seconds, fields=ctx.args.many_set)
  workdir = ctx.workdir("galax")
  run = atari_peer.galax_run(0, args, workdir)
  ctx.record(num_envs=_galax_envs(workdir), **_run_figures(run, ctx.scale.pong_seconds, workdir))
  f = ctx.figures
  reached = (
    f"18 after {f['steps_to_18']:,} steps"
    if f["steps_to_18"]
    else f"best {f['best_return']:.2f}"
    if f["best_return"] is not None
    else "no finished game"
  )
  return dict(
    summary=f"{config}: {rate_text(f['steps_per_s_first'])} in the first "
    f"{ctx.scale.pong_seconds:g} s; {reached} in {f['seconds']:.0f} s"
  )
