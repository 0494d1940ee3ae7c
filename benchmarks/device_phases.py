"""The phases of benchmarks/device.py, each run in its own time-boxed child process.

A phase takes a `Context` (benchmarks/device_context.py: the phase's scale and time box,
its figures recorded as they come; `Skipped` says why a phase did not run) and returns its
figures as a dict. Here: the machine, raw envpool, MinAtar PPO against rejax, HTS-RL
against its synchronous baseline and the smoke runs of run.py; the Pong phases, on
atari_peer.py's runs, are benchmarks/device_pong.py's (imported here, so that device.py
finds every phase in this module). The measuring code is the other benchmarks' own:
measure.py (steady steps/s, compile apart), atari_peer.py (CleanRL's PPO and galax's run.py
on Pong), peer_learning.py (rejax's PPO at PureJaxRL's MinAtar shape), hts.py (HTS-RL
against its synchronous baseline).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from typing import Any, Callable

from benchmarks.device_context import SCALES, SMALL_PPO, Context, Scale, Skipped, scale_overrides

# The Pong phases (their code: device_pong.py), so that device.py and its tests find every
# phase, and the Pong summary's rate_text, in this module.
from benchmarks.device_pong import pong_cleanrl, pong_fast, pong_many_to_18, rate_text  # noqa: F401

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def environment(ctx: Context) -> dict[str, Any]:
  from benchmarks import measure

  info = measure.machine()
  versions = {}
  for package in (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "chex",
    "orbax-checkpoint",
    "envpool",
    "gymnax",
    "ml_collections",
    "tensorboardX",
    "dm-env",
    "optree",
    "gymnasium",
    "numpy",
    "rejax",
  ):
    try:
      versions[package] = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
      versions[package] = None
  import envpool
  import jax

  pong = envpool.make("Pong-v5", env_type="gymnasium", num_envs=2)
  info.update(
    devices=[str(d) for d in jax.devices()],
    cpu_count=os.cpu_count(),
    python=platform.python_version(),
    versions=versions,
    pong_observation=list(pong.reset()[0].shape),
  )
  if shutil.which("nvidia-smi"):
    info["gpus"] = (
      subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
      .stdout.strip()
      .splitlines()
    )
  ctx.record(**info)
  return dict(info, summary=f"{info['device']}, {os.cpu_count()} CPUs, jax {info['jax']}")


def _raw_rate(num_envs: int, batch_size: int, seconds: float) -> float:
  """envpool Pong-v5 through its Python API, random actions, galax's training options:
  agent steps/s; sync when batch_size == num_envs, else envpool's async send/recv."""
  import envpool
  import numpy as np

  env = envpool.make(
    "Pong-v5",
    env_type="gymnasium",
    num_envs=num_envs,
    batch_size=batch_size,
    episodic_life=True,
    reward_clip=True,
    seed=0,
  )
  env.async_reset()
  steps, start = 0, None
  for i in range(10**9):
    if i == 20:  # past the resets
      steps, start = 0, time.perf_counter()
    if start is not None and time.perf_counter() - start >= seconds:
      break
    ids = env.recv()[-1]["env_id"]
    env.send(np.random.randint(0, 6, len(ids)).astype(np.int32), ids)
    steps += len(ids)
  rate = steps / (time.perf_counter() - start)
  env.close()
  return rate


