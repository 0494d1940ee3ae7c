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
  mlp        fc 64, fc 64 with tanh (classic control)

Integer (uint8) image observations are scaled by 1/255; float ones (MinAtar's 0/1
channels) are used as they are. Atari frames arrive channels-first [stack, 84, 84] and
are transposed to NHWC; GFootball's SMM and MinAtar arrive HWC already.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from galax.envs import EnvSpec

ConvSpec = tuple[int, int, int]  # (features, kernel, stride)

TORSOS: dict[str, dict[str, Any]] = {
    "archnips": dict(convs=((16, 8, 4), (32, 4, 2)), fc=256),
    "archnature": dict(convs=((32, 8, 4), (64, 4, 2), (64, 3, 1)), fc=512),
    "impala_shallow": dict(convs=((16, 8, 4), (32, 4, 2)), fc=256),
    "gala": dict(convs=((32, 8, 4), (64, 4, 2), (32, 3, 1)), fc=512),
    "minatar": dict(convs=((16, 3, 1),), fc=128),
}


def _init(kind: str, scale: float):
  if kind == "orthogonal":
    return nn.initializers.orthogonal(scale)
  if kind == "lecun":
    return nn.initializers.lecun_normal()
  raise ValueError(f"Unknown initializer {kind!r}; use 'orthogonal' or 'lecun'.")


class ConvTorso(nn.Module):
  """Convolutions then one fully connected layer."""

  convs: Sequence[ConvSpec]
  fc: int
  max_pool: bool = False  # 2x2 max-pool after every conv but the last (BA3C)
  padding: str = "VALID"
  init_scheme: str = "orthogonal"
  conv_bias: bool = True

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    kernel_init = _init(self.init_scheme, np.sqrt(2))
    for i, (features, kernel, stride) in enumerate(self.convs):
      x = nn.Conv(features, (kernel, kernel), (stride, stride), padding=self.padding,
                  use_bias=self.conv_bias, kernel_init=kernel_init)(x)
      x = nn.relu(x)
      if self.max_pool and i < len(self.convs) - 1:
        x = nn.max_pool(x, (2, 2), (2, 2))
    x = x.reshape(x.shape[:-3] + (-1,))
    return nn.relu(nn.Dense(self.fc, kernel_init=kernel_init)(x))


class MLPTorso(nn.Module):
  hidden: Sequence[int] = (64, 64)
  init_scheme: str = "orthogonal"

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    for width in self.hidden:
      x = nn.tanh(nn.Dense(width, kernel_init=_init(self.init_scheme, np.sqrt(2)))(x))
    return x


class ActorCritic(nn.Module):
  """obs [..., *obs_shape] -> (logits [..., A], value [...])."""

  torso: nn.Module
  num_actions: int
  obs_layout: str = "CHW"
  init_scheme: str = "orthogonal"

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
    # Small policy init keeps the first policy near uniform (as in the GALA/HTS code).
    logits = nn.Dense(self.num_actions, kernel_init=_init(self.init_scheme, 0.01))(h)
    value = nn.Dense(1, kernel_init=_init(self.init_scheme, 1.0))(h)
    return logits, value[..., 0]


def make_network(name: str, spec: EnvSpec, fc_width: int = 0, mlp_hidden: Sequence[int] = (64, 64),
                 init_scheme: str = "orthogonal") -> ActorCritic:
  """Builds the named actor-critic for an env. `fc_width` > 0 overrides the torso's fc."""
  image = spec.obs_layout != "flat"
  if name == "mlp":
    if image:
      raise ValueError(f"network 'mlp' expects vector observations, {spec.env_id} has "
                       f"images of shape {spec.obs_shape}; use archnips/archnature/ba3c/minatar.")
    torso: nn.Module = MLPTorso(tuple(mlp_hidden), init_scheme=init_scheme)
  elif name == "ba3c":
    torso = ConvTorso(((32, 5, 1), (32, 5, 1), (64, 5, 1), (64, 3, 1)), fc_width or 128,
                      max_pool=True, padding="VALID", init_scheme=init_scheme, conv_bias=False)
  elif name in TORSOS:
    t = TORSOS[name]
    torso = ConvTorso(t["convs"], fc_width or t["fc"], init_scheme=init_scheme)
  else:
    raise ValueError(f"Unknown network {name!r}; choose from "
                     f"{sorted(['mlp', 'ba3c', *TORSOS])}.")
  if image and name != "mlp" and len(spec.obs_shape) != 3:
    raise ValueError(f"network {name!r} expects image observations, {spec.env_id} has "
                     f"shape {spec.obs_shape}; use network 'mlp'.")
  return ActorCritic(torso=torso, num_actions=spec.num_actions, obs_layout=spec.obs_layout,
                     init_scheme=init_scheme)


def init_params(network: ActorCritic, spec: EnvSpec, key: jax.Array):
  """The network's initial parameters from `key`, built as one compiled program (op by op,
  flax's init compiled each of its ~70 small operations apart: 2.6 s per process)."""
  dummy = jnp.zeros((1, *spec.obs_shape), spec.obs_dtype)
  return _jitted_init(network)(key, dummy)


@functools.lru_cache(maxsize=64)
def _jitted_init(network: ActorCritic) -> Callable[[jax.Array, jax.Array], Any]:
  return jax.jit(network.init)


ApplyFn = Callable[[Any, jax.Array], tuple[jax.Array, jax.Array]]
