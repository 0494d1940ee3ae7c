"""Actor-critic networks: one torso, a policy-logits head and a value head.

Torsos (all ReLU, VALID padding unless stated):
  archnips   conv 16 8x8/4, conv 32 4x4/2, fc 256          (PAAC; Mnih et al. 2013)
  archnature conv 32 8x8/4, conv 64 4x4/2, conv 64 3x3/1, fc 512  (PAAC, GALA, HTS)
  ba3c       conv 32 5x5 + maxpool 2, conv 32 5x5 + maxpool 2, conv 64 5x5 + maxpool 2,
             conv 64 3x3, no conv biases, fc `fc_width` (128: the small model of Adamski
             et al. 2018, as in the authors' code; with 4 x 3 RGB channels and 6 actions it
             has the paper's 332,295 weights less the 3,200 of the 4 zero channels they
             padded the input with)
  impala_shallow  conv 16 8x8/4, conv 32 4x4/2, fc 256 (IMPALA's shallow net; same shape
             as archnips, kept as its own name for the baseline configs)
  minatar    conv 16 3x3/1, fc 128 (the MinAtar paper's network, Young & Tian 2019:
             10x10xC -> 8x8x16 -> 128)
  mlp        fc 64, fc 64 with tanh (classic control); on image observations it flattens
             them first (PureJaxRL's MinAtar PPO: 10x10xC -> 100C -> 64 -> 64, relu)

`activation` ("relu" | "tanh"; "" = the torso's own: tanh for mlp, relu for the others)
sets the nonlinearity of every torso layer. `shared_torso=False` gives the value head a
torso of its own (same shape), so the value loss does not shape the policy's features:
PureJaxRL's separate actor and critic MLPs.

Convolutions run as XLA convolutions (`conv_impl="xla"`) or as patches times a matrix
(`conv_impl="patches"`: the k x k input windows sliced and concatenated, then one matmul;
the same parameters and maths, other rounding). XLA:CPU computes a convolution's weight
gradient several times slower inside a while loop (a `lax.scan` of updates) than outside
one, while a matmul runs as fast in both; with patches, image-network updates on CPU can
be scanned (quick to compile) instead of unrolled (docs/benchmarks.md has the figures).

Integer (uint8) image observations are scaled by 1/255; float ones (MinAtar's 0/1
channels) are used as they are. Atari frames arrive channels-first [stack, 84, 84] and
are transposed to NHWC; GFootball's SMM and MinAtar arrive HWC already.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from galax.core.types import Params
from galax.envs import EnvSpec

ConvSpec = tuple[int, int, int]  # (features, kernel, stride)

TORSOS: dict[str, dict[str, tuple[ConvSpec, ...] | int]] = {
  "archnips": dict(convs=((16, 8, 4), (32, 4, 2)), fc=256),
  "archnature": dict(convs=((32, 8, 4), (64, 4, 2), (64, 3, 1)), fc=512),
  "impala_shallow": dict(convs=((16, 8, 4), (32, 4, 2)), fc=256),
  "gala": dict(convs=((32, 8, 4), (64, 4, 2), (32, 3, 1)), fc=512),
  "minatar": dict(convs=((16, 3, 1),), fc=128),
}


INIT_SCHEMES = ("orthogonal", "lecun", "paac")


def _init(kind: str, scale: float):
  """A kernel initializer. `scale` is orthogonal's gain (sqrt 2 for ReLU layers, 0.01 for
  the policy head, 1 for the value head); lecun and paac ignore it."""
  if kind == "orthogonal":
    return nn.initializers.orthogonal(scale)
  if kind == "lecun":
    return nn.initializers.lecun_normal()
  if kind == "paac":  # U(-1/sqrt(fan_in), 1/sqrt(fan_in)): variance 1 / (3 fan_in)
    return nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")
  raise ValueError(f"Unknown network.init {kind!r}; choose from {list(INIT_SCHEMES)}.")


def _bias_init(kind: str, fan_in: int):
  """Zeros, except for 'paac': U(-1/sqrt(fan_in), 1/sqrt(fan_in)) like its kernels (the
  PAAC authors' "torch" init, networks.py:40-46 and 75-81 of their code)."""
  if kind != "paac":
    return nn.initializers.zeros_init()
  bound = 1.0 / np.sqrt(fan_in)
  return lambda key, shape, dtype=jnp.float32: jax.random.uniform(key, shape, dtype, -bound, bound)


CONV_IMPLS = ("xla", "patches")
ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {"relu": nn.relu, "tanh": nn.tanh}


def activation_fn(name: str, default: str) -> Callable[[jax.Array], jax.Array]:
  """The named nonlinearity ("" = `default`); ValueError naming the choices otherwise."""
  if (name or default) not in ACTIVATIONS:
    raise ValueError(
      f"Unknown activation {name!r}; choose from {sorted(ACTIVATIONS)} "
      "(or '' for the network's own)."
    )
  return ACTIVATIONS[name or default]


class PatchConv(nn.Module):
  """A VALID k x k convolution (stride s) of NHWC images as patches @ kernel.

  y[n, h, w, f] = b[f] + sum_{i, j, c} x[n, s h + i, s w + j, c] K[i, j, c, f]: the k * k
  strided windows are concatenated on the channel axis in (i, j, c) order, which is the
  row order of K [k, k, C, F] reshaped to [k k C, F]. Parameters are `nn.Conv`'s (names,
  shapes, initializers), so a checkpoint or init serves either implementation.
  """

  features: int
  kernel: int
  stride: int
  use_bias: bool
  kernel_init: Callable
  bias_init: Callable = nn.initializers.zeros_init()

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    k, s, channels = self.kernel, self.stride, x.shape[-1]
    weights = self.param("kernel", self.kernel_init, (k, k, channels, self.features))
    out_h, out_w = (x.shape[-3] - k) // s + 1, (x.shape[-2] - k) // s + 1
    windows = [
      x[..., i : i + s * (out_h - 1) + 1 : s, j : j + s * (out_w - 1) + 1 : s, :]
      for i in range(k)
      for j in range(k)
    ]
    y = jnp.concatenate(windows, axis=-1) @ weights.reshape(k * k * channels, self.features)
    if self.use_bias:
      y = y + self.param("bias", self.bias_init, (self.features,))
    return y


class ConvTorso(nn.Module):
  """Convolutions then one fully connected layer."""

  convs: Sequence[ConvSpec]
  fc: int
  max_pool: bool = False  # 2x2 max-pool after every conv but the last (BA3C)
  padding: str = "VALID"
  init_scheme: str = "orthogonal"
  conv_bias: bool = True
  conv_impl: str = "xla"  # see the module docstring
  activation: str = ""  # "" = relu

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    kernel_init = _init(self.init_scheme, np.sqrt(2))
    act = activation_fn(self.activation, "relu")
    for i, (features, kernel, stride) in enumerate(self.convs):
      bias_init = _bias_init(self.init_scheme, kernel * kernel * x.shape[-1])
      if self.conv_impl == "patches":  # named as nn.Conv's, so the parameters are the same
        x = PatchConv(
          features, kernel, stride, self.conv_bias, kernel_init, bias_init, name=f"Conv_{i}"
        )(x)
      else:
        x = nn.Conv(
          features,
          (kernel, kernel),
          (stride, stride),
          padding=self.padding,
          use_bias=self.conv_bias,
          kernel_init=kernel_init,
          bias_init=bias_init,
        )(x)
      x = act(x)
      if self.max_pool and i < len(self.convs) - 1:
        x = nn.max_pool(x, (2, 2), (2, 2))
    x = x.reshape(x.shape[:-3] + (-1,))
    return act(
      nn.Dense(
        self.fc, kernel_init=kernel_init, bias_init=_bias_init(self.init_scheme, x.shape[-1])
      )(x)
    )


class MLPTorso(nn.Module):
  """Dense layers on the observation's last `input_dims` axes, flattened (1: vectors, 3:
  images)."""

  hidden: Sequence[int] = (64, 64)
  init_scheme: str = "orthogonal"
  activation: str = ""  # "" = tanh
  input_dims: int = 1

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    act = activation_fn(self.activation, "tanh")
    x = x.reshape(x.shape[: x.ndim - self.input_dims] + (-1,))
    for width in self.hidden:
      x = act(
        nn.Dense(
          width,
          kernel_init=_init(self.init_scheme, np.sqrt(2)),
          bias_init=_bias_init(self.init_scheme, x.shape[-1]),
        )(x)
      )
    return x


class ActorCritic(nn.Module):
  """obs [..., *obs_shape] -> (logits [..., A], value [...])."""

  torso: nn.Module
  num_actions: int
  obs_layout: str = "CHW"
  init_scheme: str = "orthogonal"
  critic_torso: nn.Module | None = None  # None: the value head shares `torso`

  @nn.compact
  def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
    if self.obs_layout == "flat":
      x = obs.astype(jnp.float32)
    else:
      x = obs.astype(jnp.float32)
      if jnp.issubdtype(obs.dtype, jnp.integer):
        x = x / 255.0
      if self.obs_layout == "CHW":
        x = jnp.moveaxis(x, -3, -1)
    h = self.torso(x)
    # Small policy init keeps the first policy near uniform (as in the GALA/HTS code);
    # 'paac' initializes the heads as every other layer (the PAAC authors' code).
    logits = nn.Dense(
      self.num_actions,
      kernel_init=_init(self.init_scheme, 0.01),
      bias_init=_bias_init(self.init_scheme, h.shape[-1]),
    )(h)
    if self.critic_torso is not None:
      h = self.critic_torso(x)
    value = nn.Dense(
      1,
      kernel_init=_init(self.init_scheme, 1.0),
      bias_init=_bias_init(self.init_scheme, h.shape[-1]),
    )(h)
    return logits, value[..., 0]


def image_size(spec: EnvSpec) -> tuple[int, int]:
  """(height, width) of an image observation in its layout (CHW or HWC)."""
  shape = spec.obs_shape
  return (shape[1], shape[2]) if spec.obs_layout == "CHW" else (shape[0], shape[1])


def check_image_fits(name: str, torso: ConvTorso, spec: EnvSpec) -> None:
  """ValueError (one line) where a conv torso cannot take the env's observations: vectors,
  or images smaller than its VALID convolutions (and pools) need."""
  if spec.obs_layout == "flat" or len(spec.obs_shape) != 3:
    raise ValueError(
      f"network {name!r} is convolutional and expects image observations; "
      f"{spec.env_id} has shape {spec.obs_shape}; use network 'mlp'."
    )
  height, width = image_size(spec)
  for i, (_, kernel, stride) in enumerate(torso.convs):
    height, width = (height - kernel) // stride + 1, (width - kernel) // stride + 1
    if height < 1 or width < 1:
      raise ValueError(
        f"network {name!r} does not fit {spec.env_id}'s {image_size(spec)} images: its "
        f"convolution {i} ({kernel}x{kernel}, stride {stride}) leaves no output; use "
        "larger images (Atari: env.options img_height/img_width) or another network."
      )
    if torso.max_pool and i < len(torso.convs) - 1:
      height, width = height // 2, width // 2


def make_network(
  name: str,
  spec: EnvSpec,
  fc_width: int = 0,
  mlp_hidden: Sequence[int] = (64, 64),
  init_scheme: str = "orthogonal",
  conv_impl: str = "xla",
  activation: str = "",
  shared_torso: bool = True,
) -> ActorCritic:
  """Builds the named actor-critic for an env. `fc_width` > 0 overrides the torso's fc;
  `activation` ("" = the torso's own) its nonlinearity; `shared_torso=False` a second
  torso of the same shape for the value head."""
  if conv_impl not in CONV_IMPLS:
    raise ValueError(f"Unknown conv_impl {conv_impl!r}; choose from {list(CONV_IMPLS)}.")
  activation_fn(activation, "relu")  # one line for an unknown name, before any tracing
  if name == "mlp":  # images are flattened (channels-last, as the conv torsos see them)
    torso: nn.Module = MLPTorso(
      tuple(mlp_hidden),
      init_scheme=init_scheme,
      activation=activation,
      input_dims=len(spec.obs_shape),
    )
  elif name == "ba3c":
    torso = ConvTorso(
      ((32, 5, 1), (32, 5, 1), (64, 5, 1), (64, 3, 1)),
      fc_width or 128,
      max_pool=True,
      padding="VALID",
      init_scheme=init_scheme,
      conv_bias=False,
      conv_impl=conv_impl,
      activation=activation,
    )
  elif name in TORSOS:
    t = TORSOS[name]
    torso = ConvTorso(
      t["convs"],
      fc_width or t["fc"],
      init_scheme=init_scheme,
      conv_impl=conv_impl,
      activation=activation,
    )
  else:
    raise ValueError(f"Unknown network {name!r}; choose from {sorted(['mlp', 'ba3c', *TORSOS])}.")
  if name != "mlp":
    check_image_fits(name, torso, spec)
  return ActorCritic(
    torso=torso,
    num_actions=spec.num_actions,
    obs_layout=spec.obs_layout,
    init_scheme=init_scheme,
    critic_torso=None if shared_torso else torso.clone(name="critic_torso"),
  )


@dataclasses.dataclass(frozen=True, kw_only=True)
class NetworkSettings:
  """The `network` section of a run's config; `build` makes the network for an env."""

  name: str = "mlp"  # mlp | archnips | archnature | gala | ba3c | impala_shallow
  fc_width: int = 0  # 0 = the architecture's own (BA3C small model: 128)
  mlp_hidden: tuple[int, ...] = (64, 64)  # mlp: the hidden layer widths
  activation: str = ""  # relu | tanh | "" = the network's own (mlp tanh, convs relu)
  # orthogonal (heads scaled 0.01 / 1) | lecun | paac (U(+-1/sqrt(fan_in)) for weights and
  # biases of every layer, heads included: the PAAC authors' "torch" init)
  init: str = "orthogonal"
  shared_torso: bool = True  # False: the value head has a torso of its own
  # xla | patches (convolutions as patches @ kernel: same parameters, fast inside XLA:CPU
  # loops, where XLA's convolution gradients are slow; see galax/core/networks.py) | auto
  # (patches where a CPU runs the learners in a loop, see learner_map, or a learner takes
  # 16 or more gradient steps per update, as PPO's epochs x minibatches; xla elsewhere)
  conv_impl: str = "auto"

  def build(self, spec: EnvSpec, conv_impl: str = "xla") -> ActorCritic:
    """The network for an env. `conv_impl`: how its convolutions run (a training run's
    `ExecutionPlan.conv_impl`; evaluation's default 'xla'); the parameters are the same
    either way."""
    return make_network(
      self.name,
      spec,
      self.fc_width,
      self.mlp_hidden,
      self.init,
      conv_impl,
      self.activation,
      self.shared_torso,
    )


def init_params(network: ActorCritic, spec: EnvSpec, key: jax.Array) -> Params:
  """The network's initial parameters from `key`, built as one compiled program (op by op,
  flax's init compiles each of its small operations apart, seconds per process)."""
  dummy = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype)
  return _jitted_init(network)(key, dummy)


@functools.lru_cache(maxsize=64)
def _jitted_init(network: ActorCritic) -> Callable[[jax.Array, jax.Array], Params]:
  return jax.jit(network.init)


ApplyFn = Callable[[Params, jax.Array], tuple[jax.Array, jax.Array]]
