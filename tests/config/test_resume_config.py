"""galax/config/resume.py: the saved config rebuilt, compared, and what a resume may change."""

import ml_collections
import pytest

from galax.config import from_data, load, resume, typed, validate


def _saved(config):
  return typed.json_data(from_data(config))  # as config.json holds it


def load_typed(name, **fields):
  return from_data(load(name, **fields))


def test_a_saved_config_is_rebuilt_field_for_field():
  config = load("pong_paac", seed=3, optimizer__learning_rate=1e-3)
  config.env.options = ml_collections.ConfigDict(dict(noop_max=0))
  rebuilt = resume.restore(_saved(config))
  validate(rebuilt)
  assert resume.changes(_saved(config), _saved(rebuilt)) == []
  assert rebuilt.network.mlp_hidden == config.network.mlp_hidden  # a tuple again, not a list
  assert rebuilt.env.options["noop_max"] == 0


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


# A linear lr anneal keeps its end over a resume that changes total_env_steps (issue 74,
# item 3: minatar_a2c's lr was 0 at 204,800 agent steps, then 0.0035 after a resume to 400k).


def test_a_longer_resume_keeps_the_lr_anneal_s_end_with_a_note():
  saved = _saved(load("minatar_a2c", total_env_steps=200_000))  # 10 calls of 20,480 steps
  given = load_typed("minatar_a2c", total_env_steps=400_000)
  kept, notes = resume.kept_schedule(saved, given)
  assert kept.optimizer.anneal_steps == 204_800 and given.optimizer.anneal_steps is None
  found = resume.changes(saved, _saved(kept), notes)
  assert [c.field for c in found] == ["total_env_steps", "optimizer.anneal_steps"]
  assert resume.check(found, "runs/r/config.json") == found  # named by the resume itself
  assert str(found[1]).startswith(
    "optimizer.anneal_steps null -> 204800 (kept: the lr anneal still ends at agent step 204800"
  )


def test_an_old_run_without_the_field_keeps_its_length_as_the_anneal_s_end():
  saved = _saved(load("minatar_a2c", total_env_steps=200_000))
  del saved["optimizer"]["anneal_steps"]
  kept, _ = resume.kept_schedule(saved, load_typed("minatar_a2c", total_env_steps=1_000_000))
  assert kept.optimizer.anneal_steps == 204_800


def test_a_pinned_end_stays_and_a_named_one_moves_it():
  pinned = _saved(load("minatar_a2c", total_env_steps=400_000, optimizer__anneal_steps=204_800))
  again, notes = resume.kept_schedule(pinned, load_typed("minatar_a2c", total_env_steps=800_000))
  assert again.optimizer.anneal_steps == 204_800
  assert [c.field for c in resume.changes(pinned, _saved(again), notes)] == ["total_env_steps"]
  named = load_typed("minatar_a2c", total_env_steps=800_000, optimizer__anneal_steps=800_000)
  assert resume.kept_schedule(pinned, named)[0] is named
  found = resume.changes(pinned, _saved(named))
  assert resume.check(found, "config.json") == found  # allowed: the command names it
  assert "optimizer.anneal_steps (run 204800, command 800000)" in map(str, found)


def test_nothing_is_pinned_where_nothing_moves():
  constant = _saved(load("cartpole_a2c"))
  given = load_typed("cartpole_a2c", total_env_steps=5_000_000)
  assert resume.kept_schedule(constant, given) == (given, {})  # no anneal
  saved = _saved(load("minatar_a2c", total_env_steps=200_000))
  same_calls = load_typed("minatar_a2c", total_env_steps=204_800)  # the same whole calls
  assert resume.kept_schedule(saved, same_calls) == (same_calls, {})


def test_a_named_config_does_not_bring_its_unpinned_anneal():
  """`--config=minatar_a2c --resume` after a pinned resume: the file's anneal_steps (None)
  is not the command naming a new end."""
  pinned = _saved(load("minatar_a2c", total_env_steps=400_000, optimizer__anneal_steps=204_800))
  command = resume.command_config(pinned, _saved(load("minatar_a2c")), {}, names_config=True)
  assert command.optimizer.anneal_steps == 204_800
  assert resume.changes(pinned, _saved(command)) == []
