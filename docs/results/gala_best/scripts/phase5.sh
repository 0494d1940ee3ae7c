#!/bin/bash
# After phase4: seeds 5-9 at each method's best rate (fresh seeds: the best was picked on
# seeds 0-2), then Table 2's RMSProp at 3x and 10x its rate (seeds 0-2).
cd /work/main && . .venv/bin/activate
R=/work/runs/gala35
while ! grep -q "phase4 done" $R/phase4.log; do sleep 15; done
echo "phase5 start $(date -u +%H:%M)"
C16="--config=minatar_a2c --config.num_learners=4 --config.envs_per_learner=16 --config.eval.every_steps=100000 --config.eval.greedy=False --config.eval.episodes=10"
declare -A FLAGS
FLAGS[ring]="--config.combine=gossip --config.gossip.topology=ring --config.optimizer.lr_scaling=sqrt_learners"
FLAGS[allreduce]="--config.combine=allreduce --config.optimizer.lr_scaling=sqrt_learners"
FLAGS[a3c]="--config.algorithm=a3c --config.a3c.max_staleness=3"
best() { python -c "import json; print(json.load(open('$R/best_rates.json'))['$1']['$2'])"; }
for g in SpaceInvaders-MinAtar Breakout-MinAtar; do for m in ring allreduce a3c; do
  b=$(best $m $g); echo "seeds 5-9 $m $g at $b $(date -u +%H:%M)"
  nice -n 19 python -m galax.sweep $C16 ${FLAGS[$m]} --set=env.id=gymnax/$g --set=optimizer.learning_rate=$b --seeds=5-9 --steps=2000000 --out=$R/${m}_s59
done; done
echo "seeds 5-9 done $(date -u +%H:%M)"
T2="--config.optimizer.name=rmsprop --config.optimizer.rmsprop_convention=torch --config.optimizer.rmsprop_decay=0.99 --config.optimizer.eps=0.01 --config.optimizer.anneal=none --config.t_max=5 --config.returns=nstep --set=optimizer.learning_rate=0.0021,0.007 --set=env.id=gymnax/SpaceInvaders-MinAtar,gymnax/Breakout-MinAtar --seeds=0-2 --steps=2000000"
for m in ring allreduce a3c; do
  echo "table2 rates $m $(date -u +%H:%M)"
  nice -n 19 python -m galax.sweep $C16 ${FLAGS[$m]} $T2 --out=$R/table2_$m
done
echo "phase5 done $(date -u +%H:%M)"
