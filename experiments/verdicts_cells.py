"""Where each Verdicts cell of docs/results.md keeps its per-seed numbers, read from disk.

Every cell is one comparison of a variant A with a baseline B: the per-seed scores of each
(read from the stored runs.json, verdict.json or seed JSON files under docs/results/), the
claim, the statistic (a difference or a ratio of means) and the metric. `experiments.
verdicts_page` puts the Welch interval and the rule of `galax.results.verdict` on each.

A cell whose per-seed numbers are not on disk (required times, steps to a threshold,
single timings) keeps `a = b = None` and, where the disk holds one, a stored point estimate
(`estimate`): it gets no interval, so it is inconclusive by the rule.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

import numpy as np

from galax.results import best

from . import gala_sweep

RESULTS = os.path.join(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "results"
)
TRAIN, EVAL, TIME, SPEED = "train", "eval", "time", "speed"
Row = dict[str, Any]  # one run's stored record: its score and, where recorded, commit / dirty


class Cell(NamedTuple):
  id: str
  name: str
  claim: str  # one of galax.results.verdict.CLAIMS
  op: str  # "diff" or "ratio"
  metric: str  # TRAIN, EVAL, TIME or SPEED
  source: str  # the data's path under docs/results/
  a: list[Row] | None = None
  b: list[Row] | None = None
  estimate: float | None = None  # a stored point value where no per-seed data is on disk
  pooled: bool = True  # counts in the claim's across-games aggregate
  censored: tuple[int, int] = (0, 0)  # A's, B's runs counted at their cap (verdict.stands)

  def scores(self, side: str) -> np.ndarray:
    return np.array([r["score"] for r in getattr(self, side)], float)


def load(path: str) -> Any:
  full = os.path.join(RESULTS, path)
  try:
    with open(full) as f:
      return json.load(f)
  except (OSError, ValueError) as e:
    raise SystemExit(f"verdicts: cannot read {full}: {e}") from None


def _plain(values) -> list[Row]:
  return [dict(score=float(v)) for v in values]


# ---- docs/results/gala_best/runs.json and ba3c_best/runs.json: one row per run ----------


def _rows(path: str, group_of) -> dict[tuple[str, str, float], dict[int, Row]]:
  found: dict[tuple[str, str, float], dict[int, Row]] = {}
  for row in load(path):
    if row.get("train_mean_return") is None:
      continue
    key = (group_of(row["folder"].split("/")[0]), row["game"].split("-")[0], float(row["lr"]))
    found.setdefault(key, {})[int(row["seed"])] = dict(
      score=float(row["train_mean_return"]), commit=row.get("commit"), dirty=row.get("dirty")
    )
  return found


def _at(runs, group: str, game: str, lr: float, seeds=None) -> list[Row]:
  for (g, gm, r), found in runs.items():
    if g == group and gm == game and np.isclose(r, lr, rtol=1e-6, atol=0):
      return [found[s] for s in sorted(found) if seeds is None or s in seeds]
  return []


def _best(runs, group: str, game: str) -> float | None:
  """`galax.results.best.best_rate` on these rows' scores."""
  scores = {key: {s: row["score"] for s, row in found.items()} for key, found in runs.items()}
  return best.best_rate(scores, group, game)


GAMES = ("Breakout", "SpaceInvaders")


def _rate(lr: float) -> str:
  """0.0055 -> '5.5e-3'."""
  mantissa, exponent = f"{lr:e}".split("e")
  return f"{float(mantissa):g}e{int(exponent)}"


GALA = "gala_best/runs.json"


