"""The run header (galax/training/header.py): the plan line points at what its fields mean,
and an HTS run says what its unit_call does in words. Fast: no JAX program is built."""

import types

import pytest
from run_helpers import header_lines_for, tiny_config

from galax.training.header import UNIT_CALL


def _lines(algorithm_name, unit_call):
  plan = types.SimpleNamespace(
    platform="gpu", unit_call=unit_call, describe=lambda: f"unit_call={unit_call}"
  )
  return header_lines_for(tiny_config(algorithm=algorithm_name), plan=plan)


@pytest.mark.parametrize("unit_call", sorted(UNIT_CALL))
def test_an_hts_header_says_what_unit_call_means(unit_call):
  lines = _lines("hts_a2c", unit_call)
  assert lines[1] == f"plan: unit_call={unit_call} (each field: galax/framework/plan.py)"
  assert lines[2] == f"unit_call={unit_call}: {UNIT_CALL[unit_call]}"


def test_other_algorithms_leave_unit_call_to_the_plans_docs():
  lines = _lines("a2c", "isolated")
  assert lines[1].endswith("(each field: galax/framework/plan.py)")
  assert not [line for line in lines if line.startswith("unit_call=")]
