"""What a resume guarantees, per env backend (issue 33, part 4).

* gymnax: the env state is a pytree and is checkpointed with the learners, so a run
  stopped and resumed ends bit for bit where the uninterrupted run ends.
* envpool: the C++ envs cannot be saved; a resume restarts them from their seeds, so it
  is not the uninterrupted run, but two resumes from one checkpoint are identical.
"""

import shutil
import threading

import jax
import numpy as np
import pytest
from run_helpers import STEPS_PER_CALL, tiny_config
from test_preemption import _sigterm_on_call  # SIGTERM as call n starts

from galax.parallel.layout import to_host
from galax.runtime import checkpoint as ckpt_lib
from galax.training.loop import train

CALLS = 4


def _quiet(_):
  pass


def _stopped_then_resumed(config, workdir, monkeypatch, stop_call):
  with monkeypatch.context() as patch:
    _sigterm_on_call(patch, stop_call)
    with pytest.raises(SystemExit):
      train(config, workdir=str(workdir), log=_quiet)
  return train(config, workdir=str(workdir), resume=True, log=_quiet)


def _leaves(tree):
  return jax.tree.leaves(to_host(tree))


def _assert_bitwise_equal(a, b):
  for x, y in zip(_leaves(a), _leaves(b), strict=True):
    np.testing.assert_array_equal(x, y)


def _differs(a, b) -> bool:
  return any(not np.array_equal(x, y) for x, y in zip(_leaves(a), _leaves(b), strict=True))


@pytest.fixture
def main_thread():
  if threading.current_thread() is not threading.main_thread():
    pytest.skip("signal handlers live in the main thread")


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["gymnax/CartPole-v1"])
def test_gymnax_run_stopped_and_resumed_is_the_uninterrupted_run(
  tmp_path, monkeypatch, main_thread, env_id
):
  config = tiny_config(total_env_steps=CALLS * STEPS_PER_CALL, checkpoint_every_steps=0)
  config.env.id = env_id
  whole = train(config, workdir=str(tmp_path / "whole"), log=_quiet)
  resumed = _stopped_then_resumed(config, tmp_path / "resumed", monkeypatch, stop_call=2)
  assert resumed.env_steps == whole.env_steps == CALLS * STEPS_PER_CALL
  _assert_bitwise_equal(whole.state.params, resumed.state.params)
  _assert_bitwise_equal(whole.state.opt_state, resumed.state.opt_state)
  _assert_bitwise_equal(whole.state.env_state, resumed.state.env_state)
  assert resumed.episodes == whole.episodes and resumed.mean_return == whole.mean_return


@pytest.mark.slow
def test_envpool_resume_is_deterministic_given_the_checkpoint(tmp_path, monkeypatch, main_thread):
  config = tiny_config(
    total_env_steps=CALLS * STEPS_PER_CALL, checkpoint_every_steps=0, env__id="CartPole-v1"
  )  # envpool's, whose env state is not saved
  with monkeypatch.context() as patch:
    _sigterm_on_call(patch, 2)
    with pytest.raises(SystemExit):
      train(config, workdir=str(tmp_path / "a"), log=_quiet)
  shutil.copytree(tmp_path / "a", tmp_path / "b")
  first = train(config, workdir=str(tmp_path / "a"), resume=True, log=_quiet)
  second = train(config, workdir=str(tmp_path / "b"), resume=True, log=_quiet)
  _assert_bitwise_equal(first.state.params, second.state.params)
  # Not the uninterrupted run: envpool's envs restarted from their seeds.
  whole = train(config, workdir=str(tmp_path / "whole"), log=_quiet)
  assert _differs(whole.state.params, first.state.params)


@pytest.mark.slow
def test_checkpoints_hold_the_env_state_only_where_it_is_restorable(tmp_path):
  from galax.envs.gymnax_env import GymnaxEnv
  from galax.envs.pool import BatchedEnv

  assert GymnaxEnv.state_restorable and not BatchedEnv.state_restorable
  config = tiny_config(total_env_steps=STEPS_PER_CALL, checkpoint_every_steps=0)
  config.env.id = "gymnax/CartPole-v1"
  train(config, workdir=str(tmp_path), log=_quiet)
  (step,) = [p for p in (tmp_path / "checkpoints").iterdir() if p.name.isdigit()]
  assert (step / ckpt_lib.ENVS_ITEM).is_dir()
