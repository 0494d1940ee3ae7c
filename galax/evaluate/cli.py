r"""Evaluate a trained agent from its run directory, and watch it play.

  python -m galax.evaluate --workdir=runs/cartpole_a2c_seed0
  python -m galax.evaluate --workdir=runs/X --step=400000 --episodes=30 --greedy=false \
      --video=/tmp/agent.mp4 --video_episodes=2 --learner=average

It reads the run's config.json and its newest checkpoint that restores (or `--step`),
plays `--episodes` fresh full games with the protocol of galax.evaluate.evaluator (raw rewards, no
episodic life, up to eval.noop_max no-op starts on Atari; envs seeded apart from the
training and training-time evaluation envs by `--seed`), prints the mean return, its
standard error and every episode's return, and writes `eval_step<N>.json` beside the run
(another protocol than 30 greedy episodes of the first learner at seed 0 writes a name that
says it: `eval_step<N>_3ep_sampled_learner-first_seed0.json`).
`--video` (.mp4 or .gif) renders `--video_episodes` games (galax/envs/video.py).

From Python: `policy_fn, config = galax.load_policy(workdir)`; `policy_fn(obs)` returns
greedy actions for a batch of observations, `policy_fn(obs, key)` samples them.

Bad input (no run directory, no checkpoint, a damaged one asked for by --step, a video
path in a missing or unwritable directory, an unknown extension) is one `error:` line
and exit status 2.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from typing import TYPE_CHECKING, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from absl import flags, logging

import galax.config as config_lib
from galax.config import Config, cli
from galax.core.types import Params, ParamsBlock
from galax.envs import video
from galax.envs.backend import EnvSettings
from galax.evaluate.evaluator import (
  EvalSettings,
  Evaluator,
  eval_env,
  eval_settings,
  select_params,
)
from galax.runtime import provenance
from galax.runtime import workdir as workdirs
from galax.runtime.checkpoint import quiet_orbax

if TYPE_CHECKING:
  from galax.envs.base import EnvSpec
  from galax.evaluate.evaluator import EvalSettings

PolicyFn = Callable[..., jax.Array]  # (obs [B, ...], key=None) -> actions [B]


def read_config(workdir: str) -> Config:
  """The run's config, from its config.json (an older run's: its fields, the rest at their
  defaults)."""
  saved = workdirs.read_config_json(workdir)  # a local path or a gs:// URL
  if saved is None:
    raise ValueError(f"--workdir {workdir!r} has no config.json: not a galax run directory.")
  return config_lib.from_data(saved)


def checkpoint_steps(workdir: str, kind: str = "checkpoints") -> list[int]:
  """The saved steps (complete checkpoint directories) in `<workdir>/<kind>` ("checkpoints",
  or "best": the best evaluation's), newest first."""
  directory = workdirs.path(workdirs.join(workdir, kind))
  items = list(directory.iterdir()) if directory.is_dir() else []
  return sorted(
    (
      int(item.name)
      for item in items
      if item.name.isdigit() and (item / workdirs.COMMIT_MARKER).exists()
    ),
    reverse=True,
  )


def _restore(workdir: str, step: int, kind: str = "checkpoints") -> ParamsBlock:
  # Imported here: orbax took 0.23 s of every command's start-up, --help's too (issue 73).
  import orbax.checkpoint as ocp

  path = workdirs.join(workdirs.absolute(workdir), kind, str(step), "state")
  checkpointer = ocp.PyTreeCheckpointer()
  with quiet_orbax():  # orbax notes a metadata file that galax never writes
    metadata = checkpointer.metadata(path)
  tree = getattr(metadata, "item_metadata", metadata)
  tree = getattr(tree, "tree", tree)
  restore_args = jax.tree.map(lambda _: ocp.RestoreArgs(restore_type=np.ndarray), tree)
  state = checkpointer.restore(path, args=ocp.args.PyTreeRestore(restore_args=restore_args))
  return state["params"]


def restore_params(
  workdir: str,
  step: int | None = None,
  warn: Callable[[str], None] = print,
  kind: str = "checkpoints",
) -> tuple[ParamsBlock, int]:
  """(every learner's params [n, ...], step) of `step` or of the newest checkpoint that
  restores (damaged ones are skipped with a warning); `kind="best"`: the state of the
  best evaluation (`checkpoint.BestCheckpoint`)."""
  steps = checkpoint_steps(workdir, kind)
  if not steps:
    why = " (a run keeps one when it evaluates: config.eval.every_steps)" if kind == "best" else ""
    raise ValueError(
      f"--workdir {workdir!r} holds no complete checkpoint "
      f"(looked in {workdirs.join(workdir, kind)}){why}."
    )
  if step is not None:
    if step not in steps:
      raise ValueError(f"--step {step}: no complete checkpoint at that step; saved: {steps}.")
    steps = [step]
  for candidate in steps:
    try:
      return _restore(workdir, candidate, kind), candidate
    except Exception as e:
      reason = " ".join(str(e).split())[:160] or type(e).__name__
      if step is not None:
        raise ValueError(f"checkpoint {candidate} in {workdir!r} is damaged ({reason}).") from None
      warn(f"warning: checkpoint {candidate} does not restore ({reason}); trying an older one")
  raise ValueError(f"no checkpoint in {workdir!r} restores (tried {steps}).")


def pick_learner(params: ParamsBlock, learner: str) -> Params:
  """One parameter set: learner K (an int as text), or 'first' / 'average' as
  `config.eval.learners` means them (`evaluation.select_params`)."""
  n = jax.tree.leaves(params)[0].shape[0]
  if learner in ("first", "average"):
    return jax.tree.map(lambda x: x[0], select_params(params, learner, n)[0])
  if not learner.isdigit() or int(learner) >= n:
    raise ValueError(f"--learner={learner!r}: use 'first', 'average' or an index 0..{n - 1}.")
  return jax.tree.map(lambda x: x[int(learner)], params)


def _env_spec(env_settings: EnvSettings, seed: int) -> EnvSpec:
  env = eval_env(env_settings, seed, 1)
  try:
    return env.spec
  finally:
    env.close()


def policy_from_params(settings: EvalSettings, params: Params) -> PolicyFn:
  """policy_fn(obs) -> greedy actions [B] for observations [B, *obs_shape];
  policy_fn(obs, key) -> actions sampled from the policy of `params` (no learner axis), a
  network of the run's `settings`."""
  params = jax.tree.map(jnp.asarray, params)
  env_spec = _env_spec(settings.env, settings.seed)
  apply = settings.network.build(env_spec).apply

  @jax.jit
  def greedy(obs):
    return jnp.argmax(apply(params, obs)[0], axis=-1)

  @jax.jit
  def sampled(obs, key):
    return jax.random.categorical(key, apply(params, obs)[0])

  def policy_fn(obs, key=None):
    return greedy(obs) if key is None else sampled(obs, key)

  return policy_fn


def load_policy(
  workdir: str, step: int | None = None, learner: str = "first"
) -> tuple[PolicyFn, Config]:
  """(policy_fn, config) of a run's checkpoint (newest that restores, or `step`); see
  `policy_from_params`. `learner`: 'first', 'average' or an index (multi-learner runs).
  The config is the run's, typed (`galax.config.Config`).
  """
  config = read_config(workdir)
  block, _ = restore_params(workdir, step)
  settings = eval_settings(config)
  policy_fn = policy_from_params(settings, pick_learner(block, str(learner)))
  return policy_fn, config


def evaluate(
  settings: EvalSettings, params: Params, episodes: int, greedy: bool, seed: int
) -> dict:
  """Plays `episodes` fresh games with `params` (one policy) under a run's eval protocol
  (its `EvalSettings`); returns the eval record."""
  settings = dataclasses.replace(settings, episodes=episodes, greedy=greedy, num_envs=0)
  evaluator = Evaluator(settings, num_policies=1, seed_offset=1 + seed)
  try:
    out = evaluator.evaluate(jax.tree.map(lambda x: np.asarray(x)[None], params))
  finally:
    evaluator.close()
  returns = out.returns[0][out.completed[0]]
  lengths = out.lengths[0][out.completed[0]]
  stderr = float(np.std(returns, ddof=1) / np.sqrt(len(returns))) if len(returns) > 1 else 0.0
  return dict(
    env_id=settings.env.id,
    # Lives as in training: since ee857f6 (before it, evaluation played without episodic
    # life, and Breakout's ball was not served again after a lost life).
    episodic_life=settings.env.episodic_life,
    git=provenance.git_info(),
    episodes=int(len(returns)),
    greedy=greedy,
    seed=seed,
    mean_return=float(np.mean(returns)),
    stderr=stderr,
    returns=[float(r) for r in returns],
    lengths=[int(n) for n in lengths],
  )


def _define_flags() -> None:
  flags.DEFINE_string("workdir", None, "The run directory (config.json, checkpoints/).")
  flags.DEFINE_string(
    "step",
    None,
    "Checkpoint step (default: the newest that restores), or "
    "'best': the state of the best evaluation during training (<workdir>/best).",
  )
  flags.DEFINE_integer("episodes", 30, "Evaluation episodes.")
  flags.DEFINE_bool("greedy", True, "Argmax actions (false: sampled from the policy).")
  flags.DEFINE_string("learner", "first", "Multi-learner runs: first, average or an index.")
  flags.DEFINE_integer("seed", 0, "Seeds the evaluation envs and sampling (apart from training).")
  flags.DEFINE_string("video", None, "Write a video of the agent here (.mp4 or .gif).")
  flags.DEFINE_integer("video_episodes", 1, "Episodes in the video.")


def main(argv: Sequence[str]) -> None:
  """The command, its flags parsed (`run`)."""
  logging.set_verbosity(logging.ERROR)  # orbax's metadata notes on checkpoints it restores
  FLAGS = flags.FLAGS
  if len(argv) > 1:
    raise ValueError(
      f"unexpected argument(s) {' '.join(argv[1:])!r}: options take the form --name=value."
    )
  if FLAGS.workdir is None:
    raise ValueError("--workdir is required: the run directory to evaluate.")

  if FLAGS.episodes < 1 or FLAGS.video_episodes < 1:
    raise ValueError("--episodes and --video_episodes must be >= 1.")
  if FLAGS.video:
    video.check_video_path(FLAGS.video)
  settings = eval_settings(read_config(FLAGS.workdir))
  best = FLAGS.step == "best"
  if FLAGS.step is not None and not best and not FLAGS.step.isdigit():
    raise ValueError(f"--step={FLAGS.step}: give a step number or 'best'.")
  block, restored = restore_params(
    FLAGS.workdir,
    None if best or FLAGS.step is None else int(FLAGS.step),
    kind="best" if best else "checkpoints",
  )
  params = pick_learner(block, FLAGS.learner)
  record = dict(
    step=restored,
    learner=FLAGS.learner,
    **evaluate(settings, params, FLAGS.episodes, FLAGS.greedy, FLAGS.seed),
  )
  print(
    f"{record['env_id']} step {record['step']}: mean return {record['mean_return']:.2f} "
    f"+- {record['stderr']:.2f} (standard error) over {record['episodes']} episodes "
    f"({'greedy' if FLAGS.greedy else 'sampled'} actions, learner {FLAGS.learner})"
  )
  print("returns: " + " ".join(f"{r:g}" for r in record["returns"]))
  name = eval_file_name(record["step"], FLAGS.episodes, FLAGS.greedy, FLAGS.learner, FLAGS.seed)
  path = workdirs.join(FLAGS.workdir, name)
  workdirs.path(path).write_text(json.dumps(record, indent=1))
  print(f"wrote {path}")
  if FLAGS.video:
    policy_fn = policy_from_params(settings, params)  # the evaluated checkpoint, restored once
    act = (lambda obs, key: policy_fn(obs)) if FLAGS.greedy else policy_fn
    with warnings.catch_warnings():
      # gymnasium, on the float64 bounds of envpool's spaces (galax/envs/pool.py holds it
      # back too); JAX, on the fork of ffmpeg's subprocess, which only execs.
      warnings.filterwarnings("ignore", ".*precision lowered by casting", UserWarning)
      warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
      frames = video.record(settings.env, act, FLAGS.video_episodes, seed=10_000 + FLAGS.seed)
      video.write_video(FLAGS.video, frames)
    print(f"wrote {FLAGS.video}: {len(frames)} frames of {frames[0].shape[1]}x{frames[0].shape[0]}")


def eval_file_name(step: int, episodes: int, greedy: bool, learner: str, seed: int) -> str:
  """`eval_step<N>.json` for the default protocol (30 greedy episodes of the first learner,
  seed 0); another protocol's name says it, so one evaluation never overwrites another's."""
  if (episodes, greedy, learner, seed) == (30, True, "first", 0):
    return f"eval_step{step}.json"
  actions = "greedy" if greedy else "sampled"
  return f"eval_step{step}_{episodes}ep_{actions}_learner-{learner}_seed{seed}.json"


def run() -> None:
  _define_flags()
  cli.answer_help(sys.argv, sys.modules[__name__])
  argv = cli.parse_flags(sys.argv)
  try:
    cli.guarded(main)(argv)
  except SystemExit:
    raise
  except Exception as e:  # OSError
    cli.fail(" ".join(str(e).split())[:300])


if __name__ == "__main__":
  run()
