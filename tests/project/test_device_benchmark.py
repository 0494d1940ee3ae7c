"""benchmarks/device.py: the one-call accelerator benchmark, every phase run at its CPU smoke
scale; phases that fail, run past their time box or do not fit the budget are recorded as
such."""

import json
import os
import subprocess
import sys
import time

import pytest
from xla_options import fast_compile_flags

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = ["-m", "benchmarks.device"]  # run from ROOT

from benchmarks import device
from benchmarks import device_phases as dp

STATUSES = {"ok", "skipped", "failed", "timeout", "out of budget"}
DEVICE_COUNT = "--xla_force_host_platform_device_count"  # tests/conftest.py sets it to 8


def _run(tmp_path, *flags, timeout=300, fresh=False):
  """benchmarks/device.py with `flags`, in the suite's environment but on one CPU device, as
  on the one-accelerator box it is for: the suite's 8 virtual devices would put
  gala_breakout's 4 learners on 4 devices, a layout that box never runs, which costs each arm
  a supervising process and cross-device collectives. `fresh=True` also leaves out the
  suite's compile cache and its compile flags, so that a phase compiles in full at XLA's
  defaults whatever the suite compiled before."""
  env = dict(os.environ)
  xla = [f for f in env.get("XLA_FLAGS", "").split() if not f.startswith(DEVICE_COUNT)]
  if fresh:
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    suite = fast_compile_flags(env.get("XLA_FLAGS", ""))
    xla = [f for f in xla if f not in suite]
  env["XLA_FLAGS"] = " ".join(xla)
  return subprocess.run(
    [sys.executable, *SCRIPT, f"--out={tmp_path}", *flags],
    capture_output=True,
    text=True,
    cwd=ROOT,
    timeout=timeout,
    env=env,
  )


def _summary(tmp_path):
  with open(tmp_path / "summary.json") as f:
    return json.load(f)


# The smoke scale in the suite: each phase's code once, in four calls that the two workers
# share, every phase there ok or skipped (none cut by the budget). One call of the whole
# smoke, as docs/benchmarks.md runs it, takes about 170 s of one core and spends what its
# budget has left on its last phase; here that phase runs alone in a box that holds its
# start-up and a few seconds of Pong. Left out of these calls, and where they are covered:
# pong_fast runs pong_fast through the same galax_run and figures as the last phase (which
# runs configs/pong_many.py, PPO, with one small epoch at this scale); four of the five smoke runs
# (smoke_hts_ppo runs) differ from it only in their config, which
# test_the_smoke_runs_left_out_validate checks with the smoke's fields, and which trains in
# test_gymnax_algorithms (minatar_gala, minatar_hts_a2c), test_baseline_configs
# (impala_atari) and test_a3c (A3C on CartPole; a3c_atari's network and env are
# breakout_a2c's). hts_football_scaling times PPO and HTS-PPO on GFootball at 2 envs with
# hts_vs_sync's hts_config and hts.algorithm_steps_per_second, as hts_vs_sync's football
# suite does (compiling them again took some 17 s of CPU);
# test_hts_football_scaling_builds_both_algorithms_at_each_count runs its own code. The
# budget itself (phases out of budget, time boxes) is
# test_a_failing_or_timed_out_phase_is_recorded_and_the_rest_go_on's.
SMOKE_PARTS = {
  "measurements": [
    "env",
    "raw_envpool",
    "pong_cleanrl",
    "minatar_galax",
    "minatar_rejax",
    "smoke_hts_ppo",
  ],
  "hts_vs_sync": ["hts_vs_sync"],
  device.FINAL: [device.FINAL],
  "gala_breakout": ["gala_breakout"],
}
LEFT_OUT = {
  "pong_fast": device.FINAL,
  "smoke_gala": "smoke_hts_ppo",
  "smoke_hts_a2c": "smoke_hts_ppo",
  "smoke_impala": "smoke_hts_ppo",
  "smoke_a3c": "smoke_hts_ppo",
  "hts_football_scaling": "hts_vs_sync",
}  # phase -> the phase that runs its code
# Skipped where their peer is missing (CleanRL's wheel, rejax); every other phase must be ok.
MAY_SKIP = {"pong_cleanrl", "minatar_rejax"}


def _budget(phases):
  """Every phase's own smoke time box (no phase can run out of budget); the final phase's
  start-up and pong_seconds, and the driver's seconds for its reports. The final phase
  trains for what its box leaves after startup_s: any more budget is more Pong, not more
  margin (startup_s is already the margin: a loaded machine takes 5-15 s to start)."""
  smoke = dp.SCALES["smoke"]
  if phases == [device.FINAL]:
    return smoke.startup_s + smoke.pong_seconds + device._WRITE_S
  return sum(device.PHASES[name][2] for name in phases) + 10


