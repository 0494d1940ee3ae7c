"""The scripts of finished studies, kept beside their results: each still runs, or its
config still loads, as it did for the figures on its page (docs/archive/results_history/
scripts/README.md, docs/results/pong_paac_nearest/)."""

import importlib.util
import os

import pytest

from galax import config as config_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "docs", "archive", "results_history", "scripts")
NEAREST = os.path.join(ROOT, "docs", "results", "pong_paac_nearest", "pong_paac_nearest.py")


def _load(path: str):
  spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_pong_paac_nearest_is_pong_paac_with_the_authors_resize():
  nearest, paac = config_lib.load(NEAREST).to_dict(), config_lib.load("pong_paac").to_dict()
  assert nearest["env"].pop("options") == {"use_inter_area_resize": False}
  paac["env"].pop("options")
  assert nearest == paac


def test_pong_step_sizes_variants_are_valid_pong_paac_configs(capsys):
  script = _load(os.path.join(SCRIPTS, "pong_step_sizes.py"))
  args = script.parse(["--variants=paac,sb3", "--calls=8"])
  assert (args.variants, args.calls) == (["paac", "sb3"], 8)
  for overrides in script.VARIANTS.values():
    config_lib.validate(config_lib.load("pong_paac", updates_per_call=50, **overrides))
  with pytest.raises(SystemExit) as exit_info:
    script.parse(["--variants=paac,adam"])
  err = capsys.readouterr().err.strip()
  assert exit_info.value.code == 2 and err.startswith("error: ") and "adam" in err
  assert "\n" not in err


@pytest.mark.slow
def test_gala_step_size_prints_each_variant_and_the_ratio(capsys):
  script = _load(os.path.join(SCRIPTS, "gala_step_size.py"))
  # CartPole: the script is the subject, not the game (MinAtar's env compiles ~4 s longer).
  script.main(
    ["--env=gymnax/CartPole-v1", "--windows=2", "--window=2", "--variants=allreduce,gala_full"]
  )
  out = capsys.readouterr().out
  for name in ("allreduce", "gala_full"):
    line = next(l for l in out.splitlines() if l.startswith(name + " "))
    values = [float(x) for x in line.split("|")[0].split()[1:]]
    assert len(values) == 2 and all(v > 0 for v in values)
  assert "gala_full / allreduce: " in out
