"""The README and docs: the first two commands, links that resolve (the "read this" column
names functions that exist), and installs that never fetch the unrelated PyPI `galax`."""

import glob
import os
import re
import shlex
import tomllib

import nbformat

from experiments.verdicts_page import SUMMARY_HEADER

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = [
  "README.md",
  *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))),
]
LINK = re.compile(r"\[([^\]]*)\]\(([^)#\s]+)[^)]*\)")


def _read(path):
  with open(os.path.join(ROOT, path)) as f:
    return f.read()


def _distribution_name():
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)["project"]["name"]


def test_readme_starts_with_setup_and_run_then_the_tests():
  first_block = _read("README.md").split("```")[1].splitlines()
  assert first_block[0] == "bash"
  assert (
    first_block[1].startswith("python3 -m venv --upgrade-deps .venv")  # a pip that checks Python
    and "pip install -e '.[test]'" in first_block[1]
    and first_block[1].endswith("python run.py")
  )
  assert first_block[2] == "python -m pytest -n 2 tests"
  assert 'python -m pytest -n 2 -m "not slow" tests' in _read("README.md")


def test_relative_links_resolve():
  for doc in DOCS:
    for text, target in LINK.findall(_read(doc)):
      if "://" in target:
        continue
      path = os.path.normpath(os.path.join(os.path.dirname(doc), target))
      assert os.path.exists(os.path.join(ROOT, path)), f"{doc}: [{text}]({target})"


def test_read_this_links_name_code_in_the_linked_file():
  # [`module.Class.method`](galax/x.py): every name after the module is defined in x.py.
  table = [line for line in _read("README.md").splitlines() if line.startswith("| ")]
  assert "read this" in table[0]
  links = [(text.strip("`"), target) for row in table[2:] for text, target in LINK.findall(row)]
  assert len(links) >= 10
  for text, target in links:
    if not target.endswith(".py") or "/" in text:
      continue  # a module's docstring
    source = _read(target)
    for name in text.split(".")[1:] if text.count(".") else [text]:
      assert re.search(rf"^\s*(def|class) {name}\b", source, re.M), f"{name} not in {target}"


def test_installs_never_name_the_pypi_galax():
  # `galax` on PyPI is a different project: install from a checkout or the repository.
  name = _distribution_name()
  assert name != "galax"
  texts = [_read(doc) for doc in DOCS]
  for notebook in glob.glob(os.path.join(ROOT, "colabs", "*.ipynb")):
    texts += [cell.source for cell in nbformat.read(notebook, as_version=4).cells]
  commands = [c for text in texts for c in re.findall(r"pip install[^`\n]*", text)]
  assert commands
  for command in commands:
    for word in shlex.split(command, comments=True)[2:]:  # "name @ url" is one word
      assert not re.fullmatch(r"galax(-rl)?(\[[\w,]*\])?", word), command
  assert f'"{name} @ git+' in _read("README.md")


def _results_verdicts():
  """{claim id: verdict} from the Verdicts summary tables of docs/results.md."""
  header = SUMMARY_HEADER
  verdicts, rows = {}, False
  for line in _read("docs/results.md").splitlines():
    if line.strip() == header:
      rows = True
    elif rows and line.startswith("| ---"):
      continue
    elif rows and line.startswith("|"):
      cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
      verdicts[cells[0]] = cells[4].strip("*")
    else:
      rows = False
  return verdicts


def test_readme_quotes_the_results_pages_verdicts():
  # The README summarises the claims as "verdict 4a, **reproduced**": each quote is the
  # verdict docs/results.md computes for that id ("mixed" stands for "mixed: ..."), and
  # every paper's claims (ids 1 GALA, 2 HTS-RL, 3 PAAC, 4 BA3C) are quoted at least once,
  # so a summary in words alone cannot drift from the table.
  verdicts = _results_verdicts()
  assert len(verdicts) >= 20
  quotes = re.findall(r"verdict (\w+),?\s+\*\*([^*]+)\*\*", _read("README.md"))
  for id_, label in quotes:
    assert id_ in verdicts, f"README quotes verdict {id_}, not in docs/results.md"
    assert label == verdicts[id_].split(":")[0], (id_, label, verdicts[id_])
  assert {id_[0] for id_, _ in quotes} >= {"1", "2", "3", "4"}, quotes
