"""galax/config/resume.py: the saved config rebuilt, compared, and what a resume may change."""

import json

import ml_collections
import pytest

from galax.config import load, resume, validate


def _saved(config):
  return json.loads(config.to_json_best_effort(indent=2))  # as config.json holds it


def test_a_saved_config_is_rebuilt_field_for_field():
  config = load("pong_paac", seed=3, optimizer__learning_rate=1e-3)
  config.env.options = ml_collections.ConfigDict(dict(noop_max=0))
  rebuilt = resume.restore(_saved(config))
  validate(rebuilt)
  assert resume.changes(_saved(config), _saved(rebuilt)) == []
  assert rebuilt.network.mlp_hidden == config.network.mlp_hidden  # a tuple again, not a list
  assert rebuilt.env.options.noop_max == 0


def test_a_field_the_run_predates_takes_its_default():
  saved = _saved(load("cartpole_a2c"))
  del saved["optimizer"]["anneal_steps"], saved["eval"]
  rebuilt = resume.restore(saved)
  assert rebuilt.optimizer.anneal_steps is None and rebuilt.eval.episodes == 10


def test_a_field_this_galax_lacks_is_one_line():
  saved = dict(_saved(load("cartpole_a2c")), retired_field=1)
  with pytest.raises(ValueError, match="a field 'retired_field' that this galax does not know"):
    resume.restore(saved)


def test_changeable_fields_pass_and_others_are_named_saved_against_new():
  saved = load("cartpole_a2c", seed=3)
  given = load("cartpole_a2c", seed=0, total_env_steps=5_000_000, eval__every_steps=10_000)
  given.optimizer.learning_rate = 5e-3
  found = resume.changes(_saved(saved), _saved(given))
  assert [c.field for c in found] == [
    "seed",
    "total_env_steps",
    "optimizer.learning_rate",
    "eval.every_steps",
  ]
  with pytest.raises(ValueError) as refused:
    resume.check(found, "runs/r/config.json")
  text = str(refused.value)
  assert (
    "seed (run 3, command 0)" in text
    and "optimizer.learning_rate (run 0.002, command 0.005)" in text
  )
  assert "total_env_steps (" not in text and "\n" not in text
  allowed = [c for c in found if c.field in resume.CHANGEABLE_ON_RESUME]
  assert resume.check(allowed, "runs/r/config.json") == allowed


def test_a_bare_resume_is_the_saved_config_with_the_overrides():
  saved = _saved(load("cartpole_a2c", seed=3, target_return=0.0))
  default = load("cartpole_a2c")  # what the command line holds without --config
  config = resume.command_config(saved, _saved(default), {"total_env_steps": 9}, False)
  assert (config.seed, config.target_return, config.total_env_steps) == (3, 0.0, 9)


def test_a_named_config_keeps_the_run_s_changeable_fields_unless_overridden():
  saved = _saved(load("cartpole_a2c", target_return=0.0, total_env_steps=3_000_000))
  named = load("cartpole_a2c", seed=1)  # the file: target 475, 1M steps; seed from the command
  config = resume.command_config(saved, _saved(named), {}, names_config=True)
  assert (config.target_return, config.total_env_steps) == (0.0, 3_000_000)
  assert [c.field for c in resume.changes(saved, _saved(config))] == ["seed"]
