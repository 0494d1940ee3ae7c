"""Env steps per second of HTS-RL vs its synchronous baseline, in one run.

  python -m benchmarks.hts                      # Atari (Pong) and GFootball (3 vs 1)
  python -m benchmarks.hts --suites=atari --seconds=30 --env_threads=2

Two suites, each with the same envs and the same network for every figure:
  atari     configs/hts_a2c_atari.py: raw envpool, synchronous A2C, HTS-A2C
  football  configs/hts_ppo_gfootball.py: raw envpool, synchronous PPO, HTS-PPO
For each suite it also runs HTS with the delay switched off (`hts.delayed=False`: the same
program shape, learning after the rollout instead of during it), which isolates what the
overlap of env stepping and learning buys. Printed: steps/s and the ratios HTS / sync and
HTS / raw (raw = envpool stepping random actions inside a jitted `lax.scan`). Compile time
is excluded (one warm-up call).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from typing import Any

import jax

import galax
from benchmarks import cli
from galax.config import run_settings
from galax.envs import check_env_id, make_env

_HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = ("atari", "football")


def parse(argv: list[str]) -> argparse.Namespace:
  p = cli.parser("hts", __doc__)
  p.add_argument("--suites", type=cli.strings, default=list(SUITES), help="Suites to run.")
  p.add_argument("--atari_env", default="Pong-v5", help="Atari envpool id.")
  p.add_argument(
    "--football_env",
    default="gfootball/academy_3_vs_1_with_keeper-v1",
    help="GFootball envpool id.",
  )
  p.add_argument("--seconds", type=float, default=20.0, help="Minimum measuring time per figure.")
  p.add_argument("--env_threads", type=int, default=0, help="envpool threads (0: envpool's).")
  p.add_argument("--num_envs", type=int, default=16, help="Envs (the papers' 16).")
  p.add_argument("--num_actors", type=int, default=-1, help="HTS actor groups (-1: the config's).")
  p.add_argument("--json", default="", help="Also write the figures to this JSON file.")
  args = p.parse_args(argv)
  unknown = [s for s in args.suites if s not in SUITES]
  if unknown:  # absl's hts ran nothing for them, silently
    cli.fail(f"--suites: no suite {unknown}; choose from {list(SUITES)}.")
  if args.num_envs < 1:
    cli.fail(f"--num_envs={args.num_envs}: give at least 1.")
  return args


def check_envs(args: argparse.Namespace) -> None:
  """An unknown env id of a suite to run: one `error:` line before any measuring (main's
  check, not parse's: device_phases.py's phases build their envs as they go)."""
  for suite, flag in (("atari", "atari_env"), ("football", "football_env")):
    if suite in args.suites:
      try:
        check_env_id(getattr(args, flag))
      except ValueError as e:
        cli.fail(f"--{flag}: {e}")


def load_config(name: str):
  path = os.path.join(_HERE, "..", "configs", f"{name}.py")
  spec = importlib.util.spec_from_file_location(name, path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config()


def timed(fn, state, steps_per_call: int, seconds: float) -> tuple[float, float]:
  """(steps/s, seconds of the first, compiling call); at least two measured calls."""
  t0 = time.perf_counter()
  state = jax.block_until_ready(fn(state))
  first = time.perf_counter() - t0
  calls, t0 = 0, time.perf_counter()
  while calls < 2 or time.perf_counter() - t0 < seconds:
    state = jax.block_until_ready(fn(state))
    calls += 1
  return calls * steps_per_call / (time.perf_counter() - t0), first


def raw_steps_per_second(config: Any, seconds: float, steps: int) -> float:
  """envpool stepping uniformly random actions in a jitted scan of `steps` steps."""
  env = make_env(run_settings(config).env, config.envs_per_learner, seed=config.seed)
  n, num_actions = config.envs_per_learner, env.spec.num_actions

  @jax.jit
  def run(carry):
    def body(c, _):
      s, k = c
      k, sub = jax.random.split(k)
      s, _ = env.step(s, jax.random.randint(sub, (n,), 0, num_actions))
      return (s, k), None

    return jax.lax.scan(body, carry, None, length=steps)[0]

  try:
    sps, _ = timed(run, (env.reset(), jax.random.PRNGKey(0)), steps * n, seconds)
  finally:
    env.close()
  return sps


def algorithm_steps_per_second(config: Any, seconds: float) -> tuple[float, float]:
  algorithm = galax.make_algorithm(config)
  try:
    per_call = algorithm.updates_per_call * algorithm.env_steps_per_update
    return timed(lambda s: algorithm.step(s)[0], algorithm.init(), per_call, seconds)
  finally:
    algorithm.env.close()


def suite_config(
  args: argparse.Namespace, config_name: str, env_id: str, updates_per_call: int
) -> Any:
  config = load_config(config_name)
  config.env.id = env_id
  config.envs_per_learner = args.num_envs
  config.env.num_threads = args.env_threads
  config.updates_per_call = updates_per_call
  config.checkpoint_every_steps = 0
  if args.num_actors > 0:
    config.hts.num_actors = args.num_actors
  return config


def run_suite(
  args: argparse.Namespace,
  name: str,
  config_name: str,
  env_id: str,
  sync_algorithm: str,
  updates_per_call: int,
) -> dict[str, Any]:
  base = suite_config(args, config_name, env_id, updates_per_call)
  alpha = base.hts.alpha or base.t_max
  seconds = args.seconds
  row: dict[str, Any] = dict(
    suite=name,
    env=env_id,
    num_envs=base.envs_per_learner,
    env_threads=base.env.num_threads,
    hts_alpha=alpha,
    hts_actors=base.hts.num_actors,
  )
  row["raw_sps"] = raw_steps_per_second(base, seconds, alpha)
  print(f"  {name}: {'raw envpool':>12} {row['raw_sps']:8.0f} steps/s", flush=True)
  for label in ("sync", "hts", "hts_no_delay"):
    config = suite_config(args, config_name, env_id, updates_per_call)
    if label == "sync":
      config.algorithm = sync_algorithm
      if config.network.conv_impl == "auto":  # as the HTS run (one learner): like for like
        config.network.conv_impl = "xla"
    config.hts.delayed = label != "hts_no_delay"
    sps, first = algorithm_steps_per_second(config, seconds)
    row[f"{label}_sps"], row[f"{label}_first_call_s"] = sps, first
    print(f"  {name}: {label:>12} {sps:8.0f} steps/s (first call {first:.0f} s)", flush=True)
  row["hts_over_sync"] = row["hts_sps"] / row["sync_sps"]
  row["hts_over_raw"] = row["hts_sps"] / row["raw_sps"]
  row["hts_over_no_delay"] = row["hts_sps"] / row["hts_no_delay_sps"]
  return row


def main(argv: list[str] | None = None) -> None:
  args = parse(sys.argv[1:] if argv is None else argv)
  check_envs(args)
  device = jax.devices()[0]
  print(f"device: {device.platform} ({device.device_kind}), {os.cpu_count()} CPU cores")
  rows = []
  if "atari" in args.suites:
    rows.append(run_suite(args, "atari", "hts_a2c_atari", args.atari_env, "a2c", 20))
  if "football" in args.suites:
    rows.append(run_suite(args, "football", "hts_ppo_gfootball", args.football_env, "ppo", 1))
  print(
    f"\n{'suite':>9} {'envs':>5} {'raw':>8} {'sync':>8} {'hts':>8} {'hts nodelay':>11} "
    f"{'hts/sync':>9} {'hts/raw':>8} {'hts/nodelay':>11}"
  )
  for r in rows:
    print(
      f"{r['suite']:>9} {r['num_envs']:>5} {r['raw_sps']:>8.0f} {r['sync_sps']:>8.0f} "
      f"{r['hts_sps']:>8.0f} {r['hts_no_delay_sps']:>11.0f} {r['hts_over_sync']:>9.2f} "
      f"{r['hts_over_raw']:>8.2f} {r['hts_over_no_delay']:>11.2f}"
    )
  if args.json:
    with open(args.json, "w") as f:
      json.dump(dict(device=str(device), rows=rows), f, indent=2)


if __name__ == "__main__":
  main()
