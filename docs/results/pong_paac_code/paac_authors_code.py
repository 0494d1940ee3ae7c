"""Train Pong with the PAAC authors' own code, to set galax's pong_paac curve beside theirs.

  git clone https://github.com/Alfredvc/paac && git -C paac checkout a8bb993
  python -m venv /tmp/paac-tf && /tmp/paac-tf/bin/pip install tensorflow-cpu ale-py pillow "numpy<2"
  /tmp/paac-tf/bin/python docs/results/pong_paac_code/paac_authors_code.py --code=paac --seed=0 \\
      --steps=6000000 --workdir=runs/paac_code_seed0        # again to resume

Their code (Clemente et al.'s repository at a8bb993, TensorFlow 1 and ALE's 2017 Python
interface) runs unchanged, with its defaults (train.py: 32 emulators, t_max 5, lr 0.0224
annealed over 80M steps, entropy 0.02, clip 3.0, NIPS network). Three shims stand in for
libraries that no longer install on Python 3.11, each keeping their semantics:
- `tensorflow` is TF2's `tensorflow.compat.v1` with v2 behaviour off (graph, sessions,
  placeholders, tf.train.RMSPropOptimizer);
- `ale_python_interface.ALEInterface` wraps ale-py's: byte-string keys and paths, and
  getScreenDims in the old (width, height) order;
- `scipy.misc.imresize(x, size, interp='nearest')` is what it was for a uint8 image:
  PIL's nearest-neighbour resize.
NumPy stays below 2: their sampling calls int() on a 1-element array (paac.py:44).
Their random_seed (default 3, train.py) becomes 3 + --seed; Python's, NumPy's and TF's
generators are seeded with --seed. The run writes, as galax's run.py does, metrics.csv
(env_steps, mean_return over the last 100 games, train_time_s, steps_per_second),
config.json and result.json, so benchmarks/atari_curves.py draws both side by side.
`--time_network=S` instead times their graph's acting and update calls (S seconds each).
Their checkpoints (every --save_every steps here; theirs: 1M) and SIGTERM handler
(which saves) make a run resumable: rerunning resumes from their last checkpoint and
drops the games recorded after it.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
import types
from typing import Sequence

FIELDS = ("env_steps", "mean_return", "episodes", "train_time_s", "steps_per_second")
AUTHORS_COMMIT = "a8bb993"


class EpisodeLog:
  """Finished games (agent step, raw score) and metrics.csv rows, kept across sittings.

  On resume, games and rows after the restored checkpoint's step are dropped: their
  code replays those steps."""

  def __init__(self, workdir: str, resume_step: int, log_every: int):
    self.episodes_path = os.path.join(workdir, "episodes.csv")
    self.metrics_path = os.path.join(workdir, "metrics.csv")
    self.log_every = log_every
    self.games = [g for g in _read_rows(self.episodes_path) if g["env_steps"] <= resume_step]
    self.rows = [r for r in _read_rows(self.metrics_path) if r["env_steps"] <= resume_step]
    self.time_offset = self.rows[-1]["train_time_s"] if self.rows else 0.0
    self.last_step = self.rows[-1]["env_steps"] if self.rows else resume_step
    self.start = self.mark = time.time()
    # steps/s counts from the restored step: their code replays the steps after it
    self.resume_step = self.mark_step = resume_step
    _write_rows(self.episodes_path, ("env_steps", "score"), self.games)
    _write_rows(self.metrics_path, FIELDS, self.rows)

  def sitting_rate(self, step: int) -> float:
    """Agent steps per second of this sitting, from the restored step to `step`, their
    start-up included (result.json's; a row's steps/s is its own interval's)."""
    return (step - self.resume_step) / max(time.time() - self.start, 1e-9)

  def game(self, step: int, score: float) -> None:
    self.games.append(dict(env_steps=step, score=score))
    _append_row(self.episodes_path, ("env_steps", "score"), self.games[-1])

  def update(self, step: int, last: bool = False) -> None:
    """Called once per update: writes a metrics row every log_every agent steps, and at
    the run's `last` step."""
    due = step // self.log_every != self.last_step // self.log_every
    if not self.games or step == self.last_step or not (due or last):
      return
    now = time.time()
    recent = [g["score"] for g in self.games[-100:]]
    row = dict(
      env_steps=step,
      mean_return=sum(recent) / len(recent),
      episodes=len(self.games),
      train_time_s=self.time_offset + now - self.start,
      steps_per_second=(step - self.mark_step) / max(now - self.mark, 1e-9),
    )
    self.rows.append(row)
    _append_row(self.metrics_path, FIELDS, row)
    self.last_step = self.mark_step = step
    self.mark = now


def _read_rows(path: str) -> list[dict[str, float]]:
  if not os.path.exists(path):
    return []
  with open(path) as f:
    return [{k: _number(v) for k, v in r.items()} for r in csv.DictReader(f)]


def _number(text: str) -> float | int:
  value = float(text)
  return int(value) if value.is_integer() else value


def _write_rows(path: str, fields: Sequence[str], rows: Sequence[dict[str, float]]) -> None:
  with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(fields))
    writer.writeheader()
    writer.writerows(rows)


