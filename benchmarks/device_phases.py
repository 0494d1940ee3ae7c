"""The phases of benchmarks/device.py, each run in its own time-boxed child process.

A phase takes a `Context` and returns its figures as a dict (the child writes them to
<out>/phases/<name>.json); `ctx.record` saves figures as they come, so a phase killed at
its time box keeps what it measured. `Skipped` records why a phase did not run. The
measuring code is the other benchmarks' own: measure.py (steady steps/s, compile apart),
atari_peer.py (CleanRL's PPO and galax's run.py on Pong), peer_learning.py (rejax's PPO at
PureJaxRL's MinAtar shape), hts.py (HTS-RL against its synchronous baseline).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from typing import Any, Callable

import atari_peer
import cleanrl_script

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Skipped(Exception):
  """A phase that cannot run here (a missing peer, no such config); the message says why."""


@dataclasses.dataclass(frozen=True)
class Scale:
  """How big every phase is: `full` for a 16-core GPU box (under 8 minutes in all), `smoke`
  for a CPU check of every phase (under 3 minutes)."""

  budget_s: float  # the whole call, this driver included
  pong_seconds: float  # pong_fast, CleanRL, and the many-env run's first stretch
  raw_envs: tuple[int, ...]
  raw_seconds: float
  minatar_envs: tuple[int, ...]
  measure_seconds: float  # steady state per MinAtar and HTS figure
  smoke_seconds: float  # time_limit_s of each smoke run (compile included)
  hts_envs: int
  envs: int  # envs_per_learner of the Pong and smoke runs; 0: the configs' own
  network: str  # the network of every run; "": the configs' own
  startup_s: float  # run.py's imports, envs and compile before its time limit counts


SCALES = {
  "full": Scale(
    budget_s=470,
    pong_seconds=60,
    raw_envs=(16, 64, 256),
    raw_seconds=3,
    minatar_envs=(64, 4096),
    measure_seconds=3,
    smoke_seconds=8,
    hts_envs=16,
    envs=0,
    network="",
    startup_s=30,
  ),
  "smoke": Scale(
    budget_s=170,
    pong_seconds=8,
    raw_envs=(4, 8),
    raw_seconds=0.5,
    minatar_envs=(8,),
    measure_seconds=0.3,
    smoke_seconds=1,
    hts_envs=2,
    envs=4,
    network="mlp",
    startup_s=40,  # a loaded 2-core CI machine took over 15 s to start the last phase
  ),
}


@dataclasses.dataclass
class Context:
  name: str
  scale: Scale
  out: str
  args: argparse.Namespace
  seconds: float  # what the driver left this phase (its time box)
  figures: dict[str, Any] = dataclasses.field(default_factory=dict)

  def record(self, **figures: Any) -> None:
    self.figures.update(figures)
    write_phase(self.out, self.name, dict(status="running", result=self.figures))

  def workdir(self, *parts: str) -> str:
    path = os.path.join(self.out, "work", self.name, *parts)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def finite(value: Any) -> Any:
  """value with NaN and infinities as None (strict JSON)."""
  if isinstance(value, float) and not math.isfinite(value):
    return None
  if isinstance(value, dict):
    return {k: finite(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [finite(v) for v in value]
  return value


def write_phase(out: str, name: str, record: dict[str, Any]) -> None:
  os.makedirs(os.path.join(out, "phases"), exist_ok=True)
  path = os.path.join(out, "phases", f"{name}.json")
  with open(path + ".tmp", "w") as f:
    json.dump(finite(record), f, indent=1, allow_nan=False)
  os.replace(path + ".tmp", path)  # the driver never reads half a file


def environment(ctx: Context) -> dict[str, Any]:
  import measure

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


def _overrides(scale: Scale) -> list[str]:
  """The smoke scale's config fields (fewer envs, a network that compiles in seconds)."""
  return ([f"envs_per_learner={scale.envs}"] if scale.envs else []) + (
    [f"network.name={scale.network}"] if scale.network else []
  )


def _peer_args(
  ctx: Context, seconds: float, config: str = "pong_fast", window: int = 10
) -> argparse.Namespace:
  galax_set = _overrides(ctx.scale) + (["updates_per_call=2"] if ctx.scale.envs else [])
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
    args.galax_set += [f"{k}={v}" for k, v in _SMALL_PPO.items() if not k.startswith("hts.")]
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


def _minatar_updates(num_envs: int) -> int:
  return max(1, 65536 // (num_envs * 128))  # ~64k agent steps per call (PPO: 128 per env)


def minatar_galax(ctx: Context) -> dict[str, Any]:
  """configs/minatar_ppo.py (PureJaxRL's MinAtar shape) at each env count."""
  import measure

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
  import peer_learning

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
    *_overrides(scale),
  ]
  if scale.envs and config == "hts_ppo_gfootball":  # 16 steps per update, not 128
    fields += [f"{k}={v}" for k, v in _SMALL_PPO.items()]
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


# GFootball PPO and HTS-PPO in the smoke: 16 env steps per update instead of 128, one epoch.
_SMALL_PPO = {
  "t_max": 16,
  "hts.alpha": 16,
  "ppo.epochs": 1,
  "ppo.minibatches": 2,
  "hts.microbatches": 2,
}


def _hts_config(suite: str, small: bool) -> Any:
  """hts.py's suite config (its flags parsed): updates per call as hts.py's main has them."""
  import hts
  from absl import flags

  from galax import config as config_lib

  name, env_id, upc = (
    ("hts_a2c_atari", flags.FLAGS.atari_env, 20)
    if suite == "atari"
    else ("hts_ppo_gfootball", flags.FLAGS.football_env, 1)
  )
  config = hts.suite_config(name, env_id, 2 if small and upc > 1 else upc)
  if small:
    config.network.name = SCALES["smoke"].network
    if suite == "football":
      config_lib.set_fields(config, _SMALL_PPO)
  return config


def hts_vs_sync(ctx: Context) -> dict[str, Any]:
  """HTS-RL's wall-clock claim on this machine: HTS-A2C vs A2C on Pong, HTS-PPO vs PPO on
  GFootball (benchmarks/hts.py's configs and timing), at hts_envs envs, with raw envpool."""
  import hts
  from absl import flags

  flags.FLAGS(["hts", f"--num_envs={ctx.scale.hts_envs}"])
  seconds, small = ctx.scale.measure_seconds, bool(ctx.scale.envs)
  for suite, sync in (("atari", "a2c"), ("football", "ppo")):
    base = _hts_config(suite, small)
    row = dict(
      env=base.env.id,
      num_envs=base.envs_per_learner,
      raw_sps=hts.raw_steps_per_second(base, seconds, base.hts.alpha or base.t_max),
    )
    for label in ("sync", "hts"):
      config = _hts_config(suite, small)
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
