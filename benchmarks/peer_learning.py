"""galax PPO against an installable peer (rejax's PPO) on MinAtar: same games, budget, seeds.

  pip install rejax            # the peer (pure-JAX PPO on gymnax; not a galax dependency)
  python -m benchmarks.peer_learning                                   # 2 games x 5 seeds x 2M
  python -m benchmarks.peer_learning --games=Breakout-MinAtar --seeds=2 --steps=500000
  python -m benchmarks.peer_learning --galax_config=minatar_ppo \\
      --galax_set=optimizer.learning_rate=5e-4

Both learners train one after the other in this process, with the settings of PureJaxRL's
MinAtar PPO (its examples' brax_minatar notebook): 64 envs x 128 steps, 4 epochs x 8
minibatches, gamma 0.99, GAE 0.95, clip 0.2 (policy and value), entropy 0.01, value 0.5,
Adam lr 5e-3, global-norm clip 0.5, an MLP 64x64 relu on the flattened 10x10xC image.
galax runs `--galax_config` (configs/minatar_ppo.py, whose defaults are those) as any user
would; the peer gets the same numbers through rejax's own fields. Differences the peer's
code fixes and galax does not copy: rejax keeps separate actor and critic MLPs (galax one
torso, two heads), normalizes advantages per minibatch (galax over the batch) and keeps
its learning rate constant (galax anneals it linearly, as PureJaxRL does). rejax 0.1.3
predates gymnax 1.0's six-value `step`; `FiveTupleStep` hands it the old five values.

Both are scored by the same protocol: every `steps / evals` agent steps, `eval_episodes`
full episodes with actions sampled from the policy (rejax's own evaluator; galax's
`config.eval` with greedy=False), on envs apart from the training ones. A run's final
return is the mean of its last evaluation. The table gives the mean over seeds with a 95%
bootstrap CI, and steps/s of training including the evaluations, compile time excluded
(measured in this run, on this machine). Writes results.json (resumable: finished runs
are kept), results.md and curves.png to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import numpy as np

from galax.config import load, set_fields, validate
from galax.results.paper_protocols import bootstrap_ci

# PureJaxRL's MinAtar PPO, in rejax's field names.
PEER_SETTINGS = dict(
  num_envs=64,
  num_steps=128,
  num_epochs=4,
  num_minibatches=8,
  gamma=0.99,
  gae_lambda=0.95,
  clip_eps=0.2,
  ent_coef=0.01,
  vf_coef=0.5,
  learning_rate=5e-3,
  max_grad_norm=0.5,
  agent_kwargs=dict(activation="relu", hidden_layer_sizes=(64, 64)),
)


def galax_run(
  game: str, seed: int, steps: int, evals: int, episodes: int, config_name: str, overrides: dict
) -> dict:
  from galax.training.loop import train

  config = load(config_name)
  config.env.id = f"gymnax/{game}"
  config.seed, config.total_env_steps = seed, steps
  config.eval.every_steps, config.eval.episodes = steps // evals, episodes
  config.eval.greedy, config.eval.num_envs = False, episodes
  config.tensorboard, config.checkpoint_every_steps, config.log_every_steps = False, 0, steps
  set_fields(config, overrides)
  result = train(validate(config), workdir=None, log=lambda _: None)
  curve = [(r.env_steps, r.mean_return) for r in result.evaluations]
  seconds = result.wall_time_s - result.compile_time_s
  return dict(
    curve=curve,
    final=curve[-1][1],
    steps_per_s=result.env_steps / seconds,
    train_return=result.mean_return,
    config=config_name,
    overrides=overrides,
  )


class FiveTupleStep:
  """A gymnax env whose `step` returns gymnax 0.0.x's 5-tuple (obs, state, reward, done,
  info), done = terminated or truncated: rejax 0.1.3 unpacks five values, gymnax 1.0
  returns six (terminated and truncated apart). The rest is the env's own."""

  def __init__(self, env):
    self._env = env

  def __getattr__(self, name: str):
    if name.startswith("__") or name == "_env":  # copy/pickle probe before __init__
      raise AttributeError(name)
    return getattr(self._env, name)

  def step(self, key, state, action, params=None):
    obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
    return obs, state, reward, jax.numpy.logical_or(terminated, truncated), info


