"""The execution plan (galax/framework/plan.py): every platform choice made in one place, printed
whole in the run header, and acting on the compiled program."""

import dataclasses
import pathlib
import re

import jax
import pytest
from algorithm_runs import cartpole_config, jaxpr_primitives
from run_helpers import plan_of

from galax.algorithms.registry import spec_for
from galax.config import load as load_config
from galax.config import make_algorithm
from galax.framework.plan import ExecutionPlan, PlanContext
from galax.training.loop import train

GALAX = pathlib.Path(__file__).resolve().parents[2] / "galax"


def _config(**overrides):
  return cartpole_config(
    "a2c", t_max=4, updates_per_call=1, total_env_steps=16, log_every_steps=16, **overrides
  )


class _SawThePlan(Exception):
  """Stops `train` at its header's plan line: the header is the subject, not the run."""


def _plan_line(config) -> str:
  def log(line):
    if line.startswith("plan: "):
      raise _SawThePlan(line)

  with pytest.raises(_SawThePlan) as stopped:
    train(config, log=log)
  return str(stopped.value)


@pytest.fixture(scope="module")
def header_lines():
  """The header's plan line of a run with grad_chunks 1 and of one with grad_chunks 2."""
  return _plan_line(_config()), _plan_line(_config(grad_chunks=2))


def test_the_header_prints_every_field_of_the_plan(header_lines):
  line = header_lines[0]
  for field in dataclasses.fields(ExecutionPlan):
    assert re.search(rf"\b{field.name}=", line), (field.name, line)


def test_one_plan_field_changes_the_header_and_the_program(header_lines):
  """grad_chunks 1 -> 2: the header says so, nothing else in it changes, and the compiled
  update computes its gradient twice (one backward pass per chunk)."""
  whole, halves = _config(), _config(grad_chunks=2)
  line_whole, line_halves = header_lines
  assert "grad_chunks=1" in line_whole and "grad_chunks=2" in line_halves
  assert line_whole.replace("grad_chunks=1", "grad_chunks=2") == line_halves

  def dots(config):
    algorithm = make_algorithm(config)
    try:
      jaxpr = jax.make_jaxpr(algorithm.step)(algorithm.init())
    finally:
      algorithm.env.close()
    return jaxpr_primitives(jaxpr.jaxpr).count("dot_general")

  assert dots(halves) > dots(whole)


def test_explicit_choices_pass_through_and_auto_depends_on_the_target():
  config = load_config(
    "cartpole_a2c", network__name="archnips", num_learners=4, envs_per_learner=32
  )
  a2c = spec_for(config.algorithm)
  cpu = plan_of(config, spec=a2c, target=PlanContext("cpu", "HWC", False, 4))
  gpu = plan_of(config, spec=a2c, target=PlanContext("gpu", "HWC", False, 4))
  assert (cpu.learner_map, cpu.update_loop, cpu.unit_call) == ("unroll", "host", "inline")
  assert (gpu.learner_map, gpu.update_loop, gpu.grad_chunks) == ("vmap", "scan", 1)
  assert gpu.unit_call == "isolated"
  config.update_loop, config.learner_map = "scan", "vmap"
  assert plan_of(config, spec=a2c, target=PlanContext("cpu", "HWC", False, 4)).replace(
    grad_chunks=1, unit_call="isolated"
  ) == gpu.replace(platform="cpu")


def test_no_algorithm_reads_the_platform():
  """The platform is the plan's: no module under galax/algorithms/ but the plan's own names it."""
  found = [
    f"{path.relative_to(GALAX)}:{i}: {line.strip()}"
    for path in (GALAX / "algorithms").rglob("*.py")
    if path.name != "plan.py"
    for i, line in enumerate(path.read_text().splitlines(), 1)
    if "platform" in line or '== "cpu"' in line
  ]
  assert not found, "\n".join(found)


def test_auto_runs_many_ppo_gradient_steps_on_cpu_as_scanned_patch_convolutions():
  """PPO's epochs x minibatches from 16 gradient steps per update: patches in a scan on CPU
  (unrolled XLA convolutions compiled 2.4x longer and ran 1.6x slower for pong_many);
  fewer steps, GPUs and explicit choices keep XLA convolutions."""
  config = load_config("pong_many")
  ppo = spec_for(config.algorithm)
  cpu = PlanContext("cpu", "CHW", False, 1)
  plan = plan_of(config, spec=ppo, target=cpu)
  assert (plan.conv_impl, plan.update_loop) == ("patches", "scan")
  assert plan_of(config, spec=ppo, target=PlanContext("gpu", "CHW", False, 1)).conv_impl == "xla"
  config.ppo.epochs, config.ppo.minibatches = 1, 8
  few = plan_of(config, spec=ppo, target=cpu)
  assert (few.conv_impl, few.update_loop) == ("xla", "host")
  config.ppo.epochs, config.network.conv_impl = 4, "xla"
  assert plan_of(config, spec=ppo, target=cpu).conv_impl == "xla"
  a2c_config = load_config("pong_fast")
  assert plan_of(a2c_config, spec=spec_for("a2c"), target=cpu).conv_impl == "xla"
  hts_ppo_config = load_config("hts_ppo_gfootball")  # 2 x 8 between env steps: measured
  assert plan_of(hts_ppo_config, spec=spec_for("hts_ppo"), target=cpu).conv_impl == "xla"
