"""HTS-RL (Liu et al. 2020): concurrent rollout and learning with one-step-delayed gradients.

build.py     the `hts` config section and its checks, the segments' shapes, the two
             builders (make_hts_a2c, make_hts_ppo), SPECS
segment.py   the segment (alpha env steps; the learner's units ride along) and its state
learners.py  the learners whose units a segment hosts: HTS-A2C's, HTS-PPO's (both points)
ordering.py  `after` and `isolated`: the data dependencies and compiled-apart calls that
             order the learner's work around envpool's send/recv
"""

from galax.algorithms.hts.build import SPECS  # noqa: F401
