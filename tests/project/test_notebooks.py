"""The Colab notebooks: their committed outputs come from a full run whose checks passed,
and they run top to bottom (CI-sized: GALAX_SMOKE=1 shrinks every run)."""

import importlib.util
import os
import re
import subprocess
import tomllib

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NOTEBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "colabs")) if f.endswith(".ipynb"))
# The figures each notebook draws at least (a notebook that stops early draws fewer).
FIGURES = {"quickstart.ipynb": 2, "hts_analysis.ipynb": 3, "gala_epsilon_ball.ipynb": 3}
# Lines each notebook prints only after its own checks (asserts in its cells) passed.
PRINTS = {
  "quickstart.ipynb": ["each return equal to its length", "report checks passed"],
  "hts_analysis.ipynb": ["agree with their simulations at every one of"],
  "gala_epsilon_ball.ipynb": ["within the Prop. 1 bound at every one of"],
}


def _code_outputs(notebook):
  return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]


def _assert_checks_passed(notebook, name):
  """No errors, every figure drawn, and every check's line printed."""
  outputs = _code_outputs(notebook)
  assert not [o for o in outputs if o.output_type == "error"]
  images = [o for o in outputs if "image/png" in o.get("data", {})]
  assert len(images) >= FIGURES[name], f"{len(images)} figures, expected {FIGURES[name]}"
  text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
  for line in PRINTS[name]:
    assert line in text, line


def test_every_notebook_is_tested():
  assert set(FIGURES) == set(PRINTS) == set(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_first_cell_installs_galax_from_the_repository(name, tmp_path, monkeypatch):
  # A fresh Colab: galax is missing, the cell pip-installs it from GALAX_REPO (one line).
  with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
    distribution = tomllib.load(f)["project"]["name"]
  notebook = nbformat.read(os.path.join(ROOT, "colabs", name), as_version=4)
  setup = next(cell.source for cell in notebook.cells if cell.cell_type == "code")
  (url,) = re.findall(r'^GALAX_REPO = "(https://[^"]+)"$', setup, re.M)
  commands = []
  monkeypatch.setattr(subprocess, "check_call", commands.append)
  monkeypatch.setattr(importlib.util, "find_spec", lambda module: None)
  exec(setup, {})
  assert commands[-1][-1] == f"{distribution}[plots] @ git+{url}"
  exec(setup.replace(url, str(tmp_path)), {})
  assert commands[-1][-1] == f"{distribution}[plots] @ {tmp_path.as_uri()}"
  assert commands[-1][1:4] == ["-m", "pip", "install"]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_committed_outputs_are_a_complete_run(name):
  # Readers see the results without running anything: every code cell ran once, in order.
  notebook = nbformat.read(os.path.join(ROOT, "colabs", name), as_version=4)
  code = [cell for cell in notebook.cells if cell.cell_type == "code"]
  assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
  _assert_checks_passed(notebook, name)


def _notebook_env(monkeypatch):
  """The environment a notebook's kernel starts with: CI-sized runs, galax from ROOT."""
  monkeypatch.setenv("GALAX_SMOKE", "1")
  monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws the figures
  monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _from_scratch(name):
  """The notebook without its committed outputs (a run from scratch, not on top of them)."""
  notebook = nbformat.read(os.path.join(ROOT, "colabs", name), as_version=4)
  for cell in notebook.cells:
    if cell.cell_type == "code":
      cell.outputs, cell.execution_count = [], None
  return notebook


def _client(notebook, directory):
  return NotebookClient(
    notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(directory)}}
  )


def _run_notebook(name, directory, monkeypatch):
  """The notebook run from scratch in `directory`, in a kernel of its own; its checks
  passed."""
  _notebook_env(monkeypatch)
  notebook = _from_scratch(name)
  _client(notebook, directory).execute()
  _assert_checks_passed(notebook, name)


@pytest.fixture(scope="module")
def quickstart_run(tmp_path_factory):
  """`quickstart_run(n)`: the quickstart has been Run all n times, each checked, in one
  kernel and directory: from scratch in a fresh kernel, then again as a user's second Run
  all. test_notebook_runs asks for 1 run, test_the_quickstart_runs_a_second_time for 2 (a
  second kernel's start, imports and compiles cost more than the second run itself)."""
  client = _client(_from_scratch("quickstart.ipynb"), tmp_path_factory.mktemp("quickstart"))
  done = []

  def runs(n):
    while len(done) < n:
      client.nb = _from_scratch("quickstart.ipynb")
      with pytest.MonkeyPatch.context() as monkeypatch:
        _notebook_env(monkeypatch)  # read once, when the first run starts the kernel
        client.execute(cleanup_kc=False)  # the kernel stays for the next Run all
      _assert_checks_passed(client.nb, "quickstart.ipynb")
      done.append(n)

  yield runs
  if client.km is not None:
    with client.setup_kernel():  # shuts the kernel down on leaving
      pass


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path, monkeypatch, quickstart_run):
  if name == "quickstart.ipynb":
    quickstart_run(1)
  else:
    _run_notebook(name, tmp_path, monkeypatch)


@pytest.mark.slow
def test_the_quickstart_runs_a_second_time(quickstart_run):
  """Run all again in the kernel and directory of the first (a user's Run all, twice): its
  runs start afresh, as it asks."""
  quickstart_run(2)
