"""benchmarks/device.py's summary: summary.json (every phase as recorded) and summary.md (a
table of the phases and the ratios the figures give)."""

from __future__ import annotations

import json
import os
from typing import Any


def last_line(out: str, name: str) -> str:
  """The last non-empty line of a phase's log (a failure's one-line reason)."""
  try:
    with open(os.path.join(out, "logs", f"{name}.log"), errors="replace") as f:
      lines = [l.strip() for l in f if l.strip()]
  except OSError:
    return "no log"
  return lines[-1][:300] if lines else "no output"


def _figure(phases: dict[str, Any], name: str, *keys: str) -> Any:
  value = phases.get(name, {}).get("result", {})
  for key in keys:
    if not isinstance(value, dict) or key not in value:
      return None
    value = value[key]
  return value


def _envs(phases: dict[str, Any], name: str) -> int | None:
  return _figure(phases, name, "num_envs")


def comparisons(phases: dict[str, Any]) -> dict[str, float]:
  """Ratios between phases, where both figures exist: galax / raw envpool at the same env
  count (sync), galax / CleanRL, galax / rejax, HTS / sync."""
  out = {}
  for name, key in (("pong_fast", "steps_per_s"), ("pong_many_to_18", "steps_per_s_first")):
    sps, n = _figure(phases, name, key), _envs(phases, name)
    raw = _figure(phases, "raw_envpool", f"sync_{n}")
    if sps and raw:
      out[f"{name} / raw envpool sync at {n} envs"] = sps / raw
  galax, cleanrl = (
    _figure(phases, "pong_fast", "steps_per_s"),
    _figure(phases, "pong_cleanrl", "steps_per_s"),
  )
  if galax and cleanrl:
    out["pong_fast / CleanRL PPO"] = galax / cleanrl
  for key, value in (_figure(phases, "minatar_galax") or {}).items():
    peer = _figure(phases, "minatar_rejax", key, "steps_per_second")
    if peer:
      out[f"MinAtar PPO galax / rejax, {key.replace('_', ' ')}"] = value["steps_per_second"] / peer
  for suite, pair in (("atari", "HTS-A2C / A2C, Pong"), ("football", "HTS-PPO / PPO, GFootball")):
    ratio = _figure(phases, "hts_vs_sync", suite, "hts_over_sync")
    if ratio:
      out[pair] = ratio
  return out


def markdown(report: dict[str, Any]) -> str:
  phases = report["phases"]
  env = phases.get("env", {}).get("result", {})
  lines = [
    f"# galax device benchmark ({report['scale']})",
    "",
    f"Started {report['started']}; {report.get('wall_s', 0):.0f} s of a "
    f"{report['budget_s']:.0f} s budget. Machine: {env.get('device', '?')}; "
    f"{env.get('cpu_count', '?')} CPUs ({env.get('cpu', '?')}); "
    f"jax {env.get('jax', '?')}; commit {env.get('commit', '?')}.",
    "",
    f"`{report['command']}`",
    "",
    "| phase | status | seconds | figures or note |",
    "| --- | --- | ---: | --- |",
  ]
  for name, r in phases.items():
    text = r["summary"] if r["status"] == "ok" else r["note"]
    if r["status"] == "timeout" and r["result"]:
      text += "; measured until then: " + ", ".join(sorted(r["result"]))[:200]
    lines.append(f"| {name} | {r['status']} | {r['wall_s']:.0f} | {text.replace('|', '/')} |")
  ratios = report.get("comparisons", {})
  if ratios:
    lines += ["", "| comparison | ratio |", "| --- | ---: |"]
    lines += [f"| {k} | {v:.2f} |" for k, v in ratios.items()]
  return "\n".join(lines) + "\n"


def write(out: str, report: dict[str, Any]) -> None:
  report["comparisons"] = comparisons(report["phases"])
  with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(report, f, indent=1)
  with open(os.path.join(out, "summary.md"), "w") as f:
    f.write(markdown(report))
