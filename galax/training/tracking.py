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

from galax.core.types import JsonDict

_ID_FILE = "wandb_id.txt"
_OFFLINE_HINT = "or log offline with --config.track_mode=offline and upload later with `wandb sync`"


def _import_wandb():
  try:
    import wandb
  except ImportError:
    raise ValueError(
      "config.track=True needs wandb: pip install wandb (galax's 'track' extra)."
    ) from None
  return wandb


def check(mode: str) -> None:
  """ValueError (one line) unless W&B can log in `mode`: wandb installed and, online,
  credentials found (checked before the run makes anything; wandb itself would fail with
  a traceback after the build, or prompt)."""
  _import_wandb()
  if mode != "online":
    return
  try:
    from wandb.sdk.lib.wbauth import authenticate
  except ImportError:  # another wandb version: wandb.init will tell
    return
  host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")
  try:
    found = authenticate.authenticate_session(
      host=host, source="galax", prompt=False, update_session=False
    )
  except Exception as e:  # a malformed key
    raise ValueError(
      f"config.track=True: W&B credentials are not usable ({e}); fix them, {_OFFLINE_HINT}."
    ) from None
  if found is None:
    raise ValueError(
      f"config.track=True: no W&B credentials (run `wandb login` or set "
      f"WANDB_API_KEY), {_OFFLINE_HINT}."
    )


class WandbTracker:
  """One W&B run for a galax run (process 0 only)."""

  def __init__(
    self,
    project: str,
    entity: str,
    mode: str,
    run_config: JsonDict,
    workdir: str,
    run_dir: str,
    resume: bool,
  ):
    """`project`, `entity` ('' = W&B's default) and `mode`: `config.track_*`; `run_config`:
    the run's config as W&B shows it. `workdir`: where the W&B files go (the local one);
    `run_dir` names the run."""
    wandb = _import_wandb()
    id_path = os.path.join(workdir, _ID_FILE)
    run_id = None
    if resume and os.path.exists(id_path):
      with open(id_path) as f:
        run_id = f.read().strip() or None
    run_id = run_id or uuid.uuid4().hex[:12]
    try:
      self._run = wandb.init(
        project=project,
        entity=entity or None,
        name=run_dir.rstrip("/").rsplit("/", 1)[-1],
        id=run_id,
        resume="allow",
        config=run_config,
        dir=workdir,
        mode=mode,
        settings=wandb.Settings(console="off", quiet=True),
      )
    except Exception as e:  # login, network, server
      text = " ".join(str(e).split())[:200]
      raise ValueError(
        f"config.track=True: W&B did not start ({type(e).__name__}: {text}); {_OFFLINE_HINT}."
      ) from None
    with open(id_path, "w") as f:  # once the run exists: a resume continues it
      f.write(run_id)
    self._run.define_metric("global_step")
    self._run.define_metric("*", step_metric="global_step")

  def log(self, step: int, scalars: Mapping[str, float]) -> None:
    self._run.log({"global_step": step, **scalars})

  def log_video(self, step: int, tag: str, path: str) -> None:
    """A video file (.mp4 or .gif) of `config.capture_video` (galax/training/videos.py)."""
    wandb = _import_wandb()
    self._run.log({"global_step": step, tag: wandb.Video(path, format=path.rsplit(".", 1)[-1])})

  def close(self) -> None:
    self._run.finish()
