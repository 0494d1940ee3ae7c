"""The report's summary across games: rliable's aggregates (Agarwal et al. 2021).

When a report covers two or more games (envs) with evaluated experiments, `galax.results.report`
adds a section "Across games" and the plot `performance_profile.png`:

  algorithm     a (method, simulators) pair; it is summarised where it has exactly one
                evaluated experiment in every game (a partial set of games would not be
                comparable), others are listed as left out
  score         a run's final metric (`protocols.final_metric`), normalised per game g,
                (score - low_g) / (high_g - low_g), with
                  low_g   `--random ENV=SCORE`, else the earliest policies' return: the
                          mean first evaluation over all runs of g
                  high_g  `--reference ENV=SCORE`, else the best experiment's mean final
                          metric in g
                a game whose high equals its low cannot be normalised and is left out
  IQM           the interquartile mean of all runs x games scores, with a 95% stratified
                bootstrap CI (runs resampled within each game), `across_games.aggregate_iqm`
  profile       the fraction of runs x games with normalised score > tau, with pointwise
                95% CIs from the same bootstrap, `across_games.performance_profile`
  improvement   for each pair of algorithms, P(X > Y): the chance that a run of X beats a
                run of Y on a game, averaged over games, with the same bootstrap's CI
                (`across_games.probability_of_improvement`), labelled by
                `galax.results.verdict` (null 0.5)
"""

from __future__ import annotations

import itertools
import os
from typing import NamedTuple, Sequence

import numpy as np

from galax.results import across_games
from galax.results import paper_protocols as protocols
from galax.results import verdict as rule
from galax.results.seed_runs import RunRecord

PROFILE_FILE = "performance_profile.png"
PROFILE_POINTS = 101  # taus on the profile's grid


class GameScores(NamedTuple):
  """What the section summarises: per algorithm its runs' final metrics per game."""

  games: list[str]  # env ids, sorted
  low: list[float]  # per game: the normalisation's 0
  high: list[float]  # per game: its 1
  scores: dict[str, list[list[float]]]  # algorithm -> [game][run] final metrics
  notes: list[str]  # what was left out, and why


def _algorithm(run: RunRecord) -> str:
  return f"{run['method']}, {run['simulators']} simulators"


def _finals(group: Sequence[RunRecord]) -> list[float]:
  """The runs' final metrics (a run whose evaluations lost every episode has none)."""
  finals = [protocols.final_metric([e["returns"] for e in r["evaluations"]]) for r in group]
  return [f for f in finals if np.isfinite(f)]


def _normalisation(
  groups: list[list[RunRecord]], low: float | None, high: float | None
) -> tuple[float, float]:
  """(low, high) of one game: the given ones, else the first evaluations and the best."""
  if low is None:
    firsts = [
      np.mean(r["evaluations"][0]["returns"])
      for g in groups
      for r in g
      if r["evaluations"][0]["returns"]
    ]
    low = float(np.mean(firsts)) if firsts else float("nan")
  if high is None:
    high = max(float(np.mean(f)) for f in map(_finals, groups) if f)
  return low, high


def game_scores(
  evaluated: dict[str, list[RunRecord]], references: dict[str, float], randoms: dict[str, float]
) -> GameScores | None:
  """The across-games data of the evaluated experiments; None for fewer than two games."""
  by_game: dict[str, dict[str, list[list[RunRecord]]]] = {}
  for group in evaluated.values():
    if _finals(group):
      by_game.setdefault(group[0]["env_id"], {}).setdefault(_algorithm(group[0]), []).append(group)
  if len(by_game) < 2:
    return None
  games, low, high, notes = [], [], [], []
  for game in sorted(by_game):
    lo, hi = _normalisation(
      [g for gs in by_game[game].values() for g in gs], randoms.get(game), references.get(game)
    )
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo == hi:
      notes.append(f"{game}: left out, its low and high scores ({lo:g}, {hi:g}) do not normalise")
      continue
    games.append(game)
    low.append(lo)
    high.append(hi)
  scores = {}
  # An aggregate needs two games that normalise; with fewer the section says so.
  labels = sorted({a for per in by_game.values() for a in per}) if len(games) > 1 else []
  for label in labels:
    counts = [len(by_game[g].get(label, [])) for g in games]
    if all(c == 1 for c in counts):
      scores[label] = [_finals(by_game[g][label][0]) for g in games]
    else:
      why = (
        "has several experiments in a game"
        if max(counts, default=0) > 1
        else f"ran in {sum(c > 0 for c in counts)} of {len(games)} games"
      )
      notes.append(f"{label}: left out, it {why}")
  return GameScores(games, low, high, scores, notes)


