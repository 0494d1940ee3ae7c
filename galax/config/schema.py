"""The run's config: its shared fields, each with its default and meaning.

Each section is a frozen dataclass beside the code that reads it: `env`
(galax/envs/backend.py), `gossip` (galax/parallel/combine.py), `network`
(galax/core/networks.py), `loss` (galax/core/losses.py), `optimizer`
(galax/core/optimizers.py), and each algorithm's own sections in its module
(`AlgorithmSpec.sections`: `stragglers` in a2c.py, `ppo`, `hts`, `a3c`, `impala`), which
`galax.config.typed.config_type` adds after `optimizer`. The fields read above this folder
(the loop's, the evaluation's `eval`) are declared here. A field's trailing comment, or
the comment block above it, is its meaning (`--help_config`).
"""

from __future__ import annotations

import dataclasses

from galax.core.losses import LossSettings
from galax.core.networks import NetworkSettings
from galax.core.optimizers import OptimizerSettings
from galax.envs.backend import EnvSection
from galax.parallel.combine import GossipSection

SECTIONS_AFTER = "optimizer"  # config.json lists the algorithms' sections after this field


@dataclasses.dataclass(frozen=True, kw_only=True)
class EvalSection:
  """Periodic evaluation on separate envs (see galax/evaluate/evaluator.py): full games (no
  episodic life), raw rewards, up to `noop_max` no-op starts (Atari). Rows go to eval.csv."""

  every_steps: int = 0  # env steps between evaluations (and one at the end); 0 = off
  episodes: int = 10  # episodes per evaluated policy (HTS, GALA: 10)
  greedy: bool = True  # argmax actions (GALA Table 1); False samples from the policy
  learners: str = "first"  # first (learner 0) | all (each learner) | average (mean params)
  num_envs: int = 0  # envs per evaluated policy; 0 = one env per episode
  noop_max: int = 30  # Atari: up to this many no-ops at the start of an eval episode
  max_episode_steps: int = 0  # eval time limit in agent steps; 0 = as config.env


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
  """Every shared field of a run's config (the algorithms' sections: `config_type`)."""

  algorithm: str = "a2c"  # a name in galax.algorithms.specs(): a2c ppo hts_a2c hts_ppo a3c impala
  seed: int = 0  # seeds params, env seeds (seed + global env index) and action sampling keys
  total_env_steps: int = 1_000_000  # agent steps of all learners together (x4 for Atari frames)
  env: EnvSection = EnvSection()
  # The learner axis: num_learners learners x envs_per_learner envs each.
  num_learners: int = 1
  envs_per_learner: int = 16  # envs each learner steps per update (its batch: t_max x these)
  num_devices: int = 0  # devices carrying the learners; 0 = as many as divide num_learners
  combine: str = "independent"  # independent | allreduce | gossip (galax/parallel/combine.py)
  gossip: GossipSection = GossipSection()
  # Per update: the [n, n] cosine similarity of the learners' gradients (GALA Fig. 2b; A2C
  # only); gathers every learner's gradient on every device, so leave it off for speed.
  grad_similarity: bool = False
  # shared: every learner starts from the params of `seed` (GALA, all-reduce);
  # per_learner: learner i starts from seed + i (independent seeds run as learners).
  initial_params: str = "shared"
  t_max: int = 5  # rollout length per update (n of the n-step return)
  gamma: float = 0.99  # discount factor
  returns: str = "nstep"  # nstep (PAAC/A2C) | gae (lambda-returns)
  gae_lambda: float = 0.95  # lambda of returns="gae"
  network: NetworkSettings = NetworkSettings()
  loss: LossSettings = LossSettings()
  optimizer: OptimizerSettings = OptimizerSettings()
  # Running the job.
  updates_per_call: int = 100  # updates per host round trip (metrics, logging)
  # How a device's A2C-family learners run their networks: vmap (one batched program) |
  # unroll (one after another, traced apart) | loop (one after another in an XLA loop) |
  # auto (on CPU for image networks: loop above 8 learners per device, unroll for XLA
  # convolutions, whose grouped form is slow there; vmap elsewhere). Other algorithms vmap.
  learner_map: str = "auto"
  # The platform the run is built for: auto (its devices': cpu | gpu | tpu). The 'auto'
  # choices below read it; a value other than the devices' platform is rejected.
  platform: str = "auto"
  # scan (one XLA loop per call) | host (a Python loop) | auto (host on CPU for XLA
  # convolutions, whose gradients are slow inside XLA:CPU loops; scan elsewhere, and for
  # network.conv_impl="patches")
  update_loop: str = "auto"
  # A2C-family and IMPALA gradients in this many env chunks, PPO minibatch gradients in
  # this many sample chunks, combined (the same gradient up to float rounding): 1 = the
  # whole batch at once; 0 = auto (CPU image networks: chunks of >= 80 samples, as
  # XLA:CPU's conv gradients slow down per sample on larger batches; unrolled, so compile
  # time grows with the chunks).
  grad_chunks: int = 0
  log_every_steps: int = 50_000  # env steps between progress lines / metric rows
  checkpoint_every_steps: int = 0  # env steps between checkpoints; 0 = only at the end
  keep_checkpoints: int = 3  # the newest checkpoints kept in <workdir>/checkpoints
  stats_window: int = 100  # completed episodes in the running mean return
  target_return: float = 0.0  # stop once the running mean reaches it (0 = run all steps)
  tensorboard: bool = True  # also write TensorBoard events to <workdir>/tb
  # also log to Weights & Biases (galax/training/tracking.py; the 'track' extra)
  track: bool = False
  track_project: str = "galax"  # the W&B project
  track_entity: str = ""  # "" = wandb's default entity
  track_mode: str = "online"  # "online", "offline" (upload later: wandb sync) or "disabled"
  # Video of one episode of the evaluated policy at each evaluation (needs eval.every_steps
  # > 0): <workdir>/videos/step<N>.mp4 (.gif without ffmpeg), TensorBoard and W&B; outside
  # the training clock (galax/training/videos.py; CleanRL's name)
  capture_video: bool = False
  distributed: bool = False  # call jax.distributed.initialize() (multi-host pods)
  # Stop after this much training time of each sitting (a --resume starts a new one, with
  # its own limit); 0 = none. A time metric of one sitting, as HTS's.
  time_limit_s: float = 0.0
  learner_stats: bool = False  # also log each learner's running return (mean_return/learner<i>)
  energy: bool = True  # sample GPU power via NVML, report frames per kJ (skipped without a GPU)
  eval: EvalSection = EvalSection()
