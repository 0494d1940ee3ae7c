"""The BA3C, A3C and IMPALA configs: the papers' values, a training step on Breakout, and
the distributed-BA3C small model's size."""

import jax
import numpy as np
import pytest

from galax.config import load as load_config
from galax.config import make_algorithm, validate
from galax.core import networks
from galax.envs import EnvSpec
from galax.parallel.layout import to_host


def test_ba3c_config_is_the_papers():
  c = validate(load_config("ba3c_breakout"))
  assert (c.algorithm, c.combine, c.num_learners) == ("a2c", "allreduce", 64)
  assert c.envs_per_learner * c.t_max == 32  # per-worker batch
  opt = c.optimizer
  assert (opt.name, opt.learning_rate, opt.adam_b1, opt.adam_b2, opt.eps) == (
    "adam",
    1e-3,
    0.8,
    0.75,
    1e-8,
  )
  assert (opt.clip_average_norm, opt.max_grad_norm, opt.sharded_state) == (0.1, 0.0, True)
  assert (c.network.name, c.network.fc_width) == ("ba3c", 128)


def test_impala_config_is_hts_table_a3():
  c = validate(load_config("impala_atari"))
  assert (c.algorithm, c.t_max, c.envs_per_learner, c.gamma) == ("impala", 20, 32, 0.99)
  assert (c.optimizer.name, c.optimizer.eps, c.optimizer.learning_rate) == ("rmsprop", 0.01, 0.006)
  assert (c.impala.rho_bar, c.impala.c_bar) == (1.0, 1.0) and c.impala.policy_lag > 1
  assert c.network.name == "impala_shallow"


def test_a3c_config_is_galas():
  c = validate(load_config("a3c_atari"))
  assert (c.algorithm, c.num_learners, c.envs_per_learner, c.t_max) == ("a3c", 4, 16, 5)
  assert (c.optimizer.learning_rate, c.optimizer.lr_scaling, c.optimizer.eps) == (
    7e-4,
    "none",
    0.01,
  )
  assert c.a3c.max_staleness == c.num_learners - 1


@pytest.mark.parametrize("fc,params", [(128, 332_295), (256, 538_119)])
def test_ba3c_network_has_the_papers_size(fc, params):
  # Adamski et al. Table 2 counts 4 zero input channels (the authors padded 12 RGB
  # channels to 16): 5 * 5 * 4 * 32 = 3,200 weights that galax does not have.
  spec = EnvSpec("Pong-v5", "atari", (12, 84, 84), np.uint8, 6, "CHW", 0)
  net = networks.make_network("ba3c", spec, fc)
  shapes = jax.eval_shape(lambda: networks.init_params(net, spec, jax.random.PRNGKey(0)))
  assert sum(int(np.prod(x.shape)) for x in jax.tree.leaves(shapes)) + 3_200 == params


@pytest.mark.slow
@pytest.mark.parametrize(
  "name,overrides",
  [
    ("ba3c_breakout", dict(num_learners=2, envs_per_learner=2)),
    ("impala_atari", dict(envs_per_learner=2, t_max=4)),
  ],
)
def test_config_trains_one_update(name, overrides):
  # (a3c_atari shares its network and env with breakout_a2c; A3C runs in
  # tests/algorithms/test_a3c.py.)
  config = load_config(name)
  config.update(dict(updates_per_call=1, **overrides))
  algorithm = make_algorithm(config)
  state, metrics = algorithm.step(algorithm.init())
  algorithm.env.close()
  metrics = to_host(metrics)
  assert np.all(np.isfinite(metrics["loss"]["total"]))
  assert np.all(np.isfinite(metrics["grad_norm"])) and np.all(metrics["grad_norm"] > 0)
  if name == "ba3c_breakout":
    assert algorithm.env.spec.obs_shape == (12, 84, 84)  # RGB frames
