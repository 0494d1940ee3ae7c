"""One shape for every algorithm: one apply-update with one meaning of per-tensor clipping,
honest config (flags that would do nothing are rejected), 'auto' choices resolved once."""

import jax
import pytest
from run_helpers import plan_of

from galax.algorithms.registry import spec_for
from galax.config import base_config, make_algorithm, set_fields, validate
from galax.core import optimizers
from galax.framework.plan import PlanContext
from galax.parallel import combine as combine_lib


def small_config(**overrides):
  c = base_config()
  c.env.id = "CartPole-v1"
  c.env.num_threads = 1
  c.network.mlp_hidden = (8, 8)
  c.envs_per_learner = 8
  c.t_max = 4
  c.ppo.epochs, c.ppo.minibatches = 1, 2
  c.updates_per_call = 1
  set_fields(c, overrides)
  return c


@pytest.mark.parametrize("algorithm", ["a2c", "impala", "ppo", "hts_a2c", "hts_ppo"])
def test_clip_average_norm_clips_each_learner_before_combining(algorithm, monkeypatch):
  """Every algorithm clips each learner's gradient per tensor (`LearnerOptimizer.clip_each`),
  then combines it (`Combiner.grads`): optimizers.py's one meaning."""
  events = []
  clip = optimizers.clip_each_learner
  mean = combine_lib.AllReduce.grads
  monkeypatch.setattr(
    optimizers, "clip_each_learner", lambda g, c: (events.append(("clip", c)), clip(g, c))[1]
  )
  monkeypatch.setattr(
    combine_lib.AllReduce,
    "grads",
    lambda self, g, w=None: (events.append(("combine",)), mean(self, g, w))[1],
  )
  config = validate(
    small_config(
      algorithm=algorithm,
      num_learners=2,
      combine="allreduce",
      **{"optimizer.clip_average_norm": 0.1},
    )
  )
  algo = make_algorithm(config)
  try:  # traced on the abstract state (test_aot checks it is the real one's): no compile
    algo.step.lower(algo.abstract_init())
  finally:
    algo.env.close()
  assert ("clip", 0.1) in events
  assert events.index(("clip", 0.1)) < events.index(("combine",))
  assert events.count(("clip", 0.1)) == events.count(("combine",))


@pytest.mark.parametrize(
  "overrides,match",
  [
    (
      {"algorithm": "ppo", "num_learners": 2, "combine": "gossip", "grad_similarity": True},
      "grad_similarity",
    ),
    ({"num_learners": 2, "combine": "allreduce", "gossip.metrics": True}, "gossip.metrics"),
    ({"num_learners": 2, "gossip.delay": 1}, "gossip.delay"),
    (
      {"num_learners": 4, "combine": "gossip", "gossip.delay": 2, "initial_params": "per_learner"},
      "initial_params",
    ),
    ({"learner_map": "grouped"}, "learner_map"),
    ({"algorithm": "ppo", "learner_map": "loop"}, "acts on A2C-family"),
    ({"update_loop": "python"}, "update_loop"),
    ({"grad_chunks": -1}, "grad_chunks"),
    ({"grad_chunks": 3}, "must divide the 8 envs per learner"),
    ({"algorithm": "ppo", "grad_chunks": 3}, "must divide the 16 samples per PPO minibatch"),
    ({"algorithm": "hts_a2c", "grad_chunks": 2}, "HTS-A2C"),
    ({"algorithm": "ppo", "ppo.minibatches": 5}, "ppo.minibatches=5"),
    ({"algorithm": "hts_ppo", "hts.microbatches": 3}, "hts.microbatches=3"),
  ],
)
def test_flags_that_would_do_nothing_or_break_are_rejected(overrides, match):
  with pytest.raises(ValueError, match=match):
    validate(small_config(**overrides))


@pytest.mark.slow
def test_gossip_metrics_act_outside_a2c():
  """gossip.metrics reports GALA's consensus metrics in every algorithm that gossips."""
  config = validate(
    small_config(algorithm="impala", num_learners=2, combine="gossip", **{"gossip.metrics": True})
  )
  algo = make_algorithm(config)
  try:
    _, metrics = algo.step(algo.init())
  finally:
    algo.env.close()
  assert "consensus_distance" in metrics["gossip"]


def test_auto_choices_are_resolved_once_into_the_algorithms_plan():
  config = validate(small_config())
  algo = make_algorithm(config)
  algo.env.close()
  assert config.update_loop == "auto" and config.grad_chunks == 0  # the caller's, untouched
  plan = algo.plan
  assert (plan.learner_map, plan.grad_chunks) == ("vmap", 1)
  assert plan.update_loop == "scan"  # vector observations: one XLA loop everywhere


@pytest.mark.parametrize(
  "algorithm,layout,learners,conv_impl,expected",
  [
    # Many learners: one learner's program in an XLA loop, with patch convolutions.
    ("a2c", "HWC", 16, "auto", ("loop", "patches", "scan")),
    ("a2c", "CHW", 64, "auto", ("loop", "patches", "scan")),
    ("a2c", "HWC", 4, "auto", ("unroll", "xla", "host")),
    ("a2c", "HWC", 4, "patches", ("vmap", "patches", "scan")),
    ("a2c", "HWC", 16, "xla", ("loop", "xla", "host")),  # as asked: XLA convs in the loop
    ("ppo", "HWC", 16, "auto", ("vmap", "xla", "host")),  # PPO vmaps its learners
    ("a2c", "flat", 16, "auto", ("vmap", "xla", "scan")),
  ],
)
def test_cpu_auto_rules_for_learners_and_convolutions(
  algorithm, layout, learners, conv_impl, expected
):
  """On CPU (the test platform) with image observations, 'auto' loops over more than 8
  learners per device with patch convolutions (unrolled they took minutes to compile)."""
  network = "mlp" if layout == "flat" else "minatar"  # the rules are for conv networks
  config = small_config(
    algorithm=algorithm, **{"network.conv_impl": conv_impl, "network.name": network}
  )
  target = PlanContext("cpu", layout, False, learners)
  plan = plan_of(config, spec=spec_for(config.algorithm), target=target)
  assert (plan.learner_map, plan.conv_impl, plan.update_loop) == expected


@pytest.mark.slow
def test_entries_assert_their_shapes():
  """rollout's trajectory, the targets and gradients that read one, and the combiners
  check shapes at their entries (chex, at trace time): a wrong shape is one assertion
  naming it, not a broadcast deep inside."""
  import jax.numpy as jnp
  from trajectories import random_trajectory

  from galax.algorithms.ppo import gae_targets
  from galax.core.rollout import check_trajectory

  traj = random_trajectory(jax.random.PRNGKey(0), steps=4, envs=3)
  check_trajectory(traj)
  short_values = traj._replace(values=traj.values[:-1])  # no bootstrap value
  with pytest.raises(AssertionError):
    check_trajectory(short_values)
  with pytest.raises(AssertionError):
    gae_targets(short_values, 0.99, 0.95)
  with pytest.raises(AssertionError):
    check_trajectory(traj._replace(actions=traj.actions.T))
  params = {"w": jnp.zeros((2, 3))}
  for combiner in (combine_lib.Independent(), combine_lib.AllReduce()):
    with pytest.raises(AssertionError):
      combiner.params(params, {"w": jnp.zeros((2, 4))}, ())