def test_the_smoke_parts_cover_every_phase():
  run = [p for part in SMOKE_PARTS.values() for p in part]
  assert sorted(run + list(LEFT_OUT)) == sorted(device.PHASES) and not set(run) & set(LEFT_OUT)
  assert set(LEFT_OUT.values()) <= set(run)


def test_the_default_call_leaves_the_own_call_phases_out():
  """GALA's Breakout runs and the GFootball scaling need a call of their own (minutes each
  on a GPU box); the default call keeps its budget for Pong."""
  assert set(device.OWN_CALL) <= set(device.PHASES)
  assert device.DEFAULT == [p for p in device.PHASES if p not in device.OWN_CALL]
  assert device.DEFAULT[-1] == device.FINAL


def _with_fields(config, fields):
  """`config` with run.py's `--config.<name>=<value>` fields set (as their field's type)."""
  for field in fields:
    name, value = field.split("=", 1)
    *path, leaf = name.split(".")
    node = config
    for part in path:
      node = node[part]
    old = node[leaf]
    node[leaf] = value == "True" if isinstance(old, bool) else type(old)(value)
  return config


@pytest.mark.parametrize("phase", [p for p in LEFT_OUT if p.startswith("smoke_")])
def test_the_smoke_runs_left_out_validate(phase):
  from galax import config as config_lib

  name = device.PHASES[phase][0].config
  fields = dp.smoke_fields(name, dp.SCALES["smoke"])
  assert "network.name=mlp" in fields and "envs_per_learner=4" in fields
  config = config_lib.validate(_with_fields(config_lib.load(name), fields))
  assert (config.network.name, config.envs_per_learner, config.updates_per_call) == ("mlp", 4, 1)


def test_many_set_repeats_like_atari_peers_galax_set(tmp_path):
  args = device._args([f"--out={tmp_path}", "--many_set=seed=1", "--many_set=env.batch_size=32"])
  assert args.many_set == ["seed=1", "env.batch_size=32"]


def test_a_rate_without_a_steady_window_reads_in_words():
  assert dp.rate_text(15962.6) == "15,963 steps/s"
  assert dp.rate_text(float("nan")) == dp.rate_text(None) == "no steady rate"


def _fake_runs(monkeypatch, outcomes):
  """subprocess.run in device_phases answers with `outcomes` in turn: (returncode, stdout);
  a run that succeeds writes its workdir's result.json."""
  calls = []

  def run(cmd, **_):
    code, stdout = outcomes[len(calls)]
    calls.append(cmd)
    if not code:
      workdir = next(a.split("=", 1)[1] for a in cmd if a.startswith("--workdir="))
      os.makedirs(workdir)
      result = dict(env_steps=64, updates=1, steps_per_second=None, compile_time_s=9.6)
      with open(os.path.join(workdir, "result.json"), "w") as f:
        json.dump(result, f)
    return subprocess.CompletedProcess(cmd, code, stdout, "crashed\n" if code else "")

  monkeypatch.setattr(dp.subprocess, "run", run)
  return calls


def _smoke_phase(tmp_path):
  args = device._args([f"--out={tmp_path}", "--scale=smoke"])
  ctx = dp.Context("smoke_hts_ppo", dp.SCALES["smoke"], str(tmp_path), args, 45.0)
  return ctx, device.PHASES["smoke_hts_ppo"][0]


def test_a_smoke_run_whose_engine_crashed_at_start_runs_once_more(tmp_path, monkeypatch):
  crash = f"[FATAL ERROR !!! N00000 !!!] in [football::main]: {dp.ENGINE_START_CRASH} x.ttf"
  calls = _fake_runs(monkeypatch, [(1, crash), (0, "done")])
  ctx, phase = _smoke_phase(tmp_path)
  assert "run twice" in phase(ctx)["summary"]
  assert len(calls) == 2 and ctx.figures["retries"] == 1


def test_a_smoke_run_that_fails_otherwise_is_not_run_again(tmp_path, monkeypatch):
  calls = _fake_runs(monkeypatch, [(1, "Traceback"), (0, "done")])
  ctx, phase = _smoke_phase(tmp_path)
  with pytest.raises(RuntimeError, match="exited with 1: crashed"):
    phase(ctx)
  assert len(calls) == 1


