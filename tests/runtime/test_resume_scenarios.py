"""`--resume` never changes what a run is: benchmarks/resume_faults.py's 8 scenarios, each
against a real checkpoint, each ending in one line and its documented exit status with the
run's config.json, checkpoints and metrics byte for byte as before (or as a documented safe
change says). At 9cdeee8, before the saved config ruled a resume, all failed (then 9
scenarios: the bare resume and the one from another directory are now one launch)."""

import pytest

from benchmarks import resume_faults


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
  return {o.scenario: o for o in resume_faults.run_all(str(tmp_path_factory.mktemp("resume")))}


@pytest.mark.slow
def test_every_scenario_ends_as_documented(outcomes):
  assert len(outcomes) >= 8
  failed = {
    name: (o.status, o.expected_status, o.unchanged, o.checks, o.lines)
    for name, o in outcomes.items()
    if not o.ok
  }
  assert not failed


@pytest.mark.slow
def test_a_refusal_is_one_line_naming_each_field(outcomes):
  refusal = outcomes["resume naming another config"]
  assert refusal.status == 2 and len(refusal.lines) == 1
  for field in ("seed (run 3, command 0)", "optimizer.learning_rate (run 0.001, command 0.002)"):
    assert field in refusal.lines[0]
