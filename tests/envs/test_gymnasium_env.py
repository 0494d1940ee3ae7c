"""A Gymnasium-API env of one's own (an id registered with gymnasium.register, or a
gymnasium.vector.VectorEnv as its vector entry point) runs through the "gymnasium/" backend,
host-stepped from inside the jitted rollout; ids no backend has are one line."""

import os
import subprocess
import sys

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium import spaces
from run_helpers import csv_rows, run_cli

from galax.config import load, run_settings, validate

LENGTH = 5  # cells: the walker starts in 0; reaching LENGTH - 1 ends the episode, reward 1
LIMIT = 12  # the registration's time limit
quiet = lambda _: None


def _one_hot(cells):
  return np.eye(LENGTH, dtype=np.float32)[cells]


class Corridor(gymnasium.Env):
  """A 1-D corridor: action 1 steps right, 0 left (walls hold); reward 1 at the far end."""

  metadata = {"render_modes": ["rgb_array"]}
  observation_space = spaces.Box(0.0, 1.0, (LENGTH,), np.float32)
  action_space = spaces.Discrete(2)

  def __init__(self, render_mode=None):
    self.render_mode = render_mode

  def render(self):
    frame = np.zeros((16, 16 * LENGTH, 3), np.uint8)
    frame[:, 16 * self.cell : 16 * (self.cell + 1)] = 255
    return frame

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    self.cell = 0
    return _one_hot(self.cell), {}

  def step(self, action):
    self.cell = int(np.clip(self.cell + (1 if action == 1 else -1), 0, LENGTH - 1))
    done = self.cell == LENGTH - 1
    return _one_hot(self.cell), float(done), done, False, {}


class VectorCorridor(gymnasium.vector.VectorEnv):
  """Corridors in numpy, auto-resetting on the next step as gymnasium's vector envs do."""

  metadata = {"autoreset_mode": gymnasium.vector.AutoresetMode.NEXT_STEP}

  def __init__(self, num_envs, max_episode_steps):
    self.num_envs, self.limit = num_envs, max_episode_steps
    self.single_observation_space = Corridor.observation_space
    self.single_action_space = Corridor.action_space
    self.observation_space = spaces.Box(0.0, 1.0, (num_envs, LENGTH), np.float32)
    self.action_space = spaces.MultiDiscrete([2] * num_envs)

  def reset(self, *, seed=None, options=None):
    self.cell = np.zeros(self.num_envs, int)
    self.t = np.zeros(self.num_envs, int)
    self.ended = np.zeros(self.num_envs, bool)
    return _one_hot(self.cell), {}

  def step(self, actions):
    moved = np.clip(self.cell + np.where(np.asarray(actions) == 1, 1, -1), 0, LENGTH - 1)
    self.cell = np.where(self.ended, 0, moved)
    self.t = np.where(self.ended, 0, self.t + 1)
    terminated = ~self.ended & (self.cell == LENGTH - 1)
    truncated = ~self.ended & ~terminated & (self.t >= self.limit)
    reward = terminated.astype(np.float32)
    self.ended = terminated | truncated
    return _one_hot(self.cell), reward, terminated, truncated, {}


gymnasium.register("GalaxCorridor-v0", entry_point=Corridor, max_episode_steps=LIMIT)
gymnasium.register(
  "GalaxVectorCorridor-v0", vector_entry_point=VectorCorridor, max_episode_steps=LIMIT
)


