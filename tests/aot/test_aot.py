"""Compiling for accelerators that are not there (galax.aot.compile, .targets, .hlo_cost).

The TPU and GPU compiles need the `tpu` / `gpu-aot` extras and are skipped, with the
reason, where they are missing; the HLO cost walk and the target plumbing run anywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from galax.aot import compile as aot
from galax.aot import hlo_cost, targets
from galax.config import from_data, load, make_algorithm

HAS_TPU = not targets.compiler_missing("tpu")
HAS_CUDA = not targets.compiler_missing("gpu")
needs_tpu = pytest.mark.skipif(not HAS_TPU, reason="no TPU compiler: pip install -e '.[tpu]'")
needs_cuda = pytest.mark.skipif(
  not HAS_CUDA, reason="no CUDA compiler: pip install -e '.[gpu-aot]'"
)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _scan_program(steps: int):
  def f(x, w):
    return jax.lax.scan(lambda c, _: (jnp.tanh(c @ w), c), x, None, length=steps)

  x, w = jnp.ones((64, 128)), jnp.ones((128, 128))
  return jax.jit(f).lower(x, w).compile()


def test_loop_bodies_once_agree_with_xla_and_trip_counts_multiply():
  compiled = _scan_program(10)
  xla = compiled.cost_analysis()
  once = hlo_cost.program_cost(compiled.as_text(), multiply_loops=False)
  full = hlo_cost.program_cost(compiled.as_text())
  matmul = 2 * 64 * 128 * 128
  assert once.flops == pytest.approx(xla["flops"], rel=0.02)
  assert once.bytes == pytest.approx(xla["bytes accessed"], rel=0.05)
  assert full.unknown_loops == 0
  assert full.flops == pytest.approx(10 * once.flops, rel=0.01)
  assert 10 * matmul <= full.flops <= 10 * matmul * 1.05
  # The stacked [10, 64, 128] output is written in place, one [64, 128] slice per step:
  # counting the whole buffer in and out every step would be 2 x 327,680 bytes a step.
  carry, stacked = 64 * 128 * 4, 10 * 64 * 128 * 4
  assert 10 * 3 * carry <= full.bytes < 10 * 2 * stacked


def test_hlo_parser_reads_shapes_and_dot_flops():
  inst = hlo_cost.parse_instruction(
    "ROOT %d = f32[8,16]{1,0} dot(f32[8,32]{1,0} %a, f32[32,16]{1,0} %b), "
    "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
  )
  assert inst.root and inst.opcode == "dot" and inst.name == "d"
  assert hlo_cost.instruction_flops(inst, inst.operands) == 2 * 8 * 16 * 32
  assert hlo_cost.nbytes("(f32[2,3], bf16[4])") == 2 * 3 * 4 + 4 * 2


@pytest.mark.parametrize(
  "topology,message",
  [
    ("v9:2x2", "expected <chip>:<shape>"),
    ("h100", "expected <chip>:<shape>"),
    ("v5e:0x2", "must be >= 1"),
    ("h100:12", "whole nodes of 8"),
  ],
)
def test_bad_topologies_are_one_clear_error(topology, message):
  if topology == "h100:12" and not HAS_CUDA:
    pytest.skip("no CUDA compiler")
  with pytest.raises(ValueError, match=message):
    targets.target_devices(topology)


def test_envpool_ids_cannot_be_compiled_for_an_accelerator():
  target = targets.Target("v5e:2x2", targets.CHIPS["v5e"], tuple(jax.devices()[:4]))
  with pytest.raises(ValueError, match="steps on the host"):
    aot.for_target(from_data(load("pong_paac")), target, 1)
  config = aot.for_target(from_data(load("minatar_ppo")), target, 2)
  assert (config.num_learners, config.combine) == (8, "allreduce")


def test_devices_choose_the_layout_and_the_platform():
  config = load("minatar_gala", total_env_steps=10_000, updates_per_call=1)
  algorithm = make_algorithm(config, devices=jax.devices()[:2])
  assert algorithm.layout.num_devices == 2 and algorithm.mesh.devices.size == 2
  assert algorithm.plan.platform == "cpu"
  with pytest.raises(ValueError, match="config.platform='tpu' but the run is built for cpu"):
    make_algorithm(load("minatar_gala", platform="tpu"))


_SLOW = pytest.mark.slow  # the fast tier keeps one case of each kind: conv nets, MLPs


@pytest.mark.parametrize(
  "name,overrides",
  [
    pytest.param("minatar_gala", {}, marks=_SLOW),
    pytest.param("minatar_ppo", {}, marks=_SLOW),
    ("minatar_hts_a2c", {}),
    pytest.param("cartpole_a2c", dict(algorithm="impala", t_max=8), marks=_SLOW),
    ("cartpole_a2c", dict(algorithm="a3c", num_learners=2)),
  ],
)
def test_abstract_state_matches_the_real_one(name, overrides):
  algorithm = make_algorithm(load(name, updates_per_call=1, **overrides))
  real, abstract = algorithm.init(), algorithm.abstract_init()
  assert jax.tree.structure(real) == jax.tree.structure(abstract)
  for r, a in zip(jax.tree.leaves(real), jax.tree.leaves(abstract)):
    assert (r.shape, r.dtype, r.sharding) == (a.shape, a.dtype, a.sharding)


@pytest.mark.slow
@needs_tpu
def test_gala_and_allreduce_compile_for_a_tpu_slice():
  gala = aot.build("minatar_gala", load("minatar_gala"), "v5e:2x2")
  assert gala.chips == 4 and gala.learners == 4 and gala.envs_per_chip == 16
  assert "collective-permute" in gala.collectives and "all-reduce" not in gala.collectives
  assert 0 < gala.needed_bytes < gala.chip_memory_bytes == 16 * 2**30
  assert gala.flops_per_update > 0 and gala.unknown_loops == 0
  assert "platform=tpu" in gala.plan
  allreduce = aot.build("minatar_a2c", load("minatar_a2c"), "v5e:2x2")
  assert "all-reduce" in allreduce.collectives and allreduce.combine == "allreduce"


@pytest.mark.slow
@needs_cuda
def test_gala_compiles_for_h100s():
  report = aot.build("minatar_gala", load("minatar_gala"), "h100:2", learners_per_chip=2)
  assert (report.chips, report.learners) == (2, 4)
  assert "collective-permute" in report.collectives
  assert report.chip_memory_bytes == 80 * 2**30 and "platform=gpu" in report.plan


@pytest.mark.slow
@pytest.mark.parametrize(
  "topology", [pytest.param("v5e:2x2", marks=needs_tpu), pytest.param("h100:2", marks=needs_cuda)]
)
def test_too_many_envs_is_one_does_not_fit_line(topology):
  result = subprocess.run(
    [
      sys.executable,
      "-m",
      "galax.aot",
      "--config=minatar_ppo",
      f"--topology={topology}",
      "--config.envs_per_learner=1048576",
    ],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert result.returncode == 2
  last = result.stderr.strip().splitlines()[-1]
  assert last.startswith("error: does not fit on") and "Traceback" not in result.stderr
  assert "GB" in last or "bytes" in last


@pytest.mark.slow
@needs_tpu
def test_cli_prints_the_table_and_json():
  result = subprocess.run(
    [sys.executable, "-m", "galax.aot", "--config=minatar_gala", "--topology=v5e:2x2", "--json"],
    cwd=ROOT,
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert result.returncode == 0, result.stderr[-2000:]
  import json

  figures = json.loads(result.stdout)
  assert figures["chips"] == 4 and figures["steps_per_s_slice"] > 0


def _run_without_jax_platforms(args: list[str]) -> subprocess.CompletedProcess:
  """`python args` in the environment a user's shell gives: tests/conftest.py sets
  JAX_PLATFORMS=cpu for the suite, which the documented commands must not need."""
  env = {k: v for k, v in os.environ.items() if k not in ("JAX_PLATFORMS", "JAX_PLATFORM_NAME")}
  return subprocess.run(
    [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
  )


@pytest.mark.slow
@pytest.mark.parametrize(
  "topology,platform",
  [
    pytest.param("v5e:2x2", "tpu", marks=needs_tpu),
    pytest.param("h100:2", "gpu", marks=needs_cuda),
  ],
)
def test_the_documented_command_compiles_without_jax_platforms_set(topology, platform):
  """docs/accelerators.md: `python -m galax.aot ... --topology=h100:8` with nothing set.
  (It failed with "topology not implemented for cuda": the CUDA plugin, initialised at
  `import galax` before galax.aot chose the CPU platform, checked the CUDA libraries that
  a machine without a GPU lacks, and stayed unregistered.)"""
  result = _run_without_jax_platforms(
    [
      "-m",
      "galax.aot",
      "--config=minatar_gala",
      f"--topology={topology}",
      "--config.updates_per_call=1",
      "--json",
    ]
  )
  assert result.returncode == 0, result.stderr[-2000:]
  import json

  figures = json.loads(result.stdout)
  assert figures["chips"] == (4 if platform == "tpu" else 2)
  assert f"platform={platform}" in figures["plan"]
  assert "collective-permute" in figures["collectives"]
  assert "Could not find cuda drivers" not in result.stderr or os.path.exists(
    "/proc/driver/nvidia/version"
  )


@pytest.mark.slow
@needs_cuda
def test_a_gpu_target_without_the_cpu_platform_is_one_clear_error():
  """From Python, with JAX_PLATFORMS unset on a machine without CUDA's libraries, the CUDA
  plugin cannot load: one ValueError that names the setting (galax.aot sets it itself)."""
  if os.path.exists("/proc/driver/nvidia/version"):
    pytest.skip("an NVIDIA driver is present: the plugin may load without the setting")
  probe = (
    "from galax.aot import targets\n"
    "try:\n"
    "  targets.target_devices('h100:2')\n"
    "except ValueError as e:\n"
    "  print('ValueError:', e)\n"
  )
  result = _run_without_jax_platforms(["-c", probe])
  assert result.returncode == 0, result.stderr[-2000:]
  assert "ValueError: the CUDA compiler (jax-cuda12-plugin) did not load" in result.stdout
  assert "JAX_PLATFORMS=cpu" in result.stdout, result.stdout