def _append_row(path: str, fields: Sequence[str], row: dict[str, float]) -> None:
  with open(path, "a", newline="") as f:
    csv.DictWriter(f, fieldnames=list(fields)).writerow(row)


def checkpoint_step(checkpoint_dir: str) -> int:
  """The step their code resumes from: the suffix of the latest checkpoint (networks.py:134)."""
  state = os.path.join(checkpoint_dir, "checkpoint")
  if not os.path.exists(state):
    return 0
  with open(state) as f:
    first = f.readline()  # model_checkpoint_path: ".../-123456"
  return int(first.strip().strip('"').rsplit("-", 1)[1])


def install_shims() -> None:
  """Modules their 2017 code imports, as they behaved then (see the module docstring)."""
  import numpy as np
  import tensorflow.compat.v1 as tf1
  from PIL import Image

  tf1.disable_v2_behavior()
  sys.modules["tensorflow"] = tf1

  import ale_py

  class ALEInterface:
    def __init__(self):
      self._ale = ale_py.ALEInterface()

    def setInt(self, key, value):
      self._ale.setInt(key.decode(), int(value))

    def setFloat(self, key, value):
      self._ale.setFloat(key.decode(), float(value))

    def setBool(self, key, value):
      self._ale.setBool(key.decode(), bool(value))

    def loadROM(self, path):
      self._ale.loadROM(path.decode())

    def getScreenDims(self):
      height, width = self._ale.getScreenDims()
      return width, height

    def getScreenGrayscale(self, out):
      out[...] = self._ale.getScreenGrayscale().reshape(out.shape)

    def getScreenRGB(self, out):
      out[...] = self._ale.getScreenRGB().reshape(out.shape)

    def __getattr__(self, name):  # act, lives, game_over, reset_game, getMinimalActionSet
      return getattr(self._ale, name)

  ale_module = types.ModuleType("ale_python_interface")
  ale_module.ALEInterface = ALEInterface
  sys.modules["ale_python_interface"] = ale_module

  def imresize(image, size, interp):
    assert interp == "nearest" and image.dtype == np.uint8 and image.ndim == 2
    resized = Image.fromarray(image).resize((size[1], size[0]), Image.NEAREST)
    return np.asarray(resized)

  misc = types.ModuleType("scipy.misc")
  misc.imresize = imresize
  sys.modules.setdefault("scipy", types.ModuleType("scipy"))
  sys.modules["scipy.misc"] = misc


def load_their_code(code: str):
  """Their `train` module (and through it the rest of their code), on the shims; and TF."""
  install_shims()
  import tensorflow as tf

  sys.path.insert(0, code)
  import train

  return tf, train


def their_args(train, code: str, *extra: str):
  """Their train.py arguments: their defaults, Pong from their ROM folder, on the CPU."""
  rom_path = os.path.join(code, "atari_roms")
  return train.get_arg_parser().parse_args(
    ["-g=pong", f"--rom_path={rom_path}", "--device=/cpu:0", *extra]
  )


def recording_learner(paac, log: EpisodeLog):
  """Their PAACLearner, its TensorBoard writer wrapped to record games and updates."""

  class Recorder:
    def __init__(self, writer):
      self.writer = writer

    def add_summary(self, summary, step):
      self.writer.add_summary(summary, step)
      values = {v.tag: v.simple_value for v in getattr(summary, "value", [])}
      if "rl/reward" in values:  # paac.py:129-133, one per finished game
        log.game(step, values["rl/reward"])
      else:  # paac.py:172, one per update
        log.update(step)

    def __getattr__(self, name):
      return getattr(self.writer, name)

  class RecordingLearner(paac.PAACLearner):
    def __init__(self, *args, **kwargs):
      super().__init__(*args, **kwargs)
      self.summary_writer = Recorder(self.summary_writer)

  return RecordingLearner


