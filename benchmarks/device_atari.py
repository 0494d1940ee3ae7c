"""The GALA and HTS-RL phases of benchmarks/device.py, for a call of their own on a GPU box:

  python -m benchmarks.device --out=/tmp/gala --phases=env,gala_breakout --budget_s=560
  python -m benchmarks.device --out=/tmp/hts --phases=env,hts_football_scaling --budget_s=560

  gala_breakout         the pre-registered A-code arms on Breakout-v5 (docs/results/
                        atari_gala_hts/PREREGISTRATION.md): gala_a2c and allreduce_a2c with
                        the authors' RMSProp eps 1e-5, seed 0, 4 learners x 16 envs, each for
                        half of what the time box leaves after two start-ups; agent steps/s
                        and the running mean against agent steps and seconds
  hts_football_scaling  HTS-PPO against PPO steps/s on gfootball/academy_counterattack_hard-v1
                        at 16, 32, 64 and 128 envs (HTS-RL Fig. 4 right: its time claim where
                        GFootball's step times vary), each count recorded as it finishes

A phase takes device_context.py's `Context` and returns its figures, as every phase does.
The smoke scale runs each on the CPU in seconds (4 envs a learner, the MLP and a smoke
run's time limit for each Breakout arm; 2 envs and device_context's SMALL_PPO for GFootball).
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks import atari_peer
from benchmarks.device_context import Context, scale_overrides
from benchmarks.device_phases import hts_config

ARMS = ("gala_a2c", "allreduce_a2c")
ACODE = ["optimizer.eps=1e-5"]  # the experiment's one change from the configs (eps 0.01)
FOOTBALL = "gfootball/academy_counterattack_hard-v1"
FOOTBALL_ENVS = {"full": (16, 32, 64, 128), "smoke": (2,)}
FOOTBALL_SECONDS = 10.0  # steady seconds per figure on a GPU box (the smoke's: its scale's)


def _gala_args(ctx: Context, config: str, seconds: float) -> argparse.Namespace:
  small = ["updates_per_call=2"] if ctx.scale.envs else []
  return argparse.Namespace(
    seconds=seconds,
    window=100,
    galax_config=config,
    galax_set=[*ACODE, *scale_overrides(ctx.scale), *small],
    galax_log_every=2_000 if ctx.scale.envs else 64_000,
  )


def gala_breakout(ctx: Context) -> dict[str, Any]:
  """GALA-A2C and all-reduce A2C on Breakout, one after the other, the same seconds each."""
  seconds = ctx.scale.smoke_seconds  # the smoke: each arm for a smoke run's time limit
  if not ctx.scale.envs:  # else half of what the time box leaves after two start-ups
    seconds = max(seconds, (ctx.seconds - 2 * ctx.scale.startup_s) / 2)
  ctx.record(seconds_each=seconds, fields=ACODE)
  for arm in ARMS:
    run = atari_peer.galax_run(0, _gala_args(ctx, arm, seconds), ctx.workdir(arm))
    curve = run["curve"]
    ctx.record(
      **{
        arm: dict(
          steps_per_s=run["steps_per_s"],
          agent_steps=run["agent_steps"],
          seconds=run["seconds"],
          episodes=run["episodes"],
          final_return=curve[-1][2] if curve else None,
          curve=curve,
        )
      }
    )
  return dict(summary="; ".join(_arm_summary(arm, ctx.figures[arm]) for arm in ARMS))


def _arm_summary(arm: str, f: dict[str, Any]) -> str:
  ended = "none yet" if f["final_return"] is None else f"{f['final_return']:.1f}"
  return f"{arm}: {f['agent_steps']:,} steps at {f['steps_per_s']:,.0f} steps/s, return {ended}"


def hts_football_scaling(ctx: Context) -> dict[str, Any]:
  """HTS-PPO / PPO steps/s at each env count (benchmarks/hts.py's suite config and timing,
  compile apart, as the hts_vs_sync phase has them)."""
  from benchmarks import hts

  small = bool(ctx.scale.envs)
  seconds = ctx.scale.measure_seconds if small else FOOTBALL_SECONDS
  rows = []
  for envs in FOOTBALL_ENVS["smoke" if small else "full"]:
    args = hts.parse([f"--football_env={FOOTBALL}", f"--num_envs={envs}"])
    row: dict[str, Any] = dict(env=FOOTBALL, num_envs=envs)
    for algorithm in ("ppo", "hts_ppo"):
      config = hts_config(args, "football", small)
      config.algorithm = algorithm
      sps, first = hts.algorithm_steps_per_second(config, seconds)
      row.update({f"{algorithm}_sps": sps, f"{algorithm}_first_call_s": first})
    row["hts_over_ppo"] = row["hts_ppo_sps"] / row["ppo_sps"]
    rows.append(row)
    ctx.record(rows=rows)
  return dict(
    summary=", ".join(f"{r['num_envs']} envs {r['hts_over_ppo']:.2f}x" for r in rows)
    + " (HTS-PPO / PPO)"
  )
