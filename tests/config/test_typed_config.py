"""The typed config (issue 76): one frozen dataclass per section, every default written
once, config.json both ways, field edits on a dotted path, a d776273 run's config.json."""

import ast
import dataclasses
import json
import os

import pytest

from galax.config import base_config, from_data, load, typed, with_fields
from galax.config import resume as resume_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OLD_CONFIG = os.path.join(ROOT, "tests", "data", "config_d776273.json")  # run.py at d776273


def test_every_section_is_a_frozen_keyword_only_dataclass_with_defaults_and_meanings():
  docs = typed.field_docs()
  for cls, prefix in typed.section_types():
    params = cls.__dataclass_params__
    assert params.frozen and params.kw_only, cls
    for field in dataclasses.fields(cls):
      assert field.default is not dataclasses.MISSING, (cls, field.name)
      if not dataclasses.is_dataclass(field.default):
        assert docs.get(prefix + field.name), f"{prefix}{field.name} has no meaning"


def test_the_config_dict_and_config_json_come_from_the_dataclasses():
  defaults = typed.defaults()
  assert base_config().to_dict() == typed.to_data(defaults)
  assert json.loads(base_config().to_json_best_effort()) == typed.json_data(defaults)
  assert from_data(typed.json_data(defaults)) == defaults  # and back


def test_with_fields_replaces_along_a_dotted_path_and_checks_the_type():
  config = from_data(load("cartpole_a2c"))
  changed = with_fields(config, {"optimizer.learning_rate": 3e-3, "seed": 4})
  assert (changed.optimizer.learning_rate, changed.seed) == (3e-3, 4)
  assert config.optimizer.learning_rate == 2e-3  # the original stays (cartpole_a2c's)
  with pytest.raises(ValueError, match=r"no field 'optimizer.learning_rat'.*learning_rate"):
    with_fields(config, {"optimizer.learning_rat": 1.0})
  with pytest.raises(ValueError, match=r"^config.seed='x' is not an int.$"):
    with_fields(config, {"seed": "x"})


# Where a default may be written: its dataclass field. Anything else that gives a schema
# field a value in galax/ is a second declaration that can drift from it.
ALLOWED = {os.path.join("galax", "config", "presets.py")}  # configs' shared blocks


def _leaves() -> dict[str, object]:
  return {
    prefix + f.name: f.default
    for cls, prefix in typed.section_types()
    for f in dataclasses.fields(cls)
    if not dataclasses.is_dataclass(f.default)
  }


CONFIG_NAMES = ("c", "config", "cfg")  # what galax calls a config it fills in


def second_defaults(path: str, source: str, leaves: dict[str, object], own=()) -> list[str]:
  """The places in `source` that declare a default of a schema field outside its dataclass
  (the classes named in `own`): an assignment to `<config>.<field path>` (d776273's
  `c.optimizer.eps = 1e-5`), a `.get("<field>", default)` fallback (its
  `n.get("activation", "")`), and a dataclass field of a field's name and default."""
  names = {leaf.rsplit(".", 1)[-1] for leaf in leaves}
  tree = ast.parse(source)
  fields = {  # the fields of dataclasses (flax modules' attributes are no config's)
    id(n)
    for c in ast.walk(tree)
    if isinstance(c, ast.ClassDef)
    and c.name not in own
    and any("dataclass" in ast.unparse(d) for d in c.decorator_list)
    for n in c.body
  }
  found = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Assign):
      for target in node.targets:
        text = ast.unparse(target)
        root, _, rest = text.partition(".")
        if root in CONFIG_NAMES and rest in leaves or "." in rest and rest in leaves:
          found.append(f"{path}:{node.lineno} {text} = ...")
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
      args = node.args
      if node.func.attr == "get" and len(args) == 2 and isinstance(args[0], ast.Constant):
        if args[0].value in names:
          found.append(f"{path}:{node.lineno} .get({args[0].value!r}, ...)")
    elif isinstance(node, ast.AnnAssign) and node.value is not None and id(node) in fields:
      name = ast.unparse(node.target)
      try:
        value = ast.literal_eval(node.value)
      except ValueError:
        continue
      if any(leaf.rsplit(".", 1)[-1] == name and leaves[leaf] == value for leaf in leaves):
        found.append(f"{path}:{node.lineno} {name} = {value!r}")
  return found


def test_every_default_is_written_once():
  """Each field's default is its dataclass field's; nothing else in galax/ declares one
  (fails on d776273's base_config, which wrote all 77 beside the dataclasses)."""
  leaves = _leaves()
  own = {base.__name__ for cls, _ in typed.section_types() for base in cls.__mro__}
  found = []
  for dirpath, _, files in os.walk(os.path.join(ROOT, "galax")):
    for name in sorted(files):
      path = os.path.relpath(os.path.join(dirpath, name), ROOT)
      if name.endswith(".py") and path not in ALLOWED:
        found += second_defaults(path, open(os.path.join(ROOT, path)).read(), leaves, own)
  assert not found, found


def test_a_second_default_is_found():
  leaves = _leaves()
  planted = (
    "def base_config():\n  c.optimizer.eps = 1e-5\ndef read(n):\n  return n.get('activation', '')\n"
  )
  assert len(second_defaults("planted.py", planted, leaves)) == 2
  twice = "@dataclasses.dataclass\nclass EvalCopy:\n  noop_max: int = 30\n"
  assert second_defaults("planted.py", twice, leaves) == ["planted.py:3 noop_max = 30"]


def test_a_config_json_written_at_d776273_is_this_config():
  """run.py at commit d776273 wrote tests/data/config_d776273.json (a tiny CartPole run);
  read back, it is the same config, field for field, and a resume finds no change."""
  with open(OLD_CONFIG) as f:
    saved = json.load(f)
  config = resume_lib.restore(saved)
  assert typed.json_data(config) == saved
  assert resume_lib.changes(saved, typed.json_data(config)) == []


def test_an_older_config_json_with_fewer_fields_reads_with_the_defaults():
  with open(OLD_CONFIG) as f:
    saved = json.load(f)
  del saved["env"]["batch_size"], saved["network"]["activation"], saved["stragglers"]
  del saved["optimizer"]["anneal_steps"], saved["hts"]
  config = resume_lib.restore(saved)
  assert config.env.batch_size == 0 and config.network.activation == ""
  assert config.stragglers.num_kept == 0 and config.hts.microbatches == 0


@pytest.mark.slow  # two short runs, about 36 s
@pytest.mark.parametrize("trimmed", [False, True], ids=["as_written", "fewer_fields"])
def test_a_run_with_a_d776273_config_json_resumes(tmp_path, trimmed):
  """A run whose config.json is the one run.py wrote at d776273 (or an older one's subset of
  its fields) resumes from its checkpoint to a longer budget, with no refused change."""
  from galax.training.loop import train

  with open(OLD_CONFIG) as f:
    saved = json.load(f)
  config = resume_lib.restore(saved)  # 2 calls of 800 steps, a checkpoint after each
  workdir = str(tmp_path / "run")
  train(config, workdir=workdir, log=lambda line: None)
  if trimmed:
    del saved["env"]["batch_size"], saved["network"]["activation"], saved["stragglers"]
  with open(os.path.join(workdir, "config.json"), "w") as f:
    json.dump(saved, f, indent=2)
  lines = []
  longer = with_fields(config, {"total_env_steps": 2400})
  result = train(longer, workdir=workdir, resume=True, log=lines.append)
  assert result.env_steps == 2400 and any("resumed from" in line for line in lines), lines
