"""Experiment tracking in Weights & Biases (`config.track`; the `track` extra: wandb).

Every metrics row and evaluation goes to the run under the same names as TensorBoard's
(CleanRL's: `charts/episodic_return`, `charts/SPS`, `losses/value_loss`, ...; see
`metrics.TENSORBOARD_TAGS`), against `global_step` = env steps. A resumed galax run
continues the same W&B run (its id is kept in `<workdir>/wandb_id.txt`); rows logged after
the checkpoint by the killed run are logged again, and W&B shows both (its steps are its
own counter, `global_step` is the x axis).

`config.track_mode`: "online", or "offline" (written under `<workdir>/wandb/`; upload later
with `wandb sync <workdir>/wandb/offline-run-*`), or "disabled".
"""

from __future__ import annotations

import os
import uuid
from typing import Mapping

from galax.types import JsonDict

MODES = ("online", "offline", "disabled")
_ID_FILE = "wandb_id.txt"


class WandbTracker:
  """One W&B run for a galax run (process 0 only)."""

  def __init__(self, project: str, entity: str, mode: str, run_config: JsonDict, workdir: str,
               run_dir: str, resume: bool):
    """`project`, `entity` ('' = W&B's default) and `mode`: `config.track_*`; `run_config`:
    the run's config as W&B shows it. `workdir`: where the W&B files go (the local one);
    `run_dir` names the run."""
    try:
      import wandb  # pylint: disable=g-import-not-at-top
    except ImportError:
      raise ValueError("config.track=True needs wandb: pip install wandb (galax's 'track' "
                       "extra).") from None
    id_path = os.path.join(workdir, _ID_FILE)
    run_id = None
    if resume and os.path.exists(id_path):
      with open(id_path) as f:
        run_id = f.read().strip() or None
    run_id = run_id or uuid.uuid4().hex[:12]
    with open(id_path, "w") as f:
      f.write(run_id)
    self._run = wandb.init(
        project=project, entity=entity or None,
        name=run_dir.rstrip("/").rsplit("/", 1)[-1],
        id=run_id, resume="allow", config=run_config, dir=workdir,
        mode=mode, settings=wandb.Settings(console="off", quiet=True))
    self._run.define_metric("global_step")
    self._run.define_metric("*", step_metric="global_step")

  def log(self, step: int, scalars: Mapping[str, float]) -> None:
    self._run.log({"global_step": step, **scalars})

  def close(self) -> None:
    self._run.finish()
