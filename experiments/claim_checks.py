"""What each claim compares, per game: `CHECKS[claim](variants, target, resamples)` ->
(numbers as JSON-able dict, markdown lines). `variants` maps a variant name (see
experiments/claims.py) to its runs; `target` is the game's required-time target. Each
comparison's label and each claim's verdict come from `galax.results.verdict`.

A verdict needs `MIN_SEEDS_FOR_CI` (3) seeds of every variant: from fewer, a 95% bootstrap
CI is zero-width (1 seed) or about [min, max] (2), and a label read from it means nothing.
`write_verdict` refuses, in one line, before it writes anything (`check_seeds`).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from galax.results import paper_protocols as protocols
from galax.results import verdict as rule
from galax.results.tables import eval_series

from .verdicts import (  # relative: `experiments` or `galax.experiments`
  Run,
  by_game,
  compare,
  consensus_check,
  finals,
  format_compare,
  game_target,
  json_finite,
  required_times,
  variant_table,
  welch_two_groups,
)

Variants = dict[str, list[Run]]
Check = Callable[[Variants, float, int], tuple[dict[str, Any], list[str]]]


def _mean_time(group: Sequence[Run], target: float) -> float:
  """Mean required time over seeds; inf unless every seed reached the target."""
  t = required_times(group, target)
  return float(t.mean()) if np.all(np.isfinite(t)) else float("inf")


def paac(variants: Variants, target: float, resamples: int) -> tuple[dict, list[str]]:
  """Final returns equal across n_e; required time lower than n_e = 16's at every larger n_e."""
  names = sorted((v for v in variants if v.startswith("paac_ne")), key=lambda v: int(v[7:]))
  if "paac_ne16" not in variants:
    return {}, ["(no n_e = 16 baseline)"]
  checks, lines = {}, ["Each n_e against n_e = 16:"]
  for name in names[1:]:
    checks[name] = compare(
      variants[name], variants["paac_ne16"], target, resamples, claims=("equal", "lower")
    )
    lines.append(format_compare(f"{name} vs paac_ne16", checks[name]))
  cells = {n[5:]: checks[n] for n in names[1:]}
  flat = rule.overall({n: c["final_verdict"] for n, c in cells.items()})
  falling = rule.overall({n: c["time_verdict"] for n, c in cells.items()})
  times = [_mean_time(variants[n], target) for n in names]
  checks.update(mean_required_times=dict(zip(names, times)), finals_equal=flat, time_falls=falling)
  lines += [
    "",
    f"- mean required time by n_e ({', '.join(names)}): "
    + ", ".join(f"{t:.0f}s" if np.isfinite(t) else "-" for t in times),
    f"- final return equal to n_e = 16's: {flat}; required time below n_e = 16's: {falling}",
  ]
  return checks, lines


def gala(variants: Variants, target: float, resamples: int) -> tuple[dict, list[str]]:
  """GALA vs all-reduce and A3C; topologies; consensus distance inside Prop. 1's bound."""
  checks, lines = {}, []
  for gossip in (v for v in ("gala_ring", "gala_exponential", "gala_full") if v in variants):
    for base in (b for b in ("allreduce", "a3c") if b in variants):
      checks[f"{gossip}_vs_{base}"] = c = compare(
        variants[gossip], variants[base], target, resamples, claims=("at least", None)
      )
      lines.append(format_compare(f"{gossip} vs {base}", c))
    checks[f"{gossip}_consensus"] = c = consensus_check(variants[gossip])
    lines.append(
      f"- {gossip} consensus distance inside Prop. 1's bound in {c['within']} of "
      f"{c['rows']} logged rows (max distance / bound {c['worst_ratio']:.3g})"
    )
  return checks, lines


def hts(variants: Variants, target: float, resamples: int) -> tuple[dict, list[str]]:
  """HTS-A2C vs A2C and HTS-PPO vs PPO at equal env steps."""
  checks, lines = {}, []
  for base in ("a2c", "ppo"):
    if base in variants and f"hts_{base}" in variants:
      checks[f"hts_{base}_vs_{base}"] = c = compare(
        variants[f"hts_{base}"], variants[base], target, resamples, claims=("equal", None)
      )
      lines.append(format_compare(f"hts_{base} vs {base}", c))
  return checks, lines


