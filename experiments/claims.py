"""The papers' headline claims as learning experiments at MinAtar scale.

  python -m experiments.claims paac --out=results/claims --steps=1000000 --seeds=0-4
  python -m experiments.claims gala --out=results/claims --steps=1000000 --seeds=0-4 \\
      --envs=gymnax/Breakout-MinAtar,gymnax/Asterix-MinAtar
  python -m experiments.claims hts|ba3c ...
  python -m experiments.claims ba3c --steps=5000 --seeds=0-2 --tiny   # a CI-sized run
  python -m experiments.claims ba3c --steps=5000 --seeds=0 --tiny --no_verdict  # report only

From a checkout, `python -m experiments.claims`; from any directory, the installed command
`galax-claims` (the same arguments; `pip install -e .` installs it) or
`python -m galax.experiments.claims` (experiments/ installs as galax.experiments).

Each claim is a set of configs (variants) x seeds per game, run through
`galax.results.experiment.run_experiment` into `<out>/<claim>/<game>_<variant>/seed<s>.json`, then
summarised by `galax.results.report.build_report` (`<out>/<claim>/report.md`: runs, final metric,
final time metric, required time metric, best policy; PNG plots of return vs env steps and
vs training time, mean and 95% bootstrap CI over seeds) and by the claim's own verdict
(`<out>/<claim>/verdict.md` and `verdict.json`, experiments/verdicts.py). A verdict needs at
least 3 seeds per variant (`MIN_SEEDS_FOR_CI`: a CI from fewer is zero-width or [min, max]):
with fewer, the command refuses in one line (exit 2) before it runs anything, unless
`--no_verdict` asks for the runs and report.md alone.

  paac  PAAC (Clemente et al. 2017): n_e in {16, 32, 64, 128, 256}, lr = 0.0007 x n_e
        (Fig. 3: 256 diverges).
  gala  GALA (Assran et al. 2019): GALA-A2C with 4 learners x 16 envs on a ring, an
        exponential graph and the full graph, vs all-reduce A2C and A3C with the same
        learners and envs (Table 2 hyper-parameters, lr x sqrt(4) for the synchronous
        ones); consensus distances and Prop. 1's bound recorded (gossip.metrics).
  hts   HTS-RL (Liu et al. 2020): HTS-A2C vs A2C, HTS-PPO vs PPO.
  ba3c  BA3C (Adamski et al. 2018): all-reduce A2C with Adam(1e-3, 0.8, 0.75, 1e-8) at a
        large batch (4 x 64 envs) vs RMSProp; 3-of-4 straggler dropping vs waiting for all
        4 learners under the simulated step-time law (galax/parallel/stragglers.py).

Finished experiments (every seed's JSON present) are not run again, so an interrupted
command resumes where it stopped. Seeds run one after another (`--mode=sequential`) so
that the wall-clock metrics of all variants are measured the same way.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Callable, Sequence

import ml_collections

from . import minatar  # relative: this package is `experiments` or `galax.experiments`

CLAIMS = ("paac", "gala", "hts", "ba3c")


@dataclasses.dataclass(frozen=True)
class Variant:
  """One config of a claim: `name` (unique within a game) and its label in tables."""

  name: str
  method: str
  config: ml_collections.ConfigDict


def paac_variants(env_id: str, steps: int, settings: str = "learning") -> list[Variant]:
  return [
    Variant(f"paac_ne{n}", f"PAAC n_e={n}", minatar.paac_config(env_id, steps, n, settings))
    for n in (16, 32, 64, 128, 256)
  ]


def gala_variants(env_id: str, steps: int, settings: str = "learning") -> list[Variant]:
  def learners4(combine: str) -> ml_collections.ConfigDict:
    c = minatar.a2c_config(env_id, steps, settings)
    c.num_learners = 4
    c.envs_per_learner = 16
    c.combine = combine
    c.optimizer.lr_scaling = "sqrt_learners"  # GALA Table 2: 7e-4 x sqrt(4)
    return c

  def gala(topology: str) -> Variant:
    c = learners4("gossip")
    c.gossip.topology = topology
    c.gossip.metrics = True  # consensus distances and Prop. 1's bound per update
    return Variant(f"gala_{topology}", f"GALA-A2C {topology}", c)

  a3c = minatar.a2c_config(env_id, steps, settings)  # lr not scaled: each gradient is applied alone
  a3c.algorithm = "a3c"
  a3c.num_learners = 4
  a3c.envs_per_learner = 16
  a3c.a3c.max_staleness = 3
  # The headline comparison first, so that an interrupted run still has it.
  return [
    gala("ring"),
    Variant("allreduce", "all-reduce A2C", learners4("allreduce")),
    Variant("a3c", "A3C", a3c),
    gala("exponential"),
    gala("full"),
  ]


def hts_variants(env_id: str, steps: int, settings: str = "learning") -> list[Variant]:
  variants = []
  for base, label, make in (("a2c", "A2C", minatar.a2c_config), ("ppo", "PPO", minatar.ppo_config)):
    plain = make(env_id, steps, settings)
    hts = make(env_id, steps, settings)
    hts.algorithm = f"hts_{base}"  # on gymnax, in one piece (`hts.microbatches` auto)
    variants += [Variant(base, label, plain), Variant(f"hts_{base}", f"HTS-{label}", hts)]
  return variants


def ba3c_variants(env_id: str, steps: int, settings: str = "learning") -> list[Variant]:
  def allreduce(envs: int) -> ml_collections.ConfigDict:
    c = minatar.a2c_config(env_id, steps, settings)
    c.num_learners = 4
    c.envs_per_learner = envs
    c.combine = "allreduce"
    return c

  rmsprop = allreduce(64)  # large batch: 4 x 64 envs per update
  rmsprop.optimizer.name = "rmsprop"  # GALA Table 2's, in the PyTorch convention
  rmsprop.optimizer.rmsprop_convention = "torch"
  rmsprop.optimizer.rmsprop_decay = 0.99
  rmsprop.optimizer.eps = 0.01
  rmsprop.optimizer.learning_rate = 7e-4 * 4  # lr x sqrt(16 batch multiples)
  adam = allreduce(64)
  adam.optimizer.name = "adam"  # BA3C: Adam(1e-3, beta1 0.8, beta2 0.75, eps 1e-8)
  adam.optimizer.learning_rate = 1e-3
  adam.optimizer.adam_b1 = 0.8
  adam.optimizer.adam_b2 = 0.75
  adam.optimizer.eps = 1e-8
  wait_all = allreduce(16)
  wait_all.optimizer.lr_scaling = "sqrt_learners"
  drop = allreduce(16)
  drop.optimizer.lr_scaling = "sqrt_learners"
  drop.stragglers.num_kept = 3  # SyncReplicas: apply the update once 3 of 4 are in
  drop.stragglers.step_time = "exponential"
  drop.stragglers.scale = 1.0
  return [
    Variant("rmsprop_large", "all-reduce RMSProp 4x64", rmsprop),
    Variant("adam_large", "all-reduce Adam(0.8, 0.75) 4x64", adam),
    Variant("wait_all", "all-reduce, wait for 4 of 4", wait_all),
    Variant("drop_1", "all-reduce, keep 3 of 4", drop),
  ]


VARIANTS: dict[str, Callable[..., list[Variant]]] = dict(
  paac=paac_variants, gala=gala_variants, hts=hts_variants, ba3c=ba3c_variants
)


def game_name(env_id: str) -> str:
  """'gymnax/Breakout-MinAtar' -> 'breakout'."""
  return env_id.split("/")[-1].split("-")[0].lower()


def _finished(exp_dir: str, seeds: Sequence[int]) -> bool:
  return all(os.path.exists(os.path.join(exp_dir, f"seed{s}.json")) for s in seeds)


def with_lr_scale(variant: Variant, lr_scale: float) -> Variant:
  """The variant with its base learning rate times `lr_scale` (scaling rules still apply,
  e.g. GALA's x sqrt(learners)); its label says so."""
  if lr_scale == 1.0:
    return variant
  if lr_scale <= 0:
    raise ValueError(f"--lr_scale must be > 0, got {lr_scale}.")
  config = variant.config
  config.optimizer.learning_rate = config.optimizer.learning_rate * lr_scale
  return Variant(variant.name, f"{variant.method} (lr x{lr_scale:g})", config)


def run_claim(
  claim: str,
  env_ids: Sequence[str],
  seeds: Sequence[int],
  steps: int,
  out: str,
  tiny: bool = False,
  resamples: int = 10_000,
  only: Sequence[str] = (),
  log: Callable[[str], None] = print,
  lr_scale: float = 1.0,
  settings: str = "learning",
  verdict: bool = True,
) -> str:
  """Runs a claim's variants (those named in `only`, if any) x seeds on each game, writes
  report and verdict; returns the claim's output directory. `lr_scale` multiplies every
  variant's base learning rate (a sensitivity check; use its own `out`); `settings` picks
  the base configs (experiments/minatar.py: "learning" or the papers' "paper"); `verdict`
  False writes the report alone (no verdict from fewer than MIN_SEEDS_FOR_CI seeds)."""
  from galax import config as config_lib
  from galax.results.experiment import run_experiment

  if claim not in VARIANTS:
    raise ValueError(f"unknown claim {claim!r}; choose from {list(CLAIMS)}.")
  claim_dir = os.path.join(out, claim)
  names = [v.name for v in VARIANTS[claim](env_ids[0], steps, settings)]
  unknown = sorted(set(only) - set(names))
  if unknown:
    raise ValueError(f"--variants: {claim} has no variant {unknown}; choose from {names}.")
  planned = []  # every config checked before anything runs
  for env_id in env_ids:
    for variant in VARIANTS[claim](env_id, steps, settings):
      if only and variant.name not in only:
        continue
      variant = with_lr_scale(variant, lr_scale)
      config = minatar.scale_down(variant.config) if tiny else variant.config
      config_lib.validate(config)
      planned.append((f"{game_name(env_id)}_{variant.name}", variant.method, config))
  if verdict:
    check_seed_count(seeds)
  for name, method, config in planned:
    if _finished(os.path.join(claim_dir, name), seeds):
      log(f"{claim}/{name}: done already, skipped")
      continue
    run_experiment(
      config,
      seeds,
      claim_dir,
      name,
      method,
      mode="sequential",
      best_policy_episodes=10,
      log=log,
    )
  summarise(claim, claim_dir, resamples, verdict)
  return claim_dir


def check_seed_count(seeds: Sequence[int]) -> None:
  """One line, before anything runs, where `seeds` are too few for a verdict."""
  from galax.results.paper_protocols import MIN_SEEDS_FOR_CI

  if len(seeds) < MIN_SEEDS_FOR_CI:
    raise ValueError(
      f"--seeds gives {len(seeds)} seed(s); a verdict needs at least {MIN_SEEDS_FOR_CI} per "
      f"variant (a 95% CI from fewer is zero-width or [min, max]): "
      f"--seeds=0-{MIN_SEEDS_FOR_CI - 1} or more, or --no_verdict for the runs and report alone."
    )


def summarise(claim: str, claim_dir: str, resamples: int = 10_000, verdict: bool = True) -> None:
  """report.md + plots (galax.results.report) and verdict.md/json of a claim's results
  (`verdict` False: no verdict). A verdict from fewer than MIN_SEEDS_FOR_CI seeds of a
  variant is refused in one line before anything is written."""
  from galax.results.experiment import load_results
  from galax.results.report import build_report

  from . import claim_checks

  runs, summaries = load_results(claim_dir)
  if not runs:
    raise ValueError(f"{claim_dir} holds no run records (seed<N>.json): nothing to summarise.")
  if verdict:
    claim_checks.check_seeds(runs)
  build_report(runs, summaries, claim_dir, resamples=resamples)
  if verdict:
    claim_checks.write_verdict(claim, runs, claim_dir, resamples)


def _parse(argv: Sequence[str]) -> argparse.Namespace:
  parser = argparse.ArgumentParser(
    prog="galax-claims"
    if os.path.basename(sys.argv[0]) == "galax-claims"
    else f"python -m {__package__}.claims",
    description=__doc__,
    formatter_class=argparse.RawDescriptionHelpFormatter,
  )
  parser.add_argument("claim", choices=CLAIMS + ("all",))
  parser.add_argument("--out", default="results/claims", help="results directory")
  parser.add_argument(
    "--steps", type=int, default=1_000_000, help="agent steps per run (all learners together)"
  )
  parser.add_argument("--seeds", default="0-4", help="seeds: 0,1,2 or 0-4")
  parser.add_argument("--envs", default=",".join(minatar.GAMES), help="comma-separated env ids")
  parser.add_argument(
    "--variants", default="", help="comma-separated variant names to run (default: all)"
  )
  parser.add_argument("--tiny", action="store_true", help="CI size: a 16-unit fc layer")
  parser.add_argument(
    "--settings",
    choices=minatar.SETTINGS,
    default="learning",
    help="base configs: PureJaxRL's MLP with tuned Adam ('learning') or "
    "the papers' hyper-parameters on the MinAtar conv torso",
  )
  parser.add_argument(
    "--lr_scale",
    type=float,
    default=1.0,
    help="multiplies every variant's base learning rate (sensitivity)",
  )
  parser.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
  parser.add_argument(
    "--compile_cache", default="", help="JAX persistent compilation cache directory ('' = none)"
  )
  parser.add_argument(
    "--no_verdict",
    action="store_true",
    help="runs and report.md only: no verdict (which needs 3 seeds or more per variant)",
  )
  parser.add_argument(
    "--summarise_only",
    action="store_true",
    help="only rewrite report and verdict from existing results",
  )
  return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
  from galax.results.experiment import parse_seeds

  args = _parse(sys.argv[1:] if argv is None else argv)
  if args.compile_cache:  # seeds of one variant compile the same programs
    import jax

    jax.config.update("jax_compilation_cache_dir", args.compile_cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
  try:
    if args.steps <= 0:
      raise ValueError(f"--steps must be > 0, got {args.steps}.")
    seeds = parse_seeds(args.seeds)
    env_ids = [e.strip() for e in args.envs.split(",") if e.strip()]
    if not env_ids:
      raise ValueError(f"--envs={args.envs!r} names no env.")
    for claim in CLAIMS if args.claim == "all" else (args.claim,):
      if args.summarise_only:
        summarise(claim, os.path.join(args.out, claim), args.resamples, not args.no_verdict)
      else:
        only = [v.strip() for v in args.variants.split(",") if v.strip()]
        run_claim(
          claim,
          env_ids,
          seeds,
          args.steps,
          args.out,
          args.tiny,
          args.resamples,
          only,
          lr_scale=args.lr_scale,
          settings=args.settings,
          verdict=not args.no_verdict,
        )
      written = "report.md" if args.no_verdict else "report.md and verdict.md"
      print(f"wrote {os.path.join(args.out, claim)}/{written}")
  except (ValueError, FileNotFoundError) as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
  main()
