"""The Python path, one line per error (issue 74, item 7): `load_config` with a misspelt
field names it and the field meant; `train` and `run_experiment` into a used folder name
their Python arguments (overwrite=True, resume=True), not the command line's flags; and
`overwrite=True` lets a notebook's cell run twice."""

import json

import pytest
from run_helpers import tiny_config

import galax
from galax.results import experiment, seed_runs


def test_load_config_names_a_misspelt_field_and_the_one_meant():
  with pytest.raises(ValueError) as caught:
    galax.load_config("cartpole_a2c", learning_rate=1e-3)
  message = str(caught.value)
  assert message.startswith("load_config('cartpole_a2c'): no field 'learning_rate'")
  assert "Did you mean optimizer__learning_rate=" in message
  assert "\n" not in message and len(message) < 200  # not the whole config
  with pytest.raises(ValueError, match="no field 'optimizer.learnin_rate'"):
    galax.load_config("cartpole_a2c", optimizer__learnin_rate=1e-3)


def test_train_into_a_used_workdir_names_the_python_arguments(tmp_path):
  (tmp_path / "config.json").write_text("{}")
  with pytest.raises(ValueError) as caught:
    galax.train(tiny_config(), workdir=str(tmp_path), log=lambda _: None)
  message = str(caught.value)
  assert f"workdir '{tmp_path}' already holds a run (config.json)" in message
  assert "continue it with resume=True, start afresh with overwrite=True" in message
  assert "--" not in message


class _Trained(Exception):
  """The experiment reached its (slow) training."""


def _used_experiment(out):
  folder = out / "cartpole"
  (folder / "runs" / "seed0").mkdir(parents=True)
  for name in ("seed0.json", "seed4.json", "summary.json"):
    (folder / name).write_text(json.dumps({}))
  (folder / "notes.txt").write_text("mine")
  return folder


def test_run_experiment_refuses_a_used_experiment_and_overwrite_replaces_it(tmp_path, monkeypatch):
  folder = _used_experiment(tmp_path)

  def reached(*args):
    raise _Trained()

  monkeypatch.setattr(seed_runs, "train_seeds_in_turn", reached)
  monkeypatch.setattr(seed_runs, "train_seeds_as_learners", reached)
  with pytest.raises(ValueError) as caught:
    experiment.run_experiment(tiny_config(), [0], str(tmp_path), "cartpole")
  assert str(caught.value) == (
    f"out_dir '{tmp_path}' already holds experiment 'cartpole' (runs, seed0.json, seed4.json,"
    " summary.json); replace it with overwrite=True, or choose another out_dir or name."
  )
  with pytest.raises(_Trained):
    experiment.run_experiment(tiny_config(), [0], str(tmp_path), "cartpole", overwrite=True)
  assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