def gala_best_cells() -> list[Cell]:
  """1a-1f: GALA-A2C ring against all-reduce A2C and A3C (gala_best/scripts/gala_best.py)."""
  runs, cells = _rows(GALA, best.group_of), []
  held = tuple(range(3, 10))
  for id_, base in (("1a", "allreduce"), ("1b", "a3c")):
    for held_out in (False, True):
      for game in GAMES:
        ring, other = _best(runs, "ring", game), _best(runs, base, game)
        seeds = held if held_out else None
        a, b = _at(runs, "ring", game, ring, seeds), _at(runs, base, game, other, seeds)
        name = game + (" (seeds 3-9)" if held_out else "")
        cells.append(Cell(id_, name, "at least", "diff", TRAIN, GALA, a, b, pooled=not held_out))
  for game in GAMES:  # 1c: one shared base rate, the sweep's seeds 0-2
    for lr in sorted({r for g, gm, r in runs if g == "ring" and gm == game}):
      a, b = _at(runs, "ring", game, lr, (0, 1, 2)), _at(runs, "allreduce", game, lr, (0, 1, 2))
      if a and b:
        cells.append(Cell("1c", f"{game} {_rate(lr)}", "at least", "diff", TRAIN, GALA, a, b))
  for game in GAMES:  # 1d: the ring without the sqrt rule, at the ring's best rate
    lr = _best(runs, "ring", game)
    a = _at(runs, "ring_noscale", game, lr)
    b = _at(runs, "allreduce", game, _best(runs, "allreduce", game))
    cells.append(Cell("1d", game, "at least", "diff", TRAIN, GALA, a, b))
  for id_, base in (("1e", "table2_allreduce"), ("1f", "table2_a3c")):
    for game in GAMES:  # GALA Table 2's optimisation: at its 7e-4, and each at its best
      a, b = _at(runs, "table2_ring", game, 7e-4), _at(runs, base, game, 7e-4)
      cells.append(Cell(id_, f"{game} 7e-4", "at least", "diff", TRAIN, GALA, a, b))
    for game in GAMES:
      a = _at(runs, "table2_ring", game, _best(runs, "table2_ring", game))
      b = _at(runs, base, game, _best(runs, base, game))
      cells.append(Cell(id_, f"{game} best", "at least", "diff", TRAIN, GALA, a, b))
  return cells


def gala_learning_cells() -> list[Cell]:
  """1c's 5-seed cells: the 2026-11-25 runs at 1e-2 and 3e-3 (final evaluation return)."""
  cells = []
  for folder, lr in (("gala_learning", "1e-2"), ("gala_learning_lr03", "3e-3")):
    path = f"{folder}/verdict.json"
    for game, data in load(path)["games"].items():
      f = data["finals"]
      name = f"{_game(game)} {lr} (5 seeds)"
      cells.append(
        Cell("1c", name, "at least", "diff", EVAL, path, _plain(f["gala_ring"]),
             _plain(f["allreduce"]), pooled=False)
      )  # fmt: skip
  return cells


def fig1a_cells() -> list[Cell]:
  """1g, 1h: GALA's Fig. 1a, GALA-A2C against A2C per simulator count (gala_sweep)."""
  cells = []
  for id_, folder, same in (
    ("1g", "gala_sweep_spaceinvaders", True),
    ("1h", "gala_sweep_spaceinvaders_best", False),
  ):
    path = f"{folder}/runs.json"
    runs = load(path)
    sims = sorted({int(k.split("|")[1]) for k in runs})
    table = gala_sweep.collect(runs, sims, same_rate=same)
    for n in sims:
      a, b = table["GALA-A2C"].get(n), table["A2C"].get(n)
      if n != gala_sweep.ENVS_PER_LEARNER and a and b:
        cells.append(Cell(id_, str(n), "higher", "diff", TRAIN, path, _plain(a), _plain(b)))
  return cells


def _seed_rows(folder: str) -> dict[tuple[str, str], list[Row]]:
  """{(game, gradient point or 'ppo'): rows} from a galax.results.sweep folder's seed JSONs."""
  found: dict[tuple[str, str], list[Row]] = {}
  for sub in sorted(os.listdir(folder)):
    for path in sorted(_walk(os.path.join(folder, sub))):
      with open(path) as f:
        run = json.load(f)
      config, git = run["config"], run.get("git") or {}
      game = _game(config["env"]["id"].split("/")[-1])
      point = config["hts"]["gradient_point"] if config["algorithm"] == "hts_ppo" else "ppo"
      found.setdefault((game, point), []).append(
        dict(
          score=float(run["train_mean_return"]), commit=git.get("commit"), dirty=git.get("dirty")
        )
      )
  return found


