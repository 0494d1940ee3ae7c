"""The Colab notebooks run top to bottom (CI-sized: GALAX_SMOKE=1 shrinks every run)."""

import os

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
NOTEBOOKS = sorted(f for f in os.listdir(os.path.join(ROOT, "colabs")) if f.endswith(".ipynb"))
# The figures each notebook draws at least (a notebook that stops early draws fewer).
FIGURES = {"quickstart.ipynb": 2, "hts_analysis.ipynb": 3, "gala_epsilon_ball.ipynb": 3}
# Text a notebook prints only after its own checks passed.
PRINTS = {"gala_epsilon_ball.ipynb": "within the Prop. 1 bound at every one of"}


def test_every_notebook_is_tested():
  assert set(FIGURES) == set(NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, tmp_path, monkeypatch):
  monkeypatch.setenv("GALAX_SMOKE", "1")
  monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws the figures
  monkeypatch.setenv("PYTHONPATH", ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  notebook = nbformat.read(os.path.join(ROOT, "colabs", name), as_version=4)
  # Committed notebooks carry no outputs (clean diffs, nothing stale).
  assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")
  NotebookClient(notebook, timeout=240, kernel_name="python3",
                 resources={"metadata": {"path": str(tmp_path)}}).execute()
  errors = [o for cell in notebook.cells if cell.cell_type == "code"
            for o in cell.outputs if o.output_type == "error"]
  assert not errors
  images = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs
            if "image/png" in o.get("data", {})]
  assert len(images) >= FIGURES[name], f"{len(images)} figures, expected {FIGURES[name]}"
  text = "".join(o.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                 for o in cell.outputs if o.output_type == "stream")
  assert PRINTS.get(name, "") in text
