"""Periodic evaluation: episodes match envpool's own, full-game eval envs, which learner is
evaluated, and the training loop's evaluation schedule, clocks, files and resume."""

import csv
import json

import envpool
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from run_helpers import tiny_config

from galax.config import from_data, make_algorithm, run_settings
from galax.config import load as load_config
from galax.evaluate import evaluator as evaluation
from galax.evaluate import periodic
from galax.parallel.layout import to_host
from galax.training.loop import train


def _always(action: int, num_actions: int = 2):
  """An apply_fn whose greedy action is always `action`."""

  def apply_fn(params, obs):
    logits = jnp.zeros((obs.shape[0], num_actions)).at[:, action].set(5.0) + 0 * params["w"]
    return logits, jnp.zeros(obs.shape[0])

  return apply_fn


def _reference_episodes(seed: int, num_envs: int, per_env: int, action: int) -> np.ndarray:
  """The first `per_env` episode returns of each env, stepping envpool directly."""
  env = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=num_envs, seed=seed)
  env.reset()
  returns = [[] for _ in range(num_envs)]
  running = np.zeros(num_envs)
  resetting = np.zeros(num_envs, bool)
  while min(len(r) for r in returns) < per_env:
    _, reward, terminated, truncated, _ = env.step(np.full(num_envs, action, np.int32))
    running += np.where(resetting, 0.0, reward)
    done = (terminated | truncated) & ~resetting
    for i in np.flatnonzero(done):
      returns[i].append(running[i])
      running[i] = 0.0
    resetting = done
  return np.array([r[:per_env] for r in returns])


def test_greedy_episodes_match_envpool():
  config = load_config("cartpole_a2c")
  config.seed = 7
  config.eval.episodes = 6
  config.eval.num_envs = 3  # 2 episodes per env
  evaluator = evaluation.Evaluator(
    evaluation.eval_settings(from_data(config)), _always(1), num_policies=1
  )
  out = evaluator.evaluate({"w": np.zeros((1,))})
  evaluator.close()
  assert out.returns.shape == (1, 6) and out.completed.all()
  expected = _reference_episodes(7 + evaluation.EVAL_SEED_OFFSET, 3, 2, action=1)
  np.testing.assert_array_equal(out.returns[0], expected.reshape(-1))  # env-major
  np.testing.assert_array_equal(out.lengths[0], out.returns[0])  # CartPole: 1 per step


def test_sampled_evaluation_is_reproducible():
  config = load_config("cartpole_a2c")
  config.eval.greedy = False
  config.eval.episodes = 4
  params = {"w": np.zeros((1,))}

  def uniform(params, obs):
    return jnp.zeros((obs.shape[0], 2)) + 0 * params["w"], jnp.zeros(obs.shape[0])

  runs = []
  for _ in range(2):
    evaluator = evaluation.Evaluator(evaluation.eval_settings(from_data(config)), uniform)
    runs.append([evaluator.evaluate(params).returns for _ in range(2)])
    evaluator.close()
  np.testing.assert_array_equal(runs[0][0], runs[1][0])
  np.testing.assert_array_equal(runs[0][1], runs[1][1])
  # Random actions drop the pole in ~20 steps, well before a greedy-left 9-10.
  assert np.mean(runs[0][0]) > 12


def test_eval_envs_play_full_games_with_raw_rewards():
  config = load_config("breakout_a2c")  # trains with episodic life and clipped rewards
  config.eval.noop_max = 5
  env = evaluation.eval_env(run_settings(config).env, config.seed, num_envs=1)
  assert env.options["episodic_life"] is True  # lives as in training; scores are full games
  assert env.options["reward_clip"] is False
  assert env.options["noop_max"] == 5
  env.close()
  assert evaluation.frames_per_step(run_settings(config).env) == 4
  assert evaluation.frames_per_step(run_settings(load_config("cartpole_a2c")).env) == 1


def test_a_greedy_policy_that_never_fires_finishes_its_breakout_games():
  """Training with episodic life never asks the policy to FIRE after a lost life (envpool
  fires on the reset, as baselines' FireResetEnv does). Evaluation keeps that handling, so
  a policy that only ever plays NOOP loses its 5 lives in about 120 steps and the score is
  the whole game's. Evaluated without it, the ball is never served again after the first
  lost life and every game waits for the time limit (the greedy stall of issue 56)."""
  config = load_config("breakout_a2c")
  config.eval.episodes = 2
  config.eval.max_episode_steps = 3000
  evaluator = evaluation.Evaluator(
    evaluation.eval_settings(from_data(config)), _always(0, num_actions=4)
  )
  out = evaluator.evaluate({"w": np.zeros((1,))})
  evaluator.close()
  assert out.completed.all()
  assert (out.lengths < 1000).all(), out.lengths  # game over, not the 3000-step time limit
  assert (out.returns >= 0).all()