def _walk(top: str):
  for root, _, files in os.walk(top):
    yield from (
      os.path.join(root, f) for f in files if f.startswith("seed") and f.endswith(".json")
    )


def hts_point_cells() -> list[Cell]:
  """2a (stale, Eq. 6 read literally) and 2b (current) HTS-PPO against PPO (the seed JSONs
  experiments/hts_gradient_point.py reads, with their commits)."""
  base = os.path.join(RESULTS, "hts_gradient_point")
  runs = {}
  for setting, folders in (
    ("a", ("a6_ppo", "a6_hts_ppo")),
    ("b", ("b_ppo", "b_hts_ppo_current", "b_hts_ppo_stale")),
  ):
    for folder in folders:
      for (game, point), rows in _seed_rows(os.path.join(base, folder)).items():
        runs[(setting, game, point)] = rows
  cells = []
  for id_, point in (("2a", "stale"), ("2b", "current")):
    for setting in ("a", "b"):
      for game in GAMES:
        a, b = runs.get((setting, game, point)), runs.get((setting, game, "ppo"))
        cells.append(
          Cell(id_, f"{game} ({setting})", "equal", "diff", TRAIN, "hts_gradient_point/", a, b)
        )
  return cells


# ---- verdict.json files of experiments.claims (final evaluation return per seed) --------


def _game(key: str) -> str:
  return {"breakout": "Breakout", "spaceinvaders": "SpaceInvaders"}.get(key, key.split("-")[0])


def _claims(id_: str, folders, claim: str, pairs, name="{game}", pooled=True) -> list[Cell]:
  """One cell per game of each verdict.json in `folders` and (label, A, B) in `pairs`; A or
  B a variant of `finals` or a per-seed list among `checks`."""
  cells = []
  for folder in folders:
    path = f"{folder}/verdict.json"
    for game, data in load(path)["games"].items():
      values = {**data["checks"], **data["finals"]}
      for label, a, b in pairs:
        if a in values and b in values:
          text = name.format(game=_game(game), label=label).strip()
          cells.append(
            Cell(id_, text, claim, "diff", EVAL, path, _plain(values[a]), _plain(values[b]),
                 pooled=pooled)
          )  # fmt: skip
  return cells


def _times(id_: str, folders, variants, name="{game} {label}") -> list[Cell]:
  """Required-time ratios against n_e = 16: only the mean times are on disk (no seeds)."""
  cells = []
  for folder in folders:
    path = f"{folder}/verdict.json"
    for game, data in load(path)["games"].items():
      times = data["checks"].get("mean_required_times") or {}
      for v in variants:
        if v in times and "paac_ne16" in times:
          text = name.format(game=_game(game), label=f"n_e={v[7:]}").strip()
          est = times[v] / times["paac_ne16"]
          cells.append(Cell(id_, text, "lower", "ratio", TIME, path, estimate=est))
  return cells


NE = ("paac_ne32", "paac_ne64", "paac_ne128")
DROP = (("", "drop_1", "wait_all"),)
AT_TIME = (("", "drop_final", "wait_at_limit"),)


