#!/bin/bash
# After phase3: BA3C's paper shape at 4x both rates (the earlier pair learned slowly at the
# papers' rates, so it was also judged at 4x).
cd /work/main && . .venv/bin/activate
R=/work/runs/gala35
while ! grep -q "phase3 done" $R/phase3.log; do sleep 20; done
echo "phase4 start $(date -u +%H:%M)"
EVAL="--config.eval.every_steps=100000 --config.eval.greedy=False --config.eval.episodes=10"
BA3C="--config=minatar_a2c --config.num_learners=4 --config.envs_per_learner=32 --config.combine=allreduce --config.optimizer.lr_scaling=none --config.optimizer.max_grad_norm=0.0 --config.optimizer.clip_average_norm=0.1 $EVAL --set=env.id=gymnax/Breakout-MinAtar,gymnax/SpaceInvaders-MinAtar --seeds=0-2 --steps=2000000"
nice -n 19 python -m galax.sweep $BA3C --config.optimizer.name=adam --config.optimizer.adam_b1=0.8 --config.optimizer.adam_b2=0.75 --config.optimizer.eps=1e-8 --set=optimizer.learning_rate=0.004 --out=$R/ba3c_paper_lr4/adam
nice -n 19 python -m galax.sweep $BA3C --config.optimizer.name=rmsprop --config.optimizer.rmsprop_convention=torch --config.optimizer.rmsprop_decay=0.99 --config.optimizer.eps=0.01 --set=optimizer.learning_rate=0.00792 --out=$R/ba3c_paper_lr4/rmsprop
echo "phase4 done $(date -u +%H:%M)"
