"""CleanRL 1.2.0's envpool+JAX PPO script, patched to run on galax's stack.

benchmarks/atari_peer.py's peer (its docstring gives every patch's reason). `peer_source`
reads a script from an installed cleanrl 1.2.0, else from the `cleanrl` wheel (downloaded
into a cache and checked against WHEEL_SHA256); `patch` applies
`SCRIPT_PATCHES[script] + PATCHES`, exact text substitutions that must each match.

  python -m benchmarks.cleanrl_script [--peer_script=NAME]   # the patched script, to read
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import subprocess
import sys
import zipfile

CLEANRL_VERSION = "1.2.0"


WHEEL = f"cleanrl-{CLEANRL_VERSION}-py3-none-any.whl"


WHEEL_SHA256 = "002f6dac6cd0efb5889cd9096a252da1b4bc98a8f52ccb1f47a7215c18b30369"


_LOGGER = '''
def _peer_log(wall, global_step, avg_return, stats, num_steps):
    """Added by galax's benchmarks/atari_peer.py: rows per update and per finished game."""
    import csv
    global_step = int(global_step)
    rows = {"peer_updates.csv": [(round(wall, 3), global_step, float(avg_return),
                                  int(global_step / wall))]}
    lengths = np.asarray(jax.device_get(stats.episode_lengths))
    returns = np.asarray(jax.device_get(stats.returned_episode_returns))
    game_lengths = np.asarray(jax.device_get(stats.returned_episode_lengths))
    ended = np.flatnonzero(lengths < num_steps)
    rows["peer_episodes.csv"] = [(round(wall, 3), global_step, float(returns[i]),
                                  int(game_lengths[i])) for i in ended]
    for name, new in rows.items():
        with open(name, "a", newline="") as f:
            csv.writer(f).writerows(new)


if __name__ == "__main__":'''


_READ_ONLY = (
  "envpool 1.x defines num_envs, single_*_space and is_vector_env itself, as "
  "read-only properties (setting them raises)"
)


# (old, new, why): applied in order, every occurrence of `old`; a missing `old` is an error.
# Per script first (the two variants set the env up differently), then PATCHES.
SCRIPT_PATCHES: dict[str, list[tuple[str, str, str]]] = {
  "ppo_atari_envpool_xla_jax_scan": [
    (
      "        envs.num_envs = num_envs\n        envs.single_action_space = envs.action_space\n"
      "        envs.single_observation_space = envs.observation_space\n"
      "        envs.is_vector_env = True\n",
      "",
      _READ_ONLY,
    ),
    ("jax.tree_map(", "jax.tree.map(", "jax.tree_map was removed in jax 0.6"),
  ],
  "ppo_atari_envpool_xla_jax": [  # its updates unrolled in one jit, no lax.scan
    (
      "    envs.num_envs = args.num_envs\n    envs.single_action_space = envs.action_space\n"
      "    envs.single_observation_space = envs.observation_space\n"
      "    envs.is_vector_env = True\n",
      "",
      _READ_ONLY,
    ),
  ],
}


PATCHES: list[tuple[str, str, str]] = [
  (
    "from distutils.util import strtobool\n",
    "def strtobool(v):\n    return {'y': 1, 'yes': 1, 't': 1, 'true': 1, 'on': 1, '1': 1}"
    ".get(v.lower(), 0)\n",
    "distutils is gone from Python 3.12 (galax supports >=3.11)",
  ),
  (
    "import gym\n",
    "import gymnasium as gym\n",
    "envpool 1.x builds gymnasium spaces; gym is not installed",
  ),
  (
    "from torch.utils.tensorboard import SummaryWriter",
    "from tensorboardX import SummaryWriter",
    "torch is not a galax dependency; tensorboardX has the same add_scalar/add_text/close",
  ),
  (
    "handle, (next_obs, reward, next_done, info) = step_env(handle, action)",
    "handle, (next_obs, reward, terminated, truncated, info) = step_env(handle, action)\n"
    "        next_done = jnp.logical_or(terminated, truncated)",
    "envpool 1.x (gymnasium API) steps to 5 values; done = terminated or truncated, as 0.6's",
  ),
  (
    'info["TimeLimit.truncated"]',
    "truncated",
    "envpool 1.x reports time-limit truncation as the 4th step value, not in info",
  ),
  (
    "    critic_params: flax.core.FrozenDict\n",
    "    critic_params: flax.core.FrozenDict\n\n    def __contains__(self, key):\n"
    "        return False\n",
    "flax>=0.8 TrainState.create/apply_gradients test `'_overwrite_with_gradient' in params`",
  ),
  (
    "next_obs = envs.reset()",
    "next_obs, _ = envs.reset()",
    "gymnasium-API reset returns (obs, info)",
  ),
  (
    "    args = parser.parse_args()\n",
    '    parser.add_argument("--time-limit-s", type=float, default=0.0)\n'
    "    args = parser.parse_args()\n",
    "instrumentation: a wall-clock budget flag (0 = none)",
  ),
  ('\nif __name__ == "__main__":', _LOGGER, "instrumentation: the CSV logger the loop calls"),
  (
    '        print("SPS:", int(global_step / (time.time() - start_time)))\n',
    '        print("SPS:", int(global_step / (time.time() - start_time)))\n'
    "        _peer_log(time.time() - start_time, global_step, avg_episodic_return,"
    " episode_stats, args.num_steps)\n"
    "        if args.time_limit_s and time.time() - start_time >= args.time_limit_s:\n"
    "            break\n",
    "instrumentation: log each update, stop past the budget",
  ),
]


def peer_source(name: str, cache: str) -> str:
  """The unpatched script: from an installed cleanrl 1.2.0, else from its wheel (downloaded)."""
  script = f"cleanrl/{name}.py"
  try:
    if importlib.metadata.version("cleanrl") == CLEANRL_VERSION:
      path = importlib.metadata.distribution("cleanrl").locate_file(script)
      return open(str(path)).read()
  except importlib.metadata.PackageNotFoundError:
    pass
  wheel = os.path.join(cache, WHEEL)
  if not os.path.exists(wheel):
    os.makedirs(cache, exist_ok=True)
    subprocess.run(
      [
        sys.executable,
        "-m",
        "pip",
        "download",
        f"cleanrl=={CLEANRL_VERSION}",
        "--no-deps",
        "--ignore-requires-python",
        "-d",
        cache,
      ],
      check=True,
    )
  digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
  if digest != WHEEL_SHA256:
    sys.exit(f"error: {wheel} has sha256 {digest}, expected {WHEEL_SHA256}")
  with zipfile.ZipFile(wheel) as z:
    return z.read(script).decode()


def patch(name: str, source: str) -> str:
  for old, new, why in SCRIPT_PATCHES[name] + PATCHES:
    if old not in source:
      sys.exit(f"error: patch not applicable ({why}): {old.strip().splitlines()[0]!r} not found")
    source = source.replace(old, new)
  return source


def main(argv: list[str]) -> None:
  """Prints the patched script, as atari_peer.py runs it."""
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument(
    "--peer_script", choices=sorted(SCRIPT_PATCHES), default="ppo_atari_envpool_xla_jax_scan"
  )
  parser.add_argument("--peer_cache", default=os.path.expanduser("~/.cache/galax/cleanrl"))
  args = parser.parse_args(argv)
  print(patch(args.peer_script, peer_source(args.peer_script, args.peer_cache)), end="")


if __name__ == "__main__":
  main(sys.argv[1:])