def test_hts_football_scaling_builds_both_algorithms_at_each_count(tmp_path, monkeypatch):
  """The phase's own code at the smoke scale: its configs (each algorithm built for real, its
  GFootball envs started and closed), rows, ratio and summary; only the timing is faked,
  which the hts_vs_sync smoke part runs for the same configs on another scenario."""
  import galax
  from benchmarks import device_atari as da
  from benchmarks import hts

  timed = []

  def algorithm_steps_per_second(config, seconds):
    algorithm = galax.make_algorithm(config)
    algorithm.env.close()
    timed.append((config.algorithm, config.env.id, config.envs_per_learner, seconds))
    return {"ppo": 40.0, "hts_ppo": 60.0}[config.algorithm], 9.0

  monkeypatch.setattr(hts, "algorithm_steps_per_second", algorithm_steps_per_second)
  args = device._args([f"--out={tmp_path}", "--scale=smoke"])
  ctx = dp.Context("hts_football_scaling", dp.SCALES["smoke"], str(tmp_path), args, 60.0)
  summary = device.PHASES["hts_football_scaling"][0](ctx)["summary"]
  seconds = dp.SCALES["smoke"].measure_seconds
  assert timed == [(a, da.FOOTBALL, 2, seconds) for a in ("ppo", "hts_ppo")]
  assert summary == "2 envs 1.50x (HTS-PPO / PPO)"
  row = json.loads((tmp_path / "phases" / "hts_football_scaling.json").read_text())
  assert row["result"]["rows"] == [
    dict(
      env=da.FOOTBALL,
      num_envs=2,
      ppo_sps=40.0,
      ppo_first_call_s=9.0,
      hts_ppo_sps=60.0,
      hts_ppo_first_call_s=9.0,
      hts_over_ppo=1.5,
    )
  ]


@pytest.mark.slow
@pytest.mark.parametrize("part", SMOKE_PARTS)
def test_every_phase_of_the_smoke_scale_runs(tmp_path, part):
  phases, budget = SMOKE_PARTS[part], _budget(SMOKE_PARTS[part])
  start = time.monotonic()
  proc = _run(
    tmp_path,
    "--scale=smoke",
    f"--phases={','.join(phases)}",
    f"--budget_s={budget}",
    timeout=budget + 60,
  )
  wall = time.monotonic() - start
  assert proc.returncode == 0, proc.stderr[-3000:]
  summary = _summary(tmp_path)
  assert list(summary["phases"]) == phases
  for name, record in summary["phases"].items():
    assert record["status"] in ({"ok", "skipped"} if name in MAY_SKIP else {"ok"}), (
      name,
      record,
      proc.stdout[-3000:],
    )
    assert isinstance(record["result"], dict), name
  if "env" in phases:
    assert summary["phases"]["env"]["result"]["devices"]
  markdown = (tmp_path / "summary.md").read_text()
  for name in phases:
    assert f"| {name} |" in markdown
  assert wall < budget + 10, f"{wall:.0f} s:\n{proc.stdout}"


@pytest.mark.slow
def test_a_failing_or_timed_out_phase_is_recorded_and_the_rest_go_on(tmp_path):
  # A config that does not exist: run.py stops with one line, the phase fails with it.
  proc = _run(
    tmp_path / "a",
    "--scale=smoke",
    "--phases=pong_many_to_18,env",
    "--many_config=no_such_config",
    "--budget_s=60",
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  phases = _summary(tmp_path / "a")["phases"]
  assert phases["pong_many_to_18"]["status"] == "failed"
  assert "galax exited with 2" in phases["pong_many_to_18"]["note"]
  # A 5.5 s box (the least a phase is given is 5 s) cannot hold MinAtar PPO's imports and
  # its compile at XLA's defaults: it is stopped, and nothing is left for env.
  proc = _run(
    tmp_path / "b",
    "--scale=smoke",
    "--phases=minatar_galax,env",
    "--budget_s=10.5",
    fresh=True,
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  phases = _summary(tmp_path / "b")["phases"]
  assert phases["minatar_galax"]["status"] == "timeout"
  assert phases["env"]["status"] == "out of budget"
  assert "| minatar_galax | timeout |" in (tmp_path / "b" / "summary.md").read_text()


@pytest.mark.parametrize(
  "flags, message",
  [
    (["--scale=huge"], "error: --scale='huge': choose one of full, smoke"),
    (["--phases=env,nope"], "error: unknown phase 'nope': choose from env, raw_envpool"),
    (["--budget_s=-1"], "error: --budget_s=-1 must be >= 0"),
    (["--many_set=seed"], "error: --many_set: 'seed' is not <field>=<value>"),
  ],
)
def test_bad_input_is_one_error_line(tmp_path, flags, message):
  proc = _run(tmp_path, *flags, timeout=60)
  assert proc.returncode == 2
  assert proc.stderr.strip().startswith(message), proc.stderr
  assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_an_unwritable_out_is_one_error_line(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("")
  proc = subprocess.run(
    [sys.executable, *SCRIPT, f"--out={blocker}/sub"],
    capture_output=True,
    text=True,
    cwd=ROOT,
    timeout=60,
  )
  assert proc.returncode == 2
  assert proc.stderr.strip().startswith(f"error: --out={blocker}/sub: cannot create it")
  assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
