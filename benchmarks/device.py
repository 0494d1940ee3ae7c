"""Every figure an accelerator run should give, in one call of under 8 minutes.

  python -m benchmarks.device --out=/tmp/device                  # a 16-core GPU box
  python -m benchmarks.device --out=/tmp/device --scale=smoke    # every phase tiny, on CPU
  python -m benchmarks.device --out=/tmp/seed1 --phases=env,pong_many_to_18 \
      --many_set=seed=1 --budget_s=280                           # another many-env seed

Phases, in this order, each in its own child process with its own time box (a phase that
fails or runs past its box is recorded as such, with what it measured until then, and the
rest go on; a phase the budget cannot fit is recorded as "out of budget"):

  env              jax devices, package versions, CPUs, GPUs, an envpool Pong reset
  raw_envpool      envpool Pong-v5 steps/s, random actions: sync and async (batch_size =
                   num_envs / 2) at 16, 64 and 256 envs
  pong_cleanrl     CleanRL's envpool PPO (benchmarks/atari_peer.py) for 60 s; skipped
                   without its wheel in --peer_cache (the box has no network)
  pong_fast        `run.py --config=pong_fast` for 60 s (atari_peer.py's galax run)
  minatar_galax    configs/minatar_ppo.py at 64 and 4,096 envs (PureJaxRL's shape)
  minatar_rejax    rejax's PPO at the same shape, if rejax is importable
  hts_vs_sync      HTS-A2C vs A2C on Pong, HTS-PPO vs PPO on GFootball (benchmarks/hts.py)
  smoke_gala, smoke_hts_a2c, smoke_hts_ppo, smoke_impala, smoke_a3c
                   `run.py` of minatar_gala, minatar_hts_a2c, hts_ppo_gfootball,
                   impala_atari, a3c_atari for a few seconds
  pong_many_to_18  the many-env Pong config (the first in configs/ with >= 64 envs, or
                   --many_config; pong_fast if there is none) for the rest of the budget,
                   stopping at a return of 18; its first 60 s are its 60 s figure

Two more phases take a call of their own (named in --phases; not in the default call):
gala_breakout (GALA-A2C against all-reduce A2C on Breakout, the pre-registered A-code
arms) and hts_football_scaling (HTS-PPO against PPO over 16-128 GFootball envs); see
benchmarks/device_atari.py.

Writes <out>/summary.json (every phase with its status: ok, skipped, failed, timeout or
out of budget; wall seconds, time box, note, figures) and <out>/summary.md, both rewritten
after every phase; <out>/logs/<phase>.log holds each child's output.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import traceback
from typing import Any

from benchmarks import device_atari as da
from benchmarks import device_context as dc
from benchmarks import device_phases as dp
from benchmarks import device_report

# name -> (phase, time box on a GPU box, time box in the CPU smoke); seconds.
PHASES: dict[str, tuple[Any, float, float]] = {
  "env": (dp.environment, 60, 45),
  "raw_envpool": (dp.raw_envpool, 90, 30),
  "pong_cleanrl": (dp.pong_cleanrl, 130, 60),
  "pong_fast": (dp.pong_fast, 110, 60),
  "minatar_galax": (dp.minatar_galax, 75, 45),
  "minatar_rejax": (dp.minatar_rejax, 75, 45),
  "hts_vs_sync": (dp.hts_vs_sync, 120, 90),
  "smoke_gala": (dp.smoke_run("minatar_gala"), 45, 40),
  "smoke_hts_a2c": (dp.smoke_run("minatar_hts_a2c"), 45, 40),
  "smoke_hts_ppo": (dp.smoke_run("hts_ppo_gfootball"), 90, 45),  # a 39 s compile on an H200
  "smoke_impala": (dp.smoke_run("impala_atari"), 45, 40),
  "smoke_a3c": (dp.smoke_run("a3c_atari"), 45, 40),
  "pong_many_to_18": (dp.pong_many_to_18, 0, 0),  # the rest of the budget
  "gala_breakout": (da.gala_breakout, 480, 90),
  "hts_football_scaling": (da.hts_football_scaling, 480, 60),
}
FINAL = "pong_many_to_18"
OWN_CALL = ("gala_breakout", "hts_football_scaling")  # named in --phases only
DEFAULT = [name for name in PHASES if name not in OWN_CALL]
_WRITE_S = 5.0  # reports and stragglers at the end


def _args(argv: list[str]) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--out", required=True, help="folder for summary.json/.md, logs")
  parser.add_argument("--scale", default="full", help=f"one of {', '.join(dc.SCALES)}")
  parser.add_argument(
    "--budget_s",
    type=float,
    default=0.0,
    help="the whole call, in seconds (0: the scale's: 470 full, 170 smoke)",
  )
  parser.add_argument(
    "--peer_cache",
    default=os.path.expanduser("~/.cache/galax/cleanrl"),
    help="folder with the cleanrl 1.2.0 wheel (atari_peer.py's)",
  )
  parser.add_argument(
    "--many_config",
    default="",
    help="the many-env Pong config "
    "(default: the first in configs/ with >= 64 envs, else pong_fast)",
  )
  parser.add_argument(
    "--many_set",
    action="append",
    default=[],
    help="field=value override of the many-env run's config only, e.g. seed=1 or "
    "env.batch_size=32 (repeatable, as atari_peer.py's --galax_set)",
  )
  parser.add_argument(
    "--phases", default="", help="comma-separated subset (default: all but those of OWN_CALL)"
  )
  parser.add_argument("--phase", default="", help=argparse.SUPPRESS)  # a child's phase
  parser.add_argument("--phase_seconds", type=float, default=0.0, help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.scale not in dc.SCALES:
    parser.exit(2, f"error: --scale={args.scale!r}: choose one of {', '.join(dc.SCALES)}\n")
  chosen = [p for p in args.phases.split(",") if p]
  unknown = [p for p in chosen + ([args.phase] if args.phase else []) if p not in PHASES]
  if unknown:
    parser.exit(2, f"error: unknown phase {unknown[0]!r}: choose from {', '.join(PHASES)}\n")
  bad = [f for f in args.many_set if "=" not in f or f.startswith("=")]
  if bad:
    parser.exit(2, f"error: --many_set: {bad[0]!r} is not <field>=<value>\n")
  if args.budget_s < 0:
    parser.exit(2, f"error: --budget_s={args.budget_s:g} must be >= 0\n")
  args.peer_cache = os.path.abspath(args.peer_cache)
  args.out = os.path.abspath(args.out)
  try:
    os.makedirs(args.out, exist_ok=True)
  except OSError as e:
    parser.exit(2, f"error: --out={args.out}: cannot create it ({e.strerror})\n")
  return args


def child(args: argparse.Namespace) -> int:
  """Runs one phase in this process; its figures go to <out>/phases/<phase>.json."""
  ctx = dc.Context(args.phase, dc.SCALES[args.scale], args.out, args, args.phase_seconds)
  try:
    extra = PHASES[args.phase][0](ctx)
  except dc.Skipped as e:
    dc.write_phase(args.out, args.phase, dict(status="skipped", note=str(e), result=ctx.figures))
    return 0
  except SystemExit as e:  # the benchmarks' one-line `error:` exits
    print(e.code if isinstance(e.code, str) else f"exit {e.code}", flush=True)
    return 1
  except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    return 1
  summary = extra.pop("summary", "")
  ctx.figures.update(extra)
  dc.write_phase(args.out, args.phase, dict(status="ok", summary=summary, result=ctx.figures))
  return 0


def _run_child(args: argparse.Namespace, name: str, seconds: float) -> tuple[str, float]:
  """(how it ended: ok | timeout | exit N, wall seconds); a timed-out child's process
  group (its run.py and CleanRL children included) is stopped."""
  cmd = [
    sys.executable,
    "-m",
    "benchmarks.device",
    f"--phase={name}",
    f"--out={args.out}",
    f"--scale={args.scale}",
    f"--phase_seconds={seconds:.1f}",
    f"--peer_cache={args.peer_cache}",
    f"--many_config={args.many_config}",
    *(f"--many_set={item}" for item in args.many_set),
  ]
  os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
  start = time.perf_counter()
  with open(os.path.join(args.out, "logs", f"{name}.log"), "w") as log:
    proc = subprocess.Popen(
      cmd,
      stdout=log,
      stderr=subprocess.STDOUT,
      start_new_session=True,
      cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # the checkout's root
      env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    try:
      code = proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
      for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
          os.killpg(proc.pid, sig)
          proc.wait(timeout=wait)
          break
        except (ProcessLookupError, subprocess.TimeoutExpired):
          continue
      return "timeout", time.perf_counter() - start
  return ("ok" if code == 0 else f"exit {code}"), time.perf_counter() - start


def _record(
  args: argparse.Namespace, name: str, ended: str, wall: float, seconds: float
) -> dict[str, Any]:
  path = os.path.join(args.out, "phases", f"{name}.json")
  written = json.load(open(path)) if os.path.exists(path) else {}
  record = dict(
    status=written.get("status", "failed"),
    wall_s=round(wall, 1),
    time_box_s=round(seconds, 1),
    note=written.get("note", ""),
    summary=written.get("summary", ""),
    result=written.get("result", {}),
  )
  if ended == "timeout":
    record.update(status="timeout", note=f"stopped at its {seconds:.0f} s time box")
  elif ended != "ok" or record["status"] not in ("ok", "skipped"):
    record.update(status="failed", note=f"{ended}: {device_report.last_line(args.out, name)}")
  return record


def driver(args: argparse.Namespace) -> int:
  scale = dc.SCALES[args.scale]
  budget = args.budget_s or scale.budget_s
  start = time.perf_counter()
  final_reserve = scale.pong_seconds + scale.startup_s + _WRITE_S
  chosen = [p for p in args.phases.split(",") if p] or DEFAULT
  report = dict(
    command="python " + " ".join(sys.argv),
    scale=args.scale,
    budget_s=budget,
    started=time.strftime("%Y-%m-%d %H:%M:%S"),
    phases={},
  )
  for name in chosen:
    left = budget - (time.perf_counter() - start)
    _, full_box, smoke_box = PHASES[name]
    if name == FINAL:
      seconds = left - _WRITE_S
    else:
      reserve = final_reserve if FINAL in chosen else _WRITE_S
      seconds = min(full_box if args.scale == "full" else smoke_box, left - reserve)
    print(f"== {name} (time box {max(seconds, 0):.0f} s)", flush=True)
    if seconds < 5:
      record = dict(
        status="out of budget",
        wall_s=0.0,
        time_box_s=0.0,
        summary="",
        result={},
        note=f"{left:.0f} s of the {budget:.0f} s budget left",
      )
    else:
      ended, wall = _run_child(args, name, seconds)
      record = _record(args, name, ended, wall, seconds)
    report["phases"][name] = record
    print(
      f"   {record['status']} in {record['wall_s']:.0f} s: {record['summary'] or record['note']}",
      flush=True,
    )
    report["wall_s"] = round(time.perf_counter() - start, 1)
    device_report.write(args.out, report)
  print(
    f"wrote {os.path.join(args.out, 'summary.md')} and summary.json ({report['wall_s']:.0f} s)",
    flush=True,
  )
  return 0


def main(argv: list[str]) -> int:
  args = _args(argv)
  return child(args) if args.phase else driver(args)


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
