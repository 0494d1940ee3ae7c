"""GALA-A2C on Breakout (Assran et al. 2019), the paper's setup (Table 2, Appendix C).

4 learners x 16 envs (64 simulators), each an A2C learner on its own envs, that after
every update averages its parameters with its in-peer on a directed 1-peer ring
(weights 1/2). All learners start from the same parameters; env seeds differ.
Per learner: t_max 5, RMSProp (PyTorch convention, eps 0.01, alpha 0.99, no momentum),
lr 7e-4 x sqrt(4) = 1.4e-3, global-norm clip 0.5, entropy 0.01, value coef 0.5,
gamma 0.99; episodic life and clipped rewards for training (reported returns are raw
full games), up to 30 no-ops. Network: the GALA code's CNN (conv 32-64-32 + fc 512,
orthogonal init). 40M agent steps of all learners together (160M frames).

Breakout is where the paper's GALA-A2C gains most over A2C (690 vs 495 at 40M steps).
Fig. 2 diagnostics: --config.gossip.metrics=True (consensus distance, Prop. 1 bound) and
--config.grad_similarity=True (gradient cosine matrix). The all-reduce baseline with the
same learners is configs/allreduce_a2c.py.
"""

from galax.config import load


def get_config():
  c = load("breakout_a2c")  # Table 2's per-learner A2C settings
  c.num_learners = 4
  c.envs_per_learner = 16
  c.combine = "gossip"
  c.gossip.topology = "ring"
  c.gossip.peers = 1
  c.gossip.delay = 0
  c.optimizer.lr_scaling = "sqrt_learners"  # 7e-4 x sqrt(4)
  return c