def peer_run(game: str, seed: int, steps: int, evals: int, episodes: int) -> dict:
  import gymnax
  import rejax
  from rejax.evaluate import evaluate

  def eval_callback(algo, ts, rng):
    return evaluate(
      algo.make_act(ts),
      rng,
      algo.env,
      algo.env_params,
      episodes,
      algo.env_params.max_steps_in_episode,
    )

  env, env_params = gymnax.make(game)
  algo = rejax.PPO.create(
    env=FiveTupleStep(env),
    env_params=env_params,
    total_timesteps=steps,
    eval_freq=steps // evals,
    **PEER_SETTINGS,
  )
  algo = algo.replace(eval_callback=eval_callback)
  key = jax.random.PRNGKey(seed)
  start = time.perf_counter()
  compiled = jax.jit(algo.train).lower(key).compile()
  compile_s = time.perf_counter() - start
  start = time.perf_counter()
  _, (_, returns) = jax.block_until_ready(compiled(key))
  seconds = time.perf_counter() - start
  means = np.asarray(returns).mean(axis=-1)  # [evals + 1]: the first at step 0
  iteration = algo.num_envs * algo.num_steps
  per_eval = -(-algo.eval_freq // iteration) * iteration  # whole iterations between evals
  curve = [(min(i * per_eval, steps), float(m)) for i, m in enumerate(means)]
  return dict(
    curve=curve,
    final=curve[-1][1],
    steps_per_s=len(means[1:]) * per_eval / seconds,
    compile_s=compile_s,
    settings=PEER_SETTINGS,
  )


def summary_rows(results: dict) -> list[dict]:
  rows = []
  for game in sorted({k.split("|")[0] for k in results}):
    for learner in ("galax", "rejax"):
      runs = [v for k, v in sorted(results.items()) if k.startswith(f"{game}|{learner}|")]
      if not runs:
        continue
      finals = np.array([r["final"] for r in runs])
      mean, low, high = bootstrap_ci(finals)
      rows.append(
        dict(
          game=game,
          learner=learner,
          seeds=len(runs),
          final=float(mean),
          low=float(low),
          high=float(high),
          steps_per_s=float(np.mean([r["steps_per_s"] for r in runs])),
        )
      )
  return rows


def write_table(out: str, rows: list[dict], args: argparse.Namespace) -> str:
  lines = [
    f"Final return (sampled actions, {args.eval_episodes} episodes, last evaluation) "
    f"at {args.steps:,} agent steps; mean over seeds [95% bootstrap CI].",
    "",
    "| game | learner | seeds | final return | steps/s |",
    "| --- | --- | --- | --- | --- |",
  ]
  for r in rows:
    lines.append(
      f"| {r['game']} | {r['learner']} | {r['seeds']} | {r['final']:.2f} "
      f"[{r['low']:.2f}, {r['high']:.2f}] | {r['steps_per_s']:,.0f} |"
    )
  text = "\n".join(lines) + "\n"
  with open(os.path.join(out, "results.md"), "w") as f:
    f.write(text)
  return text


def plot(out: str, results: dict) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  games = sorted({k.split("|")[0] for k in results})
  fig, axes = plt.subplots(1, len(games), figsize=(5 * len(games), 3.6), squeeze=False)
  for ax, game in zip(axes[0], games):
    for learner in ("galax", "rejax"):
      runs = [v["curve"] for k, v in sorted(results.items()) if k.startswith(f"{game}|{learner}|")]
      if not runs:
        continue
      n = min(len(c) for c in runs)
      x = np.array([p[0] for p in runs[0][:n]])
      mean, low, high = bootstrap_ci(np.array([[p[1] for p in c[:n]] for c in runs]))
      ax.plot(x, mean, label=f"{learner} ({len(runs)} seeds)")
      ax.fill_between(x, low, high, alpha=0.25)
    ax.set_title(game)
    ax.set_xlabel("agent steps")
    ax.set_ylabel("evaluation return")
    ax.legend()
  fig.tight_layout()
  fig.savefig(os.path.join(out, "curves.png"), dpi=110)


def main(argv: list[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--games", default="Breakout-MinAtar,SpaceInvaders-MinAtar")
  parser.add_argument("--seeds", type=int, default=5)
  parser.add_argument("--steps", type=int, default=2_000_000)
  parser.add_argument("--evals", type=int, default=10)
  parser.add_argument("--eval_episodes", type=int, default=128)
  parser.add_argument("--galax_config", default="minatar_ppo")
  parser.add_argument(
    "--galax_set",
    action="append",
    default=[],
    help="field=value override of the galax config (repeatable)",
  )
  parser.add_argument("--learners", default="galax,rejax")
  parser.add_argument("--out", default="docs/results/peer_learning")
  args = parser.parse_args(argv)
  overrides = {}
  for item in args.galax_set:
    key, _, value = item.partition("=")
    overrides[key] = json.loads(value) if value[:1] in '-0123456789[{tf"' else value
  try:
    import rejax  # noqa: F401
  except ImportError:
    if "rejax" in args.learners:
      sys.exit("error: the peer needs rejax: pip install rejax (or --learners=galax)")
  os.makedirs(args.out, exist_ok=True)
  path = os.path.join(args.out, "results.json")
  results = json.load(open(path)) if os.path.exists(path) else {}
  for game in args.games.split(","):
    for seed in range(args.seeds):
      for learner in args.learners.split(","):
        key = f"{game}|{learner}|{seed}"
        if key in results:
          continue
        if learner == "galax":
          run = galax_run(
            game, seed, args.steps, args.evals, args.eval_episodes, args.galax_config, overrides
          )
        else:
          run = peer_run(game, seed, args.steps, args.evals, args.eval_episodes)
        results[key] = run
        print(f"{key}: final {run['final']:.2f}, {run['steps_per_s']:,.0f} steps/s", flush=True)
        with open(path, "w") as f:
          json.dump(results, f, indent=1)
  print(write_table(args.out, summary_rows(results), args))
  plot(args.out, results)


if __name__ == "__main__":
  main(sys.argv[1:])
