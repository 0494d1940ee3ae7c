"""Ctrl-C in a terminal never loses saved work (issue 74, item 1): SIGINT at 3 random
times (seeded: the first draws of the benchmark's 20) into CLI runs under a
pseudo-terminal, the progress bar's path: benchmarks/terminal_interrupts.py, on CartPole
(scan loop), pong_fast on the host loop and gossip on 4 virtual CPU devices (the benchmark
adds MinAtar's scan). After each interrupt the run holds a checkpoint of every call up to
the last one printed (or said nothing was trained since the last checkpoint, in its first
call), no orbax tmp folder is left, and `--resume` continues from it at the next call.

At d776273 the host-loop case loses its state: a KeyboardInterrupt raised where the main
thread woke from one update's dispatch, after the call's first update had been given the
run's state (donated), left the run holding deleted arrays: `interrupted: could not
checkpoint (Array has been deleted ...)`, and a `<step>.orbax-checkpoint-tmp` folder.
"""

import os
import signal
import threading

import jax
import jax.numpy as jnp
import pytest
from run_helpers import STEPS_PER_CALL, tiny_config
from test_preemption import _signal_on_call  # a signal inside call n

from benchmarks import terminal_interrupts
from galax.runtime import preemption
from galax.training.loop import train

# Fewer than the benchmark's 20 (each launch compiles again), for the suite's time: one
# into each case but MinAtar's scan (CartPole's covers the scan loop); seed 0's first draw
# lands after the first row in each, and pong_host's was among those lost at d776273.
TEST_INTERRUPTS = dict(cartpole=1, pong_host=1, gossip4=1)


@pytest.mark.slow
@pytest.mark.parametrize("case", list(TEST_INTERRUPTS))
def test_every_interrupt_saves_the_last_whole_call(tmp_path, case):
  interrupts = TEST_INTERRUPTS[case]
  trials = terminal_interrupts.run_case(
    terminal_interrupts.CASES[case], interrupts, seed=0, root=str(tmp_path)
  )
  report = "\n".join(terminal_interrupts.describe(t) for t in trials)
  assert all(t.outcome != "lost" for t in trials), report
  assert len(trials) == interrupts + 1
  assert any(t.outcome == "saved" for t in trials[:-1]), report


# The mechanism in-process, deterministic: Ctrl-C lands after a call has taken (donated)
# the run's state and before the call returns it, as a KeyboardInterrupt raised where the
# host loop wakes from an update's dispatch did at d776273.


@pytest.fixture
def default_ctrl_c():
  """Python's own Ctrl-C handler (a pytest-xdist worker may ignore SIGINT)."""
  if threading.current_thread() is not threading.main_thread():
    pytest.skip("signal handlers live in the main thread")
  previous = signal.signal(signal.SIGINT, signal.default_int_handler)
  yield
  signal.signal(signal.SIGINT, previous)


def _ctrl_c_inside_call(monkeypatch, call, presses):
  """`train`'s step presses Ctrl-C `presses` times inside call `call`, after the jitted
  step has taken the state and before it returns the new one."""
  _signal_on_call(monkeypatch, call, signal.SIGINT, presses, inside=True)


@pytest.mark.slow
def test_ctrl_c_inside_a_call_saves_that_call(tmp_path, monkeypatch, default_ctrl_c):
  _ctrl_c_inside_call(monkeypatch, call=3, presses=1)
  lines = []
  with pytest.raises(KeyboardInterrupt):
    train(tiny_config(checkpoint_every_steps=0), workdir=str(tmp_path), log=lines.append)
  assert lines[-1] == (
    f"interrupted: saved checkpoint at step {3 * STEPS_PER_CALL} in "
    f"{tmp_path / 'checkpoints'}; rerun with --resume"
  )
  assert preemption.WAITING_LINE in lines  # said while the call ended
  assert not terminal_interrupts.tmp_folders(str(tmp_path))


@pytest.mark.slow
def test_a_second_ctrl_c_inside_a_call_stops_at_once_and_says_so(
  tmp_path, monkeypatch, default_ctrl_c
):
  # Call 4 takes call 3's state (call 2's, just checkpointed, is held by orbax: not donated).
  _ctrl_c_inside_call(monkeypatch, call=4, presses=2)
  lines = []
  with pytest.raises(KeyboardInterrupt):
    train(tiny_config(), workdir=str(tmp_path), log=lines.append)
  assert lines[-1] == (
    "interrupted mid-call: the call held the state, nothing since the latest checkpoint is "
    f"saved ({tmp_path / 'checkpoints' / str(2 * STEPS_PER_CALL)})"
  )
  assert sorted(os.listdir(tmp_path / "checkpoints")) == [str(2 * STEPS_PER_CALL)]


def test_the_save_of_a_donated_state_leaves_no_tmp_folder(tmp_path):
  """At d776273 orbax failed on the deleted arrays after it had made
  `<step>.orbax-checkpoint-tmp`, which stayed; now the save refuses before writing."""
  from galax.framework.update import LearnerState
  from galax.runtime.checkpoint import Checkpointer

  deleted = jnp.zeros((4, 2), jnp.uint32)
  jax.jit(lambda x: x + 1, donate_argnums=0)(deleted)
  state = LearnerState({"w": jnp.ones(3)}, (), (), deleted, jnp.zeros(1, jnp.int32))
  checkpointer = Checkpointer(str(tmp_path / "checkpoints"))
  with pytest.raises(ValueError, match="handed to a jitted call"):
    checkpointer.save(800, state, {"env_steps": 800})
  checkpointer.close()
  assert not terminal_interrupts.tmp_folders(str(tmp_path))
  assert os.listdir(tmp_path / "checkpoints") == []
