"""The config schema: every field galax reads, with its default and meaning.

The shared fields are declared here; each algorithm declares its own section (`ppo`,
`hts`, `a3c`, `impala`) in its module (`AlgorithmSpec.config_sections`), and
`base_config` adds them from the registry (which imports the algorithms when first asked).

Experiment files in configs/ start from `base_config()` and change fields. The returned
ConfigDict is locked, so a misspelt key (in a file or as `--config.key=value`) is an
error, and ml_collections keeps each field's type. `validate` (galax/config/validate.py,
imported here) checks values.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import ml_collections

# Re-exported: users and configs reach `validate` as galax.config.validate.
from galax.algorithms.registry import config_sections
from galax.config import fields as field_names
from galax.config.validate import validate  # noqa: F401


def _configs_dir() -> str:
  """configs/ of a checkout, or the installed copy (pyproject maps it to galax.configs)."""
  galax_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  checkout = os.path.join(os.path.dirname(galax_dir), "configs")
  if os.path.isdir(checkout):
    return checkout
  spec = importlib.util.find_spec("galax.configs")
  if spec is not None and spec.submodule_search_locations:
    return list(spec.submodule_search_locations)[0]
  return checkout


CONFIGS_DIR = _configs_dir()


def base_config() -> ml_collections.ConfigDict:
  """Every field galax reads, with its default. Locked: a misspelt field is an error."""
  c = ml_collections.ConfigDict()
  c.algorithm = "a2c"  # a name in galax.algorithms.specs(): a2c ppo hts_a2c hts_ppo a3c impala
  c.seed = 0  # seeds params, env seeds (seed + global env index) and action sampling keys
  c.total_env_steps = 1_000_000  # agent steps of all learners together (x4 for Atari frames)
  c.env = _env_section()
  c.update(_learner_fields())
  c.update(_model_fields())
  c.update(_optimizer_fields())
  c.update(_algorithm_sections())
  c.update(_running_fields())
  c.eval = _eval_section()
  c.lock()  # a misspelt field is an error, not a silently ignored new key
  return c


def _fields() -> ml_collections.ConfigDict:
  """A group of top-level fields for `base_config` to merge in as declared (unsorted, so
  config.json lists them in this file's order)."""
  return ml_collections.ConfigDict(sort_keys=False)


def _algorithm_sections() -> dict[str, ml_collections.ConfigDict]:
  """The sections the algorithms own (ppo, hts, a3c, impala, ...): each declared in its
  algorithm's module (`AlgorithmSpec.config_sections`), found through the registry."""
  return config_sections()


def _env_section() -> ml_collections.ConfigDict:
  env = ml_collections.ConfigDict()
  # any envpool id (Pong-v5, Breakout-v5, gfootball/academy_...-v1) or gymnax id
  # (gymnax/CartPole-v1, gymnax/Breakout-MinAtar: docs/environments.md)
  env.id = "CartPole-v1"
  env.episodic_life = False  # Atari: a lost life ends the *training* episode
  env.reward_clip = False  # Atari: clip training rewards to [-1, 1] (stats stay raw)
  env.max_episode_steps = 0  # time limit in agent steps; 0 = the env's default
  env.num_threads = 0  # envpool worker threads per pool; 0 = envpool's choice (envpool only)
  # envpool's async mode: each step acts in the first batch_size of a learner's envs to
  # finish; divides envs_per_learner; 0 = all (sync). A2C, PPO, one learner; not reproducible
  env.batch_size = 0
  # Extra envpool.make options (validated against the env's own), set in a config file:
  # env.options = ml_collections.ConfigDict(dict(noop_max=0)).
  env.options = ml_collections.ConfigDict()
  return env


def _learner_fields() -> ml_collections.ConfigDict:
  c = _fields()
  # The learner axis: num_learners learners x envs_per_learner envs each.
  c.num_learners = 1
  c.envs_per_learner = 16  # envs each learner steps per update (its batch: t_max x these)
  c.num_devices = 0  # devices carrying the learners; 0 = as many as divide num_learners
  c.combine = "independent"  # independent | allreduce | gossip (galax/parallel/combine.py)
  # GALA gossip (combine="gossip"): after each update a learner averages its parameters
  # with its in-peers' (galax/parallel/topology.py).
  c.gossip = ml_collections.ConfigDict()
  c.gossip.topology = "ring"  # ring (k-peer, directed) | exponential | full
  c.gossip.peers = 1  # ring: in-peers per learner (1 = GALA's default, weights 1/2)
  c.gossip.delay = 0  # tau: mix with the in-peers' parameters from tau updates ago
  c.gossip.metrics = False  # per update: consensus distances + Prop. 1 bound (all-reduces)
  # Per update: the [n, n] cosine similarity of the learners' gradients (GALA Fig. 2b; A2C
  # only); gathers every learner's gradient on every device, so leave it off for speed.
  c.grad_similarity = False
  # shared: every learner starts from the params of `seed` (GALA, all-reduce);
  # per_learner: learner i starts from seed + i (independent seeds run as learners).
  c.initial_params = "shared"
  return c


def _model_fields() -> ml_collections.ConfigDict:
  """Returns, network and loss."""
  c = _fields()
  c.t_max = 5  # rollout length per update (n of the n-step return)
  c.gamma = 0.99  # discount factor
  c.returns = "nstep"  # nstep (PAAC/A2C) | gae (lambda-returns)
  c.gae_lambda = 0.95  # lambda of returns="gae"

  c.network = ml_collections.ConfigDict()
  c.network.name = "mlp"  # mlp | archnips | archnature | gala | ba3c | impala_shallow
  c.network.fc_width = 0  # 0 = the architecture's own (BA3C small model: 128)
  c.network.mlp_hidden = (64, 64)  # mlp: the hidden layer widths
  c.network.activation = ""  # relu | tanh | "" = the network's own (mlp tanh, convs relu)
  # orthogonal (heads scaled 0.01 / 1) | lecun | paac (U(+-1/sqrt(fan_in)) for weights and
  # biases of every layer, heads included: the PAAC authors' "torch" init)
  c.network.init = "orthogonal"
  c.network.shared_torso = True  # False: the value head has a torso of its own
  # xla | patches (convolutions as patches @ kernel: same parameters, fast inside XLA:CPU
  # loops, where XLA's convolution gradients are slow; see galax/core/networks.py) | auto
  # (patches where a CPU runs the learners in a loop, see learner_map, or a learner takes
  # 16 or more gradient steps per update, as PPO's epochs x minibatches; xla elsewhere)
  c.network.conv_impl = "auto"

  c.loss = ml_collections.ConfigDict()
  c.loss.entropy_coef = 0.01  # weight of the entropy bonus
  c.loss.value_coef = 0.5  # times mean (G - V)^2
  c.loss.sum_over_time = False  # PAAC code: loss summed over the t_max steps
  return c


def _optimizer_fields() -> ml_collections.ConfigDict:
  """The optimizer and BA3C's straggler mitigation."""
  c = _fields()
  c.optimizer = ml_collections.ConfigDict()
  c.optimizer.name = "rmsprop"  # rmsprop | adam | sgd
  c.optimizer.learning_rate = 7e-4  # before lr_scaling and anneal
  c.optimizer.lr_scaling = "none"  # none | linear_envs (PAAC) | sqrt_learners (GALA)
  c.optimizer.anneal = "none"  # none | linear (to 0 at the end of the run)
  # linear: the agent steps over which the lr reaches 0 (then stays 0), independent of the
  # run's length (PAAC's code: 80M); None = total_env_steps as the run started: a resume to
  # more steps keeps that end (sets it here, recorded); --resume naming it moves it.
  c.optimizer.anneal_steps = ml_collections.config_dict.placeholder(int)
  c.optimizer.eps = 1e-5  # RMSProp / Adam epsilon
  c.optimizer.rmsprop_decay = 0.99  # RMSProp: decay of the mean square
  c.optimizer.rmsprop_convention = "torch"  # torch (eps outside sqrt) | tf (eps inside)
  c.optimizer.rmsprop_initial_scale = 0.0  # TF1 starts the mean square at 1.0
  c.optimizer.adam_b1 = 0.9  # Adam: decay of the first moment
  c.optimizer.adam_b2 = 0.999  # Adam: decay of the second moment
  c.optimizer.max_grad_norm = 0.5  # global-norm clipping; 0 = off
  # Per-tensor clipping by average norm ||g||_2 / size (TF clip_by_average_norm; BA3C 0.1);
  # applied before global-norm clipping; 0 = off.
  c.optimizer.clip_average_norm = 0.0
  # ZeRO-1 (combine=allreduce): each learner keeps 1/n of the optimizer state; gradients are
  # reduce-scattered, updated shard-wise, parameters all-gathered (BA3C's parameter servers).
  c.optimizer.sharded_state = False

  # Straggler mitigation (combine=allreduce, a2c): each update keeps the gradients of the
  # first num_kept of the n learners to finish and drops the rest (SyncReplicas with
  # ngrads < workers). Step times are simulated: 1 + scale * X, X drawn per learner and update.
  c.stragglers = ml_collections.ConfigDict()
  c.stragglers.num_kept = 0  # m of n gradients aggregated; 0 = all (off)
  c.stragglers.step_time = "exponential"  # exponential | lognormal | uniform (law of X)
  c.stragglers.scale = 1.0  # spread of the step times around 1
  return c


def _running_fields() -> ml_collections.ConfigDict:
  """Running the job: loops, logging, checkpoints, stopping."""
  c = _fields()
  # Running the job.
  c.updates_per_call = 100  # updates per host round trip (metrics, logging)
  # How a device's A2C-family learners run their networks: vmap (one batched program) |
  # unroll (one after another, traced apart) | loop (one after another in an XLA loop) |
  # auto (on CPU for image networks: loop above 8 learners per device, unroll for XLA
  # convolutions, whose grouped form is slow there; vmap elsewhere). Other algorithms vmap.
  c.learner_map = "auto"
  # The platform the run is built for: auto (its devices': cpu | gpu | tpu). The 'auto'
  # choices below read it; a value other than the devices' platform is rejected.
  c.platform = "auto"
  # scan (one XLA loop per call) | host (a Python loop) | auto (host on CPU for XLA
  # convolutions, whose gradients are slow inside XLA:CPU loops; scan elsewhere, and for
  # network.conv_impl="patches")
  c.update_loop = "auto"
  # The 'auto' choices (learner_map, conv_impl, update_loop, grad_chunks, hts.microbatches)
  # are resolved once, into the run's execution plan (galax/framework/plan.py), when the algorithm
  # is built: the run header prints the plan; config.json keeps the choices as given.

  # A2C-family and IMPALA gradients in this many env chunks, PPO minibatch gradients in
  # this many sample chunks, combined (the same gradient up to float rounding): 1 = the
  # whole batch at once; 0 = auto (CPU image networks: chunks of >= 80 samples, as
  # XLA:CPU's conv gradients slow down per sample on larger batches; unrolled, so compile
  # time grows with the chunks).
  c.grad_chunks = 0
  c.log_every_steps = 50_000  # env steps between progress lines / metric rows
  c.checkpoint_every_steps = 0  # env steps between checkpoints; 0 = only at the end
  c.keep_checkpoints = 3  # the newest checkpoints kept in <workdir>/checkpoints
  c.stats_window = 100  # completed episodes in the running mean return
  c.target_return = 0.0  # stop once the running mean reaches it (0 = run all steps)
  c.tensorboard = True  # also write TensorBoard events to <workdir>/tb
  c.track = False  # also log to Weights & Biases (galax/training/tracking.py; the 'track' extra)
  c.track_project = "galax"  # the W&B project
  c.track_entity = ""  # "" = wandb's default entity
  c.track_mode = "online"  # "online", "offline" (upload later: wandb sync) or "disabled"
  # Video of one episode of the evaluated policy at each evaluation (needs eval.every_steps
  # > 0): <workdir>/videos/step<N>.mp4 (.gif without ffmpeg), TensorBoard and W&B; outside
  # the training clock (galax/training/videos.py; CleanRL's name)
  c.capture_video = False
  c.distributed = False  # call jax.distributed.initialize() (multi-host pods)
  # Stop after this much training time of each sitting (a --resume starts a new one, with
  # its own limit); 0 = none. A time metric of one sitting, as HTS's.
  c.time_limit_s = 0.0
  c.learner_stats = False  # also log each learner's running return (mean_return/learner<i>)
  c.energy = True  # sample GPU power via NVML, report frames per kJ (skipped without a GPU)
  return c


def _eval_section() -> ml_collections.ConfigDict:
  # Periodic evaluation on separate envs (see galax/evaluate/evaluator.py): full games (no episodic
  # life), raw rewards, up to `noop_max` no-op starts (Atari). Rows go to eval.csv.
  e = ml_collections.ConfigDict()
  e.every_steps = 0  # env steps between evaluations (and one at the end); 0 = off
  e.episodes = 10  # episodes per evaluated policy (HTS, GALA: 10)
  e.greedy = True  # argmax actions (GALA Table 1); False samples from the policy
  e.learners = "first"  # first (learner 0) | all (each learner) | average (mean params)
  e.num_envs = 0  # envs per evaluated policy; 0 = one env per episode
  e.noop_max = 30  # Atari: up to this many no-ops at the start of an eval episode
  e.max_episode_steps = 0  # eval time limit in agent steps; 0 = as config.env
  return e


def config_names() -> list[str]:
  """The names of the configs in configs/ ("pong_paac", ...)."""
  return sorted(
    f[:-3] for f in os.listdir(CONFIGS_DIR) if f.endswith(".py") and not f.startswith("_")
  )


def config_path(name_or_path: str) -> str:
  """The file of a config: an existing file, or a name in configs/ ("pong_paac").

  Raises FileNotFoundError (one line, listing the available names) otherwise.
  """
  if os.path.isfile(name_or_path):
    return name_or_path
  path = os.path.join(CONFIGS_DIR, f"{os.path.basename(name_or_path).removesuffix('.py')}.py")
  if os.sep not in name_or_path and os.path.isfile(path):
    return path
  names = config_names()
  raise FileNotFoundError(
    f"No config {name_or_path!r}: not a file, and not one of {', '.join(names)} (in {CONFIGS_DIR})."
  )


def load(name_or_path: str, **overrides: Any) -> ml_collections.ConfigDict:
  """Loads an experiment config: a name in configs/ ("pong_paac") or a file path.

  Keyword overrides use '__' for nesting: load("pong_paac", optimizer__eps=0.01). A
  keyword that names no field is one ValueError naming the fields meant.
  """
  path = config_path(name_or_path)
  spec = importlib.util.spec_from_file_location(f"galax_config_{os.path.basename(path)[:-3]}", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = module.get_config()
  if not isinstance(config, ml_collections.ConfigDict):  # its fields would go unchecked
    raise ValueError(
      f"config file {path}: get_config() returned a {type(config).__name__}, not the ConfigDict of "
      "galax.config.base_config() with its fields set (as configs/cartpole_a2c.py does)."
    )
  fields = {key.replace("__", "."): value for key, value in overrides.items()}
  for dotted in fields:
    _check_keyword(config, dotted, name_or_path)
  note = foreign_target(config, fields, name_or_path, "target_return=X")
  if note:
    fields["target_return"] = 0.0
    print(f"note: {note}")
  return set_fields(config, fields)


def _check_keyword(config: ml_collections.ConfigDict, dotted: str, name: str) -> None:
  """ValueError (one line) if load's keyword `dotted` names no field: a locked ConfigDict's
  own KeyError prints every field of the config."""
  found = field_names.unknown_part(config, dotted)
  if found is None:
    return
  keyword = lambda path: path.replace(".", "__")
  close = ", ".join(f"{keyword(c)}=" for c in found[1])
  raise ValueError(
    f"load_config({name!r}): no field {found[0]!r} (keyword {keyword(dotted)}=)."
    + (f" Did you mean {close}?" if close else "")
  )


def foreign_target(
  config: ml_collections.ConfigDict, overrides: dict[str, Any], name: str, how: str
) -> str | None:
  """The line saying a config's target_return was cleared, or None to keep it.

  A config's target is a score on its own env (pong_fast's 18 is Pong's solved level):
  `overrides` that change env.id but not target_return would carry it to another game, and
  stop that run at a score that means nothing there (18 on Breakout is an early stage).
  A target given with the new env is the user's own and stays, and so does the target of
  the same game on another backend. `how`: how to set one.
  """
  env_id = overrides.get("env.id")
  game = lambda i: str(i).rsplit("/", 1)[-1]  # gymnax/CartPole-v1 plays CartPole-v1
  if env_id is None or "target_return" in overrides or not config.target_return:
    return None
  if game(env_id) == game(config.env.id):
    return None
  source = os.path.basename(name).removesuffix(".py")
  return (
    f"target_return={config.target_return:g} is {source}'s target on {config.env.id}, not on "
    f"{env_id}: cleared, so the run goes to total_env_steps ({how} stops it at a running mean of X)"
  )


def set_fields(
  config: ml_collections.ConfigDict, values: dict[str, Any]
) -> ml_collections.ConfigDict:
  """Sets dotted fields in place ({"optimizer.name": "adam"}); returns the config."""
  for key, value in values.items():
    node = config
    *parents, leaf = key.split(".")
    for parent in parents:
      node = node[parent]
    node[leaf] = value
  return config
