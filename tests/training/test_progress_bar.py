"""The terminal progress bar (galax/training/terminal_bar.py) and train's per-call hook."""

import io

import pytest
from run_helpers import STEPS_PER_CALL, tiny_config


def test_bar_shows_share_steps_and_time_left_under_the_log_lines():
  from rich.console import Console

  from galax.training.terminal_bar import TerminalBar

  out = io.StringIO()
  bar = TerminalBar(Console(file=out, force_terminal=True, width=120))
  bar.update(2_500_000, 10_000_000, None)
  bar.log("steps    2500000 | a log line")
  bar.update(5_000_000, 10_000_000, 3_000.0)
  bar.close()
  text = out.getvalue()
  assert "steps    2500000 | a log line" in text
  assert "50%" in text and "5.0M/10.0M steps" in text and "50m left" in text, text


@pytest.mark.slow
def test_train_calls_on_call_after_every_call(tmp_path):
  from galax.training.loop import train

  seen = []
  result = train(
    tiny_config(total_env_steps=3 * STEPS_PER_CALL),
    workdir=str(tmp_path),
    log=lambda _: None,
    on_call=lambda *a: seen.append(a),
  )
  assert [s[0] for s in seen] == [STEPS_PER_CALL * k for k in (1, 2, 3)]
  assert {s[1] for s in seen} == {result.planned_env_steps}
  assert seen[0][2] is None  # no steady rate after the compiling call alone
  assert all(isinstance(s[2], float) and s[2] >= 0 for s in seen[1:])
