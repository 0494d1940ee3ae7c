"""benchmarks/'s one command-line style (benchmarks/cli.py): argparse that still takes the
spellings of the absl flags some benchmarks had, and bad input as one `error:` line."""

import os

import forked_runs
import pytest

from benchmarks import a2c_cost_split, gala_scaling, hts, suite

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize(
  "argv, isolate, weak",
  [
    ([], True, False),
    (["--noisolate"], False, False),
    (["--isolate=false"], False, False),
    (["--isolate", "--weak_scaling"], True, True),
    (["--weak_scaling=true", "--noweak_scaling"], True, False),
  ],
)
def test_absl_boolean_spellings(argv, isolate, weak):
  args = suite.parse(argv)
  assert (args.isolate, args.weak_scaling) == (isolate, weak)


def test_comma_lists_with_and_without_equals():
  assert suite.parse(["--num_envs=16,64", "--algorithms", "raw,a2c"]).num_envs == [16, 64]
  assert suite.parse(["--num_envs", "16,64"]).num_envs == [16, 64]
  assert gala_scaling.parse(["--total_envs=64", "--learners=2,4"]).learners == [2, 4]


def test_hts_and_a2c_cost_split_keep_their_absl_flags():
  args = hts.parse([])
  assert (args.suites, args.num_envs, args.num_actors, args.seconds) == (
    ["atari", "football"],
    16,
    -1,
    20.0,
  )
  args = hts.parse(["--suites=atari", "--seconds", "30", "--env_threads=2"])
  assert (args.suites, args.seconds, args.env_threads) == (["atari"], 30.0, 2)
  args = a2c_cost_split.parse(["--config=minatar_a2c", "--num_envs", "64", "--rounds=5"])
  assert (args.config, args.num_envs, args.rounds, args.env) == (
    "minatar_a2c",
    64,
    5,
    "gymnax/CartPole-v1",
  )


def test_the_device_phases_take_hts_flags_without_absl():
  """device_phases.hts_config reads hts.parse's flags (they were absl FLAGS it set)."""
  from benchmarks.device_phases import hts_config

  args = hts.parse(["--football_env=gfootball/academy_counterattack_hard-v1", "--num_envs=2"])
  config = hts_config(args, "football", small=True)
  assert (config.env.id, config.envs_per_learner, config.updates_per_call) == (
    "gfootball/academy_counterattack_hard-v1",
    2,
    1,
  )
  assert hts_config(args, "atari", small=True).env.id == "Pong-v5"


BAD_INPUT = [
  (["suite", "--algorithms=raw,foo"], "foo"),
  (["suite", "--num_envs=16,sixty"], "sixty"),
  (["gala_scaling", "--total_envs=10", "--learners=4"], "--learners=4"),
  (["learning_check", "--baselines=dqn"], "dqn"),
  (["gymnax_throughput", "--kinds=a2c,sac"], "sac"),
  (["sharded_optimizer", "--unknown=1"], "--unknown"),
  (["hts", "--suites=pong"], "pong"),  # absl's ran nothing and exited 0
  (["hts", "--num_envs=sixteen"], "sixteen"),
  (["hts", "--suites=atari", "--atari_env=Pongg-v5"], "Pongg-v5"),
  (["a2c_cost_split", "--config=nosuch"], "nosuch"),
  (["a2c_cost_split", "--env=gymnax/NoSuch-v1"], "NoSuch"),
  (["a2c_cost_split", "--rounds=0", "--num_envs=4", "--updates_per_call=1"], "--rounds=0"),
  (["a2c_cost_split", "--config=minatar_ppo"], "'ppo'"),
]


@pytest.fixture(scope="module")
def bad_input_answers(tmp_path_factory):
  """Each bad command as `python -m benchmarks.<name> ...`, in forks of one interpreter."""
  commands = {" ".join(c): ["-m", f"benchmarks.{c[0]}", *c[1:]] for c, _ in BAD_INPUT}
  return forked_runs.run(commands, tmp_path_factory.mktemp("bad_input"))


@pytest.mark.slow  # subprocesses
@pytest.mark.parametrize("command, named", BAD_INPUT)
def test_bad_input_is_one_line(bad_input_answers, command, named):
  proc = bad_input_answers[" ".join(command)]
  err = proc["stderr"].strip()
  assert proc["returncode"] == 2, err[-1000:]
  assert err.startswith("error: ") and named in err and "\n" not in err, err[-1000:]