@pytest.mark.slow  # a whole (short) training run of 2 learners on 2 devices
def test_a_registered_env_trains_and_its_episodes_come_through(tmp_path):
  from galax.training.loop import train

  config = load(
    "cartpole_a2c",
    env__id="gymnasium/GalaxCorridor-v0",
    num_learners=2,
    envs_per_learner=8,
    updates_per_call=10,
    total_env_steps=1600,
    log_every_steps=800,
    target_return=0.0,
    tensorboard=False,
    eval__every_steps=800,
    eval__episodes=4,
  )
  result = train(config, workdir=str(tmp_path), log=quiet)
  # 16 envs x 100 steps, at most LIMIT steps and an auto-reset step per episode
  assert result.episodes >= 16 * (100 // (LIMIT + 1))
  assert 0.0 <= result.mean_return <= 1.0
  rows = csv_rows(tmp_path / "metrics.csv")
  assert [int(r["env_steps"]) for r in rows] == [800, 1600]
  assert float(rows[-1]["mean_length"]) <= LIMIT
  for record in result.evaluations:
    assert len(record.returns) == 4
    for ret, length in zip(record.returns, record.lengths):
      # reached the end in >= LENGTH - 1 steps, or walked until the time limit
      assert (ret == 1.0 and LENGTH - 1 <= length <= LIMIT) or (ret == 0.0 and length == LIMIT)


def test_a_vector_env_steps_in_jitted_code_with_envpools_semantics():
  from galax import envs

  config = load("cartpole_a2c", env__id="gymnasium/GalaxVectorCorridor-v0")
  validate(config)
  env = envs.make_env(run_settings(config).env, num_envs=2, seed=0)
  assert env.spec.obs_shape == (LENGTH,) and env.spec.num_actions == 2
  assert env.spec.max_episode_steps == LIMIT and not env.state_restorable
  actions = np.array([1, 0], np.int32)  # env 0 walks right to the end, env 1 into the wall

  @jax.jit
  def run(state):
    return jax.lax.scan(lambda s, _: env.step(s, actions), state, None, length=LIMIT + 1)

  _, ts = jax.tree.map(np.asarray, run(env.reset()))
  env.close()
  end = LENGTH - 2  # the step that reaches the last cell; then one auto-reset step
  assert ts.terminated[:, 0].tolist() == [t % LENGTH == end for t in range(LIMIT + 1)]
  assert ts.valid[:, 0].tolist() == [t % LENGTH != end + 1 for t in range(LIMIT + 1)]
  assert ts.episode_return[end, 0] == 1.0 and ts.episode_length[end, 0] == LENGTH - 1
  assert ts.obs[end + 1, 0].tolist() == _one_hot(0).tolist()  # the new episode's first
  assert ts.truncated[:, 1].tolist() == [t == LIMIT - 1 for t in range(LIMIT + 1)]
  assert ts.episode_over[LIMIT - 1, 1] and ts.episode_return[LIMIT - 1, 1] == 0.0
  assert not ts.valid[LIMIT, 1]


def test_videos_of_a_registered_env_are_drawn_by_its_render():
  from galax.envs import video

  env = run_settings(load("cartpole_a2c", env__id="gymnasium/GalaxCorridor-v0")).env
  video.check_capture(env.id)
  frames = video.record(env, lambda obs, key: np.ones((1,), np.int32), 1, seed=0)
  assert len(frames) == LENGTH  # the first cell, then one frame per step to the last
  with pytest.raises(ValueError, match="'gymnasium/GalaxVectorCorridor-v0' does not render"):
    video.check_capture("gymnasium/GalaxVectorCorridor-v0")


def test_ids_no_backend_has_are_one_line():
  from galax import envs

  with pytest.raises(ValueError, match="no env 'NoSuchCorridor-v0' is registered with gymnasium"):
    envs.check_env_id("gymnasium/NoSuchCorridor-v0")
  with pytest.raises(ValueError, match="gymnasium has it as 'gymnasium/GalaxCorridor-v0'"):
    envs.check_env_id("GalaxCorridor-v0")
  with pytest.raises(ValueError, match="Other backends' ids: .*gymnasium.register"):
    envs.check_env_id("NoSuchCorridor-v0")
  with pytest.raises(ValueError, match="config.env.reward_clip=True is an envpool option"):
    validate(load("cartpole_a2c", env__id="gymnasium/GalaxCorridor-v0", env__reward_clip=True))


@pytest.mark.slow  # a CLI subprocess
def test_cli_unknown_id_is_one_error_line(tmp_path):
  proc = run_cli("--config.env.id=NoSuchCorridor-v0", f"--workdir={tmp_path / 'run'}")
  lines = proc.stderr.strip().splitlines()
  assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
  assert lines[0].startswith("error: Unknown env id 'NoSuchCorridor-v0'")
  assert "envpool" in lines[0] and "gymnax/" in lines[0] and "gymnasium/" in lines[0]
  assert not (tmp_path / "run").exists()


MODULE = """
import os
import subprocess
import sys

import gymnasium
import numpy as np
from gymnasium import spaces


class Walls(gymnasium.Env):
  observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
  action_space = spaces.Discrete(2)

  def reset(self, *, seed=None, options=None):
    super().reset(seed=seed)
    return np.zeros(2, np.float32), {}

  def step(self, action):
    return np.ones(2, np.float32) * action, 1.0, False, False, {}


gymnasium.register("GalaxWalls-v0", entry_point=Walls, max_episode_steps=10)
"""


@pytest.mark.slow  # a CLI subprocess
def test_the_installed_command_imports_an_env_module_from_the_working_directory(tmp_path):
  """`galax` (a console script: the working directory is not on sys.path) imports
  `module:id`'s module from it, as `python -m galax` does."""
  command = os.path.join(os.path.dirname(sys.executable), "galax")
  if not os.path.exists(command):
    pytest.skip("galax is not installed as a command in this environment")
  (tmp_path / "walls_envs.py").write_text(MODULE)
  proc = subprocess.run(
    [
      command,
      "--config.env.id=gymnasium/walls_envs:GalaxWalls-v0",
      "--config.total_env_steps=1600",
      "--config.updates_per_call=10",
      "--config.target_return=0",
      f"--workdir={tmp_path / 'run'}",
    ],
    capture_output=True,
    text=True,
    cwd=tmp_path,
    timeout=300,
  )
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert "done: 1600 steps" in proc.stdout
