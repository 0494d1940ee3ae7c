"""`galax.evaluate_params` as the docs show it, through `import galax` alone: the example
of docs/evaluation.md ("Evaluating from Python") runs as written, and bad arguments are
one clear error."""

import os
import re
import subprocess
import sys

import pytest
from run_helpers import ROOT

import galax

SECTION = "## Evaluating from Python"


def _docs_example() -> str:
  """The python block of docs/evaluation.md's "Evaluating from Python" section."""
  text = open(os.path.join(ROOT, "docs", "evaluation.md")).read()
  assert SECTION in text
  section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
  blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
  assert len(blocks) == 1, "one example in the section"
  return blocks[0]


@pytest.mark.slow
def test_the_documented_example_runs_as_written(tmp_path):
  """As a user would: the docs' code in a fresh Python, in another directory."""
  example = _docs_example()
  assert "galax.evaluate_params(config, params" in example
  assert all(
    line.startswith(("import jax", "import galax", "#", " ")) or "import" not in line
    for line in example.splitlines()
  ), "the example imports only jax and galax"
  env = dict(os.environ, PYTHONPATH=ROOT)
  proc = subprocess.run(
    [sys.executable, "-c", example],
    capture_output=True,
    text=True,
    cwd=tmp_path,
    env=env,
    timeout=600,
  )
  assert proc.returncode == 0, proc.stderr[-2000:]
  found = re.search(r"mean return ([0-9.]+) over (\d+) episodes", proc.stdout)
  assert found, proc.stdout[-1000:]
  assert int(found.group(2)) == 10 and float(found.group(1)) > 0
  assert not os.listdir(tmp_path), "no workdir: nothing written"


def test_the_package_docstring_shows_the_same_call():
  assert "galax.evaluate_params(config, params, episodes=10)" in galax.__doc__
  assert "policy_fn, config = galax.load_policy(" in galax.__doc__


@pytest.fixture(scope="module")
def fresh():
  """A tiny CartPole config and freshly initialised params, through the public API."""
  import jax

  config = galax.load_config("cartpole_a2c", envs_per_learner=2, target_return=0)
  config.eval.episodes = 3
  block = galax.make_algorithm(config).init().params  # [num_learners, ...]
  return config, block, jax.tree.map(lambda x: x[0], block)


def test_evaluate_params_takes_the_config(fresh):
  config, _, params = fresh
  returns = galax.evaluate_params(config, params)
  assert returns.shape == (3,)  # config.eval.episodes
  assert (returns > 0).all()  # CartPole pays 1 per step
  returns = galax.evaluate_params(config, params, episodes=2, greedy=False)
  assert returns.shape == (2,)


def test_evaluate_params_is_reproducible(fresh):
  config, _, params = fresh
  first = galax.evaluate_params(config, params, episodes=2)
  assert (galax.evaluate_params(config, params, episodes=2) == first).all()


@pytest.mark.parametrize(
  "how,error,message",
  [
    ("learner_axis", ValueError, "params have a learner axis of 1"),
    ("other_network", ValueError, "params do not fit the config's network"),
    ("dict_config", TypeError, "evaluate_params takes a run's config"),
    ("no_episodes", ValueError, "episodes=0: give a whole number >= 1"),
  ],
)
def test_bad_arguments_are_one_clear_error(fresh, how, error, message):
  config, block, params = fresh
  args, kwargs = (config, params), {}
  if how == "learner_axis":
    args = (config, block)
  elif how == "other_network":
    args = (config, {"params": {"w": params["params"][next(iter(params["params"]))]}})
  elif how == "dict_config":
    args = (config.to_dict(), params)
  elif how == "no_episodes":
    kwargs = dict(episodes=0)
  with pytest.raises(error) as caught:
    galax.evaluate_params(*args, **kwargs)
  text = str(caught.value)
  assert message in text and "\n" not in text, text