def time_their_network(code: str, seconds: float) -> dict[str, float]:
  """Milliseconds per call of their graph on this machine: acting (policy and value for 32
  states, paac.py:20-23) and one update (their network's loss, then gradients, global-norm
  clip and RMSProp as actor_learner.py:33-70 builds them, run as paac.py:166-170, on 32 x 5
  states), on random frames; compare with galax's split from (pong_paac)
  `python -m benchmarks.suite --algorithms=raw,acting,a2c --num_envs=32 --updates_per_call=20`."""
  import logging

  import numpy as np

  tf, train = load_their_code(code)
  logging.disable(logging.CRITICAL)
  their = their_args(train, code)
  network_creator, _ = train.get_network_and_environment_creator(their)
  net = network_creator()
  optimizer = tf.train.RMSPropOptimizer(0.0224, decay=their.alpha, epsilon=their.e)
  grads, variables = zip(*optimizer.compute_gradients(net.loss))
  clipped, _ = tf.clip_by_global_norm(list(grads), their.clip_norm)
  train_step = optimizer.apply_gradients(list(zip(clipped, variables)))
  session = tf.Session()
  session.run(tf.global_variables_initializer())
  rng = np.random.default_rng(0)
  states = rng.integers(0, 255, (160, 84, 84, 4), dtype=np.uint8)
  feed = {
    net.input_ph: states,
    net.critic_target_ph: rng.normal(size=160).astype(np.float32),
    net.selected_action_ph: np.eye(6, dtype=np.float32)[rng.integers(0, 6, 160)],
    net.adv_actor_ph: rng.normal(size=160).astype(np.float32),
  }
  calls = {
    "act_32_ms": lambda: session.run(
      [net.output_layer_v, net.output_layer_pi], {net.input_ph: states[:32]}
    ),
    "update_160_ms": lambda: session.run(train_step, feed),
  }
  out = {}
  for name, call in calls.items():
    for _ in range(3):
      call()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
      call()
      count += 1
    out[name] = (time.perf_counter() - start) / count * 1e3
  out["network_ms_per_1000_steps"] = (5 * out["act_32_ms"] + out["update_160_ms"]) * 1000 / 160
  return out


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--code", required=True, help="a checkout of Alfredvc/paac at a8bb993")
  parser.add_argument("--workdir", required=True)
  parser.add_argument("--seed", type=int, default=0)
  parser.add_argument("--steps", type=int, default=6_000_000, help="their max_global_steps")
  parser.add_argument("--workers", type=int, default=2, help="their emulator_workers (8)")
  parser.add_argument("--save_every", type=int, default=100_000)
  parser.add_argument("--log_every", type=int, default=104_000)
  parser.add_argument("--time_network", type=float, default=0, help="seconds per figure")
  return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
  args = _args(argv)
  code = os.path.abspath(args.code)
  if not os.path.exists(os.path.join(code, "paac.py")):
    sys.exit(f"error: --code={args.code} is not a checkout of Alfredvc/paac (no paac.py)")
  if args.time_network:
    print(json.dumps(time_their_network(code, args.time_network), indent=1))
    return
  workdir = os.path.abspath(args.workdir)
  os.makedirs(workdir, exist_ok=True)

  import random

  import numpy as np

  tf, train = load_their_code(code)
  random.seed(args.seed)
  np.random.seed(args.seed)
  tf.set_random_seed(args.seed)
  import actor_learner
  import paac

  actor_learner.CHECKPOINT_INTERVAL = args.save_every
  resume_step = checkpoint_step(os.path.join(workdir, "checkpoints"))
  log = EpisodeLog(workdir, resume_step, args.log_every)
  their = their_args(
    train,
    code,
    f"--max_global_steps={args.steps}",
    f"--emulator_workers={args.workers}",
    f"--debugging_folder={workdir}",
  )
  random_seed = 3 + args.seed  # their default: 3 (train.py:52)
  config = dict(vars(their), seed=args.seed, code=f"Alfredvc/paac@{AUTHORS_COMMIT}")
  config["random_seed"] = random_seed
  with open(os.path.join(workdir, "config.json"), "w") as f:
    json.dump(config, f, indent=1)
  network_creator, env_creator = train.get_network_and_environment_creator(their, random_seed)
  learner = recording_learner(paac, log)(network_creator, env_creator, their)
  train.setup_kill_signal_handler(learner)
  print(f"their code at {code}; resuming from step {resume_step}", flush=True)
  learner.train()  # ends with their cleanup(), which saves
  log.update(learner.global_step, last=True)
  last = log.rows[-1] if log.rows else {}
  result = dict(
    last,
    steps_per_second=log.sitting_rate(learner.global_step),
    stopped="budget",
    requested_env_steps=args.steps,
  )
  with open(os.path.join(workdir, "result.json"), "w") as f:
    json.dump(result, f, indent=1)


if __name__ == "__main__":
  main()