def test_select_params():
  params = {"w": np.arange(6.0).reshape(3, 2)}
  first, ids = evaluation.select_params(params, "first", 3)
  np.testing.assert_array_equal(first["w"], [[0, 1]]) and ids == [0]
  every, ids = evaluation.select_params(params, "all", 3)
  assert every["w"].shape == (3, 2) and ids == [0, 1, 2]
  average, ids = evaluation.select_params(params, "average", 3)
  np.testing.assert_array_equal(average["w"], [[2, 3]])
  assert ids == [-1]


def _small(total=4000, every=1600):
  """The training loop's evaluation schedule on run_helpers.tiny_config (gymnax's CartPole:
  the compile cache serves its program; envpool's CartPole, whose programs carry their
  pool's handle, is compiled afresh by every build), checkpointed only at the end."""
  return tiny_config(
    total_env_steps=total, checkpoint_every_steps=0, keep_checkpoints=3, eval__every_steps=every
  )


@pytest.mark.slow
def test_training_with_evaluation(tmp_path):
  off = train(_small(every=0), log=lambda _: None)
  lines = []
  on = train(_small(), workdir=str(tmp_path), log=lines.append)
  # Evaluation never touches the training state.
  for a, b in zip(
    jax.tree.leaves(to_host(off.state.params)), jax.tree.leaves(to_host(on.state.params))
  ):
    np.testing.assert_array_equal(a, b)
  # Every 1600 steps (2 whole calls after the previous evaluation) and the final policy.
  assert [r.env_steps for r in on.evaluations] == [1600, 3200, 4000]
  assert sum(line.startswith("eval") for line in lines) == 3
  with open(tmp_path / "eval.csv") as f:
    rows = list(csv.DictReader(f))
  assert [int(r["env_steps"]) for r in rows] == [1600, 3200, 4000]
  assert all(len(json.loads(r["returns"])) == 10 for r in rows)
  assert float(rows[-1]["mean_return"]) == pytest.approx(on.evaluations[-1].mean_return)
  # The training clock excludes evaluations.
  assert on.eval_time_s > 0
  assert on.train_time_s == pytest.approx(on.wall_time_s - on.eval_time_s, abs=0.5)
  assert all(r.train_time_s < r.wall_time_s for r in on.evaluations[1:])
  with open(tmp_path / "metrics.csv") as f:
    assert "train_time_s" in next(csv.reader(f))
  assert on.energy is None  # no GPU here: energy is skipped


@pytest.mark.slow
def test_time_limit_stops_and_evaluates_the_final_policy():
  config = _small(total=8000, every=4000)
  config.time_limit_s = 1e-6
  lines = []
  result = train(config, log=lines.append)
  assert result.env_steps == 800  # one call, then the limit
  assert [r.env_steps for r in result.evaluations] == [800]
  assert any("time limit" in line for line in lines)


@pytest.mark.slow
def test_resume_appends_evaluations(tmp_path):
  config = _small(total=1600, every=800)
  train(config, workdir=str(tmp_path), log=lambda _: None)
  config.total_env_steps = 3200
  result = train(config, workdir=str(tmp_path), resume=True, log=lambda _: None)
  assert [r.env_steps for r in result.evaluations] == [800, 1600, 2400, 3200]
  records = periodic.read_eval_csv(str(tmp_path / "eval.csv"))
  assert [r.env_steps for r in records] == [800, 1600, 2400, 3200]
  assert records[2].train_time_s >= records[1].train_time_s


@pytest.mark.slow
def test_per_learner_params_and_evaluating_every_learner(tmp_path):
  config = _small(total=3200, every=1600)  # 1600 steps per call
  config.num_learners = 2
  config.initial_params = "per_learner"
  config.learner_stats = True
  config.eval.learners = "all"
  config.eval.episodes = 3
  # Learner i starts from the params of a single-learner run with seed + i.
  algorithm = make_algorithm(config)
  joint = to_host(algorithm.init().params)
  algorithm.env.close()
  for i in range(2):
    single = load_config("cartpole_a2c", env__id=config.env.id)
    single.seed = config.seed + i
    algorithm = make_algorithm(single)
    alone = to_host(algorithm.init().params)
    algorithm.env.close()
    for a, b in zip(jax.tree.leaves(joint), jax.tree.leaves(alone)):
      np.testing.assert_array_equal(a[i], b[0])
  assert any(np.any(a[0] != a[1]) for a in jax.tree.leaves(joint))

  result = train(config, workdir=str(tmp_path), log=lambda _: None)
  assert [(r.env_steps, r.learner) for r in result.evaluations] == [
    (1600, 0),
    (1600, 1),
    (3200, 0),
    (3200, 1),
  ]
  assert all(len(r.returns) == 3 for r in result.evaluations)
  assert len(result.learner_returns) == 2
  with open(tmp_path / "metrics.csv") as f:
    header = next(csv.reader(f))
  assert "mean_return/learner0" in header and "mean_return/learner1" in header


def test_bad_eval_config():
  config = load_config("cartpole_a2c")
  config.eval.learners = "best"
  with pytest.raises(ValueError, match="eval.learners"):
    train(config, log=lambda _: None)
  config = load_config("cartpole_a2c")
  config.eval.every_steps = -1
  with pytest.raises(ValueError, match="eval.every_steps must be >= 0"):
    train(config, log=lambda _: None)