def raw_envpool(ctx: Context) -> dict[str, Any]:
  for n in ctx.scale.raw_envs:
    ctx.record(**{f"sync_{n}": _raw_rate(n, n, ctx.scale.raw_seconds)})
    ctx.record(**{f"async_{n}_batch_{n // 2}": _raw_rate(n, n // 2, ctx.scale.raw_seconds)})
  return dict(summary=", ".join(f"{k} {v:,.0f}" for k, v in ctx.figures.items()))


def _minatar_updates(num_envs: int) -> int:
  return max(1, 65536 // (num_envs * 128))  # ~64k agent steps per call (PPO: 128 per env)


def minatar_galax(ctx: Context) -> dict[str, Any]:
  """configs/minatar_ppo.py (PureJaxRL's MinAtar shape) at each env count."""
  from benchmarks import measure
  from galax import config as config_lib

  for n in ctx.scale.minatar_envs:
    updates = 1 if ctx.scale.envs else _minatar_updates(n)  # smoke: the smallest call
    config = config_lib.load(
      "minatar_ppo", envs_per_learner=n, total_env_steps=10**10, updates_per_call=updates
    )
    ctx.record(**{f"envs_{n}": measure.algorithm(config, ctx.scale.measure_seconds)})
  return dict(
    summary=", ".join(f"{k} {v['steps_per_second']:,.0f} steps/s" for k, v in ctx.figures.items())
  )


def minatar_rejax(ctx: Context) -> dict[str, Any]:
  """rejax's PPO with benchmarks/peer_learning.py's settings at each env count: one jitted
  train of ~1M agent steps (evaluation off), best of two timed calls."""
  try:
    import rejax
  except ImportError as e:
    raise Skipped(f"rejax is not importable ({e}): pip install 'galax-rl[peer]'") from e
  import gymnax
  import jax

  # After jax: peer_learning defaults JAX_PLATFORMS to cpu, which must not act here.
  from benchmarks import peer_learning

  env, env_params = gymnax.make("Breakout-MinAtar")
  for n in ctx.scale.minatar_envs:
    steps = max(2, min(16, (1 << 20) // (n * 128))) * n * 128
    if ctx.scale.envs:
      steps = 2 * n * 128
    settings = dict(peer_learning.PEER_SETTINGS, num_envs=n)
    algo = rejax.PPO.create(
      env=peer_learning.FiveTupleStep(env),
      env_params=env_params,
      total_timesteps=steps,
      eval_freq=steps,
      **settings,
    )
    algo = algo.replace(eval_callback=lambda *_: jax.numpy.zeros(()))
    key = jax.random.PRNGKey(0)
    start = time.perf_counter()
    train = jax.jit(algo.train).lower(key).compile()
    compile_s = time.perf_counter() - start
    times = []
    for _ in range(3):
      start = time.perf_counter()
      jax.block_until_ready(train(key))
      times.append(time.perf_counter() - start)
    ctx.record(
      **{
        f"envs_{n}": dict(
          steps_per_second=steps / min(times[1:]), compile_s=compile_s, agent_steps_per_call=steps
        )
      }
    )
  return dict(
    summary=", ".join(f"{k} {v['steps_per_second']:,.0f} steps/s" for k, v in ctx.figures.items())
  )


def smoke_fields(config: str, scale: Scale) -> list[str]:
  """The config fields (`name=value`) that a smoke run of `config` sets at `scale`."""
  fields = [
    f"time_limit_s={scale.smoke_seconds}",
    "updates_per_call=1",
    "checkpoint_every_steps=0",
    "tensorboard=False",
    "log_every_steps=1",
    *scale_overrides(scale),
  ]
  if scale.envs and config == "hts_ppo_gfootball":  # 16 steps per update, not 128
    fields += [f"{k}={v}" for k, v in SMALL_PPO.items()]
  return fields


# GFootball's engine can fail to open its font file while envpool starts its envs on
# several threads, and then the process dies (seen once in the suite, under load; 0 of 25
# plain starts): a smoke run that dies so is run once more, and the retry is recorded.
ENGINE_START_CRASH = "Could not load font"


def _run_smoke(cmd: list[str], workdir: str) -> tuple[subprocess.CompletedProcess, int]:
  """(the last run.py process, retries): a second run only after an engine start crash."""
  retries = 0
  while True:
    shutil.rmtree(workdir, ignore_errors=True)
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n", flush=True)
    crashed = ENGINE_START_CRASH in proc.stdout + proc.stderr
    if not proc.returncode or not crashed or retries:
      return proc, retries
    retries += 1


def smoke_run(config: str) -> Callable[[Context], dict[str, Any]]:
  """`python run.py --config=<config>` for smoke_seconds, one update per call."""

  def phase(ctx: Context) -> dict[str, Any]:
    workdir = ctx.workdir("run")
    cmd = [
      sys.executable,
      os.path.join(REPO, "run.py"),
      f"--config={config}",
      f"--workdir={workdir}",
      *(f"--config.{f}" for f in smoke_fields(config, ctx.scale)),
    ]
    proc, retries = _run_smoke(cmd, workdir)
    if proc.returncode:
      lines = proc.stderr.strip().splitlines() or ["(no output)"]
      raise RuntimeError(f"run.py exited with {proc.returncode}: {lines[-1]}")
    with open(os.path.join(workdir, "result.json")) as f:
      result = json.load(f)
    keep = ("env_steps", "updates", "steps_per_second", "compile_time_s", "mean_return")
    ctx.record(config=config, retries=retries, **{k: result.get(k) for k in keep})
    sps = result.get("steps_per_second")
    again = " (run twice: the engine crashed at start-up)" if retries else ""
    return dict(
      summary=f"{config}: {result['env_steps']:,} steps, compile "
      f"{result['compile_time_s']:.1f} s" + (f", {sps:,.0f} steps/s" if sps else "") + again
    )

  phase.config = config  # what the phase runs (tests/project/test_device_benchmark.py)
  return phase


def hts_config(args: argparse.Namespace, suite: str, small: bool) -> Any:
  """hts.py's suite config under its flags `args` (`hts.parse`): updates per call as hts.py's
  main has them."""
  from benchmarks import hts
  from galax import config as config_lib

  name, env_id, upc = (
    ("hts_a2c_atari", args.atari_env, 20)
    if suite == "atari"
    else ("hts_ppo_gfootball", args.football_env, 1)
  )
  config = hts.suite_config(args, name, env_id, 2 if small and upc > 1 else upc)
  if small:
    config.network.name = SCALES["smoke"].network
    if suite == "football":
      config_lib.set_fields(config, SMALL_PPO)
  return config


def hts_vs_sync(ctx: Context) -> dict[str, Any]:
  """HTS-RL's wall-clock claim on this machine: HTS-A2C vs A2C on Pong, HTS-PPO vs PPO on
  GFootball (benchmarks/hts.py's configs and timing), at hts_envs envs, with raw envpool."""
  from benchmarks import hts

  args = hts.parse([f"--num_envs={ctx.scale.hts_envs}"])
  seconds, small = ctx.scale.measure_seconds, bool(ctx.scale.envs)
  for suite, sync in (("atari", "a2c"), ("football", "ppo")):
    base = hts_config(args, suite, small)
    row = dict(
      env=base.env.id,
      num_envs=base.envs_per_learner,
      raw_sps=hts.raw_steps_per_second(base, seconds, base.hts.alpha or base.t_max),
    )
    for label in ("sync", "hts"):
      config = hts_config(args, suite, small)
      if label == "sync":
        config.algorithm = sync
      row[f"{label}_sps"], row[f"{label}_first_call_s"] = hts.algorithm_steps_per_second(
        config, seconds
      )
      ctx.record(**{suite: row})
    row["hts_over_sync"] = row["hts_sps"] / row["sync_sps"]
    ctx.record(**{suite: row})
  return dict(
    summary="; ".join(
      f"{s}: {sync} {r['sync_sps']:,.0f}, HTS {r['hts_sps']:,.0f} steps/s "
      f"({r['hts_over_sync']:.2f}x)"
      for (s, r), sync in zip(ctx.figures.items(), ("A2C", "PPO"))
    )
  )