def simulated_times(run: Run) -> list[float]:
  """Per evaluation: the simulated time of the updates before it (stragglers law).

  Update u takes the m-th smallest of the n learners' step times drawn for u (m kept;
  m = n when every gradient is waited for), from the same key stream as training.
  """
  from galax.parallel.stragglers import StragglerModel

  cfg = run["config"]
  n, s = cfg["num_learners"], cfg["stragglers"]
  kept = s["num_kept"] or n
  model = StragglerModel(n, kept, s["step_time"], s["scale"], cfg["seed"])
  per_update = n * cfg["envs_per_learner"] * cfg["t_max"]
  updates = max(e["env_steps"] for e in run["evaluations"]) // per_update
  times = np.asarray(jax.vmap(lambda u: model.draw(u)[0])(jnp.arange(updates)))
  waits = np.sort(times, axis=1)[:, kept - 1]
  elapsed = np.concatenate([[0.0], np.cumsum(waits)])
  return [float(elapsed[e["env_steps"] // per_update]) for e in run["evaluations"]]


def equal_time(drop_final: np.ndarray, wait_at_limit: np.ndarray) -> rule.Comparison:
  """Keep 3 of 4 - wait for 4 of 4 at equal simulated time: the difference of the means with
  the Verdicts page's 95% Welch t-interval (margin: 10% of waiting's mean)."""
  diff = welch_two_groups(drop_final, wait_at_limit, "diff")
  return rule.difference(*diff, baseline=float(np.mean(wait_at_limit)))


def ba3c(variants: Variants, target: float, resamples: int) -> tuple[dict, list[str]]:
  """Adam above RMSProp at large batch; dropping 1 of 4 costs nothing at equal steps (no worse
  than waiting, by the margin) and gains at equal simulated time."""
  checks, lines = {}, []
  if "adam_large" in variants and "rmsprop_large" in variants:
    checks["adam_vs_rmsprop"] = c = compare(
      variants["adam_large"], variants["rmsprop_large"], target, resamples, claims=("higher", None)
    )
    lines.append(format_compare("adam_large vs rmsprop_large (training seconds)", c))
  if "drop_1" in variants and "wait_all" in variants:
    drop, wait = variants["drop_1"], variants["wait_all"]
    sim = ([simulated_times(r) for r in drop], [simulated_times(r) for r in wait])
    checks["drop_vs_wait_simulated"] = c = compare(
      drop, wait, target, resamples, sim, claims=("at least", "lower")
    )
    lines.append(
      format_compare(
        "drop_1 vs wait_all at equal env steps (required time in simulated step-time units)", c
      )
    )
    limit = float(np.mean([t[-1] for t in sim[0]]))  # when dropping finishes its steps
    at_limit = np.array(
      [protocols.final_time_metric(t, eval_series(r)[1], limit) for t, r in zip(sim[1], wait)]
    )
    drop_final = finals(drop)
    gain = equal_time(drop_final, at_limit)
    checks.update(
      simulated_limit=limit,
      wait_at_limit=at_limit.tolist(),
      drop_final=drop_final.tolist(),
      equal_time_diff=gain[:3],
      equal_time_label=rule.label(gain),
      equal_time_verdict=rule.verdict("higher", gain),
      simulated_speedup=float(np.mean([w[-1] for w in sim[1]]) / limit),
    )
    lines.append(
      f"- at equal simulated time ({limit:.0f} units, when dropping finishes): "
      f"keep 3 of 4 {drop_final.mean():.2f} vs wait for 4 of 4 "
      f"{at_limit.mean():.2f} (final time metric), difference "
      f"{rule.describe(gain)}, claimed higher: "
      f"{checks['equal_time_verdict']}; waiting needs "
      f"{checks['simulated_speedup']:.2f}x the simulated time for the same steps"
    )
  return checks, lines


CHECKS: dict[str, Check] = dict(paac=paac, gala=gala, hts=hts, ba3c=ba3c)


def check_seeds(runs: Sequence[Run]) -> None:
  """Raises a one-line ValueError where a variant of a game has fewer than
  `MIN_SEEDS_FOR_CI` seeds (no verdict is labelled from them)."""
  least = protocols.MIN_SEEDS_FOR_CI
  short = []
  for game, variants in by_game(runs).items():
    for variant, group in sorted(variants.items()):
      seeds = sorted({int(r["seed"]) for r in group})
      if len(seeds) < least:
        listed = ",".join(map(str, seeds))
        short.append(f"{game}_{variant} has {len(seeds)} (seed {listed})")
  if short:
    more = f" and {len(short) - 3} more" if len(short) > 3 else ""
    raise ValueError(
      f"no verdict from fewer than {least} seeds per variant: "
      f"{'; '.join(short[:3])}{more} (a 95% CI from fewer is zero-width or [min, max]); "
      f"run --seeds=0-{least - 1} or more, or --no_verdict for the report alone."
    )


def write_verdict(
  claim: str, runs: Sequence[Run], out_dir: str, resamples: int = 10_000
) -> dict[str, Any]:
  """Writes verdict.md and verdict.json for a claim; returns the JSON data. Raises
  ValueError (one line, nothing written) where a variant has fewer than
  `MIN_SEEDS_FOR_CI` seeds (`check_seeds`)."""
  check_seeds(runs)
  lines = [f"# Claim: {claim}", ""]
  data: dict[str, Any] = dict(claim=claim, games={})
  for game, variants in by_game(runs).items():
    target = game_target(variants)
    lines += [f"## {game}", "", *variant_table(variants, target, resamples), ""]
    checks, text = CHECKS[claim](variants, target, resamples)
    lines += text + [""]
    data["games"][game] = dict(
      target=target, checks=checks, finals={v: finals(g).tolist() for v, g in variants.items()}
    )
  if not data["games"]:
    lines.append("No evaluated runs found.")
  os.makedirs(out_dir, exist_ok=True)
  with open(os.path.join(out_dir, "verdict.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  with open(os.path.join(out_dir, "verdict.json"), "w") as f:
    json.dump(json_finite(data), f, indent=1, allow_nan=False)
  return data
