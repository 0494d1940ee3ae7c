#!/bin/bash
# Issue 35 items 3 and 4, after run_gala.sh: edge extensions, seeds 3-4 at each method's best
# rate, the ring without lr scaling, Table 2's optimisation, BA3C's paper shape, Fig. 1a.
# One job at a time, each under nice -n 19.
cd /work/main && . .venv/bin/activate
R=/work/runs/gala35
while pgrep -f run_gala.sh >/dev/null; do sleep 20; done
echo "phase2 start $(date -u +%H:%M)"
COMMON="--config=minatar_a2c --config.num_learners=4 --config.envs_per_learner=16 --config.eval.every_steps=100000 --config.eval.greedy=False --config.eval.episodes=10"
declare -A FLAGS
FLAGS[ring]="--config.combine=gossip --config.gossip.topology=ring --config.optimizer.lr_scaling=sqrt_learners"
FLAGS[allreduce]="--config.combine=allreduce --config.optimizer.lr_scaling=sqrt_learners"
FLAGS[a3c]="--config.algorithm=a3c --config.a3c.max_staleness=3"
sweep() { nice -n 19 python -m galax.sweep "$@"; }
best() { python -m galax.results.best --runs=$R --groups=ring,allreduce,a3c --best | python -c "import json,sys; print(json.load(sys.stdin)['$1']['$2'])"; }
GAMES="Breakout-MinAtar SpaceInvaders-MinAtar"
# 1. Past the edge: while a method's best is its largest (smallest) rate, add the next one.
for m in ring allreduce a3c; do for g in $GAMES; do
  for i in 1 2; do
    b=$(best $m $g)
    case "$b" in
      0.01) nxt=0.03;; 0.03) nxt=0.1;; 0.001) nxt=0.0003;; *) nxt="";;
    esac
    [ -z "$nxt" ] && break
    [ -e "$R/${m}_ext/env.id=gymnax/${g}__optimizer.learning_rate=$nxt/summary.json" ] && break
    echo "extend $m $g: best $b -> $nxt $(date -u +%H:%M)"
    sweep $COMMON ${FLAGS[$m]} --set=env.id=gymnax/$g --set=optimizer.learning_rate=$nxt --seeds=0-2 --steps=2000000 --out=$R/${m}_ext
  done
done; done
python -m galax.results.best --runs=$R --groups=ring,allreduce,a3c --best > $R/best_rates.json; cat $R/best_rates.json
# 2. Seeds 3-4 at each method's best rate.
for m in ring allreduce a3c; do for g in $GAMES; do
  b=$(best $m $g); echo "seeds 3-4 $m $g at $b $(date -u +%H:%M)"
  sweep $COMMON ${FLAGS[$m]} --set=env.id=gymnax/$g --set=optimizer.learning_rate=$b --seeds=3-4 --steps=2000000 --out=$R/${m}_s34
done; done
# 3. The ring at its best base rate without the sqrt(learners) rule, 5 seeds.
for g in $GAMES; do
  b=$(best ring $g); echo "ring noscale $g at $b $(date -u +%H:%M)"
  sweep $COMMON --config.combine=gossip --config.gossip.topology=ring --config.optimizer.lr_scaling=none --set=env.id=gymnax/$g --set=optimizer.learning_rate=$b --seeds=0-4 --steps=2000000 --out=$R/ring_noscale
done
echo "phase2 items 3a done $(date -u +%H:%M)"
touch $R/phase2_a.done
