#!/bin/bash
# BA3C best against best (issue 46, item 2): the rate sweeps, one process at a time, niced.
#   bash docs/results/ba3c_best/run.sh <rmsprop|adam|adam1> RATE...
# SEEDS=3-5 SUFFIX=_s35 for the held-out seeds; GAMES=gymnax/SpaceInvaders-MinAtar for one game.
# Then: python docs/results/ba3c_best/ba3c_best.py --runs=runs/ba3c_best --out=docs/results/ba3c_best
set -e
cd "$(dirname "$0")/../../.."
source .venv/bin/activate
SEEDS=${SEEDS:-0-2}
SUFFIX=${SUFFIX:-}
GAMES=${GAMES:-gymnax/Breakout-MinAtar,gymnax/SpaceInvaders-MinAtar}
# the paper's shape: batch 2048 = 4 learners x 32 envs x t_max 16, all-reduce, per-tensor clip
BA3C="--config=minatar_a2c --config.num_learners=4 --config.envs_per_learner=32 \
  --config.combine=allreduce --config.optimizer.lr_scaling=none \
  --config.optimizer.max_grad_norm=0.0 --config.optimizer.clip_average_norm=0.1 \
  --set=env.id=$GAMES --seeds=$SEEDS --steps=2000000"
ADAM="--config.optimizer.name=adam --config.optimizer.adam_b1=0.8 \
  --config.optimizer.adam_b2=0.75 --config.optimizer.eps=1e-8"
RMSPROP="--config.optimizer.name=rmsprop --config.optimizer.eps=0.01"
what=$1; shift
for lr in "$@"; do
  case $what in
    rmsprop) nice -n 5 python -m galax.sweep $BA3C $RMSPROP --set=optimizer.learning_rate=$lr \
               --out=runs/ba3c_best/rmsprop$SUFFIX ;;
    adam) nice -n 5 python -m galax.sweep $BA3C $ADAM --set=optimizer.learning_rate=$lr \
               --out=runs/ba3c_best/adam$SUFFIX ;;
    # one learner of 32 envs (batch 512, BA3C's single-node batch): linear scaling's start
    adam1) ONE=${BA3C/num_learners=4/num_learners=1}
           nice -n 5 python -m galax.sweep ${ONE/combine=allreduce/combine=independent} $ADAM \
               --set=optimizer.learning_rate=$lr --out=runs/ba3c_best/adam_1x32$SUFFIX ;;
  esac
done
