"""A run states what stops it (issue 74, item 5): the header names the step budget, the
return target and the time limit; a config's target carried to another game by a changed
env.id is cleared with one line, while a target given with the new env stays."""

from run_helpers import header_lines_for, tiny_config

from galax.config import cli, config_path, load


def test_the_command_line_clears_a_target_that_belongs_to_another_game(capsys):
  argv = cli.prepare_argv(["galax", "pong_fast", "--config.env.id=Breakout-v5"], "x.py")
  assert argv == [
    "galax",
    f"--config={config_path('pong_fast')}",
    "--config.env.id=Breakout-v5",
    "--config.target_return=0",
  ]
  lines = capsys.readouterr().out.splitlines()
  assert len(lines) == 1 and "target_return=18 is pong_fast's target on Pong-v5" in lines[0]
  assert "not on Breakout-v5: cleared" in lines[0] and "--config.target_return=X" in lines[0]


def test_a_target_given_with_the_env_or_for_the_same_game_stays(capsys):
  given = ["galax", "pong_fast", "--config.env.id=Breakout-v5", "--config.target_return=30"]
  assert cli.prepare_argv(given, "x.py")[-1] == "--config.target_return=30"
  same_game = ["galax", "cartpole_a2c", "--config.env.id=gymnax/CartPole-v1"]
  assert not [a for a in cli.prepare_argv(same_game, "x.py") if "target_return" in a]
  assert load("cartpole_a2c", env__id="gymnax/CartPole-v1").target_return == 475.0
  assert load("pong_fast", env__id="Breakout-v5", target_return=30.0).target_return == 30.0
  assert capsys.readouterr().out == ""


def test_load_config_clears_a_target_of_another_game_with_one_line(capsys):
  assert load("pong_fast", env__id="Breakout-v5").target_return == 0.0
  (line,) = capsys.readouterr().out.splitlines()
  assert "not on Breakout-v5: cleared" in line and "(target_return=X stops it" in line


def test_the_header_says_what_stops_the_run():
  lines = header_lines_for(tiny_config(target_return=475.0, time_limit_s=60.0))
  assert (
    "stops at: 3200 env steps; a running mean return >= 475 over the last 100 episodes "
    "(target_return); 60 s of training time this sitting (time_limit_s), whichever comes "
    "first" in lines
  )
  assert "stops at: 3200 env steps" in header_lines_for(tiny_config())