def section(data: GameScores | None, resamples: int) -> list[str]:
  """The markdown section (none for a report of one game)."""
  if data is None:
    return []
  lines = [
    "",
    "## Across games (IQM, rliable)",
    "",
    "Final metrics normalised per game, (score - low) / (high - low); low: the "
    "mean return of the runs' first evaluation unless --random gives it, "
    "high: the best experiment's mean final metric unless --reference gives it. "
    "IQM: the mean of the middle 50% of all runs x games normalised scores; 95% CI: "
    f"stratified bootstrap (runs resampled within each game, {resamples} "
    f"resamples). The performance profile ({PROFILE_FILE}): the fraction of runs "
    "with normalised score above tau.",
    "",
    "| game | low | high |",
    "| --- | --- | --- |",
  ]
  lines += [f"| {g} | {lo:.2f} | {hi:.2f} |" for g, lo, hi in zip(data.games, data.low, data.high)]
  if len(data.games) >= 2 and data.scores:
    lines += [
      "",
      "| algorithm | games | runs | IQM | 95% CI | mean |",
      "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, scores in data.scores.items():
      iqm, lo, hi = across_games.aggregate_iqm(scores, data.low, data.high, resamples=resamples)
      mean = np.mean(np.concatenate(across_games.normalize_scores(scores, data.low, data.high)))
      lines.append(
        f"| {label} | {len(scores)} | {sum(map(len, scores))} | {iqm:.3f} "
        f"| [{lo:.3f}, {hi:.3f}] | {mean:.3f} |"
      )
    lines += improvement_table(data, resamples)
  else:
    lines += ["", "No algorithm ran in two or more games that normalise: no aggregate."]
  if data.notes:
    lines += [""] + [f"- {note}" for note in data.notes]
  return lines


def improvement_table(data: GameScores, resamples: int) -> list[str]:
  """P(X > Y) for each pair of algorithms, with its CI and label (none for one algorithm).
  Raw final metrics serve: per-game normalisation does not change which run wins."""
  if len(data.scores) < 2:
    return []
  lines = [
    "",
    "Probability of improvement P(X > Y): the chance that a run of X beats a run "
    "of Y on a game (a tie counts half), averaged over games; 95% CI: the same "
    "stratified bootstrap. Label, read in this order: 'equivalent' where the CI lies "
    f"inside 0.5 +- {rule.PROBABILITY_MARGIN}, 'different' where it excludes 0.5, else "
    "'inconclusive' (galax/results/verdict.py).",
    "",
    "| X vs Y | P(X > Y) | 95% CI | label |",
    "| --- | --- | --- | --- |",
  ]
  for x, y in itertools.combinations(data.scores, 2):
    p = rule.probability(
      *across_games.probability_of_improvement(data.scores[x], data.scores[y], resamples=resamples)
    )
    lines.append(
      f"| {x} vs {y} | {p.estimate:.2f} | [{p.low:.2f}, {p.high:.2f}] | {rule.label(p)} |"
    )
  return lines


def profile_taus(data: GameScores) -> np.ndarray:
  """The profile's grid: from min(0, lowest score) to max(1, highest score)."""
  normalised = np.concatenate(
    [
      x
      for scores in data.scores.values()
      for x in across_games.normalize_scores(scores, data.low, data.high)
    ]
  )
  return np.linspace(min(0.0, normalised.min()), max(1.0, normalised.max()), PROFILE_POINTS)


def plot_profile(data: GameScores | None, out_dir: str, resamples: int) -> list[str]:
  """performance_profile.png (none without an aggregate); returns the files written."""
  if data is None or len(data.games) < 2 or not data.scores:
    return []
  taus = profile_taus(data)
  fig, ax = new_plot(figsize=(5.5, 3.6))
  for label, scores in data.scores.items():
    frac, lo, hi = across_games.performance_profile(
      scores, data.low, data.high, taus, resamples=resamples
    )
    (line,) = ax.plot(taus, frac, label=f"{label} (n={sum(map(len, scores))})")
    ax.fill_between(taus, lo, hi, color=line.get_color(), alpha=0.25, lw=0)
  ax.set_xlabel("normalised score tau")
  ax.set_ylabel("fraction of runs with score > tau")
  ax.set_ylim(-0.05, 1.05)
  return [
    save_plot(
      fig, ax, f"Performance profile over {len(data.games)} games, 95% CIs", out_dir, PROFILE_FILE
    )
  ]


def new_plot(figsize: tuple[float, float], dpi: int = 100):
  """(figure, axes) of a plot drawn to a file: a matplotlib Figure outside pyplot, so that
  neither pyplot's backend (a notebook's inline one) nor its list of open figures changes."""
  from matplotlib.figure import Figure

  fig = Figure(figsize=figsize, dpi=dpi)
  return fig, fig.subplots()


def save_plot(fig, ax, title: str, out_dir: str, file: str) -> str:
  """The reports' finish of a plot: title, legend and grid, saved as `out_dir/file`.
  Returns `file`."""
  ax.set_title(title, fontsize=9)
  ax.legend(fontsize=7)
  ax.grid(alpha=0.3)
  fig.tight_layout()
  fig.savefig(os.path.join(out_dir, file))
  return file


def env_scores(flag: str, items: Sequence[str]) -> dict[str, float]:
  """'ENV=SCORE' items of a repeatable CLI flag (--reference, --random) -> {env: score}."""
  out = {}
  for item in items:
    env, _, score = item.rpartition("=")
    try:
      out[env] = float(score)
    except ValueError:
      env = ""
    if not env:
      raise ValueError(f"{flag} {item!r}: use ENV=SCORE.")
  return out
