"""Issue 74's small ones, each one line or one visible fact: a config file whose
get_config() returns a plain dict, `galax --version`, `--help_config=NAME`'s own fields, and
an evaluation cadence that rounds to whole calls."""

import pytest

import galax
from galax.config import cli


def test_a_config_file_returning_a_dict_is_one_line(tmp_path, capsys):
  path = tmp_path / "plain.py"
  path.write_text("def get_config():\n  return dict(seed=0)\n")
  expected = (
    f"config file {path}: get_config() returned a dict, not the ConfigDict of "
    "galax.config.base_config() with its fields set (as configs/cartpole_a2c.py does)."
  )
  with pytest.raises(ValueError) as caught:
    galax.load_config(str(path))
  assert str(caught.value) == expected
  with pytest.raises(SystemExit) as exited:
    cli.prepare_argv(["galax", f"--config={path}"], "default.py")
  assert exited.value.code == 2
  assert capsys.readouterr().err == f"error: {expected}\n"
