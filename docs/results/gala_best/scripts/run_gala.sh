#!/bin/bash
# Issue 35 item 3: ring GALA, all-reduce A2C and A3C (4 learners x 16 envs, MinAtar MLP,
# minatar_a2c's optimisation) at base rates {1e-3, 3e-3, 1e-2}, 3 seeds, 2M steps, both games.
cd /work/main && . .venv/bin/activate
COMMON="--config=minatar_a2c --config.num_learners=4 --config.envs_per_learner=16 --config.eval.every_steps=100000 --config.eval.greedy=False --config.eval.episodes=10"
AXES="--set=env.id=gymnax/Breakout-MinAtar,gymnax/SpaceInvaders-MinAtar --set=optimizer.learning_rate=1e-3,3e-3,1e-2 --seeds=0-2 --steps=2000000"
python -m galax.sweep $COMMON --config.combine=gossip --config.gossip.topology=ring --config.optimizer.lr_scaling=sqrt_learners $AXES --out=/work/runs/gala35/ring
python -m galax.sweep $COMMON --config.combine=allreduce --config.optimizer.lr_scaling=sqrt_learners $AXES --out=/work/runs/gala35/allreduce
python -m galax.sweep $COMMON --config.algorithm=a3c --config.a3c.max_staleness=3 $AXES --out=/work/runs/gala35/a3c