def claims_cells() -> list[Cell]:
  ne = [(f"n_e={v[7:]}", v, "paac_ne16") for v in NE]
  topologies = [(t, f"gala_{t}", "allreduce") for t in ("ring", "exponential", "full")]
  return [
    *_claims("2c", ["hts_learning"], "equal", [("", "hts_ppo", "ppo")]),
    *_claims("2d", ["hts_a2c_learning_lr03"], "equal", [("", "hts_a2c", "a2c")]),
    *_claims("2e", ["hts_a2c_learning"], "equal", [("", "hts_a2c", "a2c")]),
    *_claims("3a", ["paac_authors"], "equal", ne, name="{label}", pooled=False),
    *_claims("3a", ["paac_authors"], "lower", [("n_e=256", "paac_ne256", "paac_ne16")],
             name="{label}", pooled=False),
    *_claims("3b", ["paac_learning"], "equal", ne[2:], name="{game} {label}"),
    *_times("3c", ["paac_learning"], NE),
    *_claims("3d", ["paac_learning_adam"], "equal", ne[2:], name="{game} {label}"),
    *_times("3e", ["paac_authors"], (*NE, "paac_ne256"), name="{label}"),
    *_claims("4b", ["ba3c_learning"], "higher", [("1x", "adam_large", "rmsprop_large")],
             name="{game} {label}"),
    *_claims("4b", ["ba3c_learning_lr4"], "higher", [("4x", "adam_large", "rmsprop_large")],
             name="{game} {label}"),
    *_claims("4c", ["ba3c_learning"], "equal", DROP),
    *_claims("4d", ["ba3c_learning"], "higher", AT_TIME),
    *_claims("p1a", ["gala_5m_topologies", "gala_spaceinvaders_2m"], "at least", topologies,
             name="{game} {label}"),
    *[Cell("p1b", t, "at least", "ratio", TIME, "gala_5m_topologies/verdict.json")
      for t in ("ring", "exponential", "full")],
    *_claims("p2a", ["hts_2m", "hts_spaceinvaders_1m"], "equal", [("", "hts_a2c", "a2c")]),
    *_claims("p2b", ["hts_2m", "hts_spaceinvaders_1m"], "equal", [("", "hts_ppo", "ppo")]),
    *_claims("p3a", ["paac_2m", "paac_spaceinvaders_1m"], "equal", ne, name="{game} {label}"),
    *_times("p3b", ["paac_2m"], NE),
    *_claims("p4a", ["ba3c_2m", "ba3c_spaceinvaders_1m"], "higher",
             [("", "adam_large", "rmsprop_large")]),
    *_claims("p4b", ["ba3c_2m", "ba3c_spaceinvaders_1m"], "equal", DROP),
    *_claims("p4c", ["ba3c_2m", "ba3c_spaceinvaders_1m"], "higher", AT_TIME),
  ]  # fmt: skip


# ---- 2f: single timings; BA3C best against best (ba3c_best/runs.json) ------------------

DEVICE = "h200_2026-11-26_device/summary.json"


def timing_cells() -> list[Cell]:
  """2f: HTS over synchronous steps/s, one timing each (no seeds, so no interval). The
  2-core CPU timings are in docs/benchmarks.md's tables only, not in a data file."""
  cells = [
    Cell("2f", name, "higher", "ratio", SPEED, "(docs/benchmarks.md, no data file)")
    for name in ("Pong 16 envs", "Pong 64 envs", "GFootball 16 envs", "GFootball 64 envs")
  ]
  result = load(DEVICE)["phases"]["hts_vs_sync"]["result"]
  for key, name in (("atari", "Pong"), ("football", "GFootball")):
    r = result[key]
    name = f"{name} {r['num_envs']} envs, H200 box"
    cells.append(Cell("2f", name, "higher", "ratio", SPEED, DEVICE, estimate=r["hts_over_sync"]))
  return cells


BA3C = "ba3c_best/runs.json"


def ba3c_best_cells() -> list[Cell]:
  """4a (Adam over RMSProp, best against best) and 4e (linear rate scaling with Adam)."""
  runs, cells = _rows(BA3C, best.group_of), []
  every, held = tuple(range(6)), (3, 4, 5)
  for seeds, suffix in ((every, ""), (held, " (seeds 3-5)")):
    for game in GAMES:
      a = _at(runs, "adam", game, _best(runs, "adam", game), seeds)
      b = _at(runs, "rmsprop", game, _best(runs, "rmsprop", game), seeds)
      cells.append(
        Cell("4a", game + suffix, "higher", "diff", TRAIN, BA3C, a, b, pooled=not suffix)
      )
  for game in GAMES:
    eta = _best(runs, "adam_1x32", game)
    linear = _at(runs, "adam", game, 4 * eta, every)
    for what, b in (
      ("4 eta - eta", _at(runs, "adam", game, eta, every)),
      ("4 eta - 1 x 32", _at(runs, "adam_1x32", game, eta, every)),
    ):
      cells.append(Cell("4e", f"{game} {what}", "lower", "diff", TRAIN, BA3C, linear, b))
  return cells
