"""config.track: a W&B run (offline mode) with the field's metric names, resumed as one run."""

import glob
import json
import os

import pytest
from run_helpers import STEPS_PER_CALL, tiny_config

pytest.importorskip("wandb")
quiet = lambda _: None


def _records(path):
  """The protobuf records of an offline run file (`run-<id>.wandb`): a 7-byte header, then
  LevelDB-log framing (32 KiB blocks; each piece: crc32 4, length 2, type 1 (full 1, first
  2, middle 3, last 4))."""
  with open(path, "rb") as f:
    data = f.read()
  assert data[:4] == b":W&B", data[:8]
  pos, block, pending = 7, 32768, b""
  while pos + 7 <= len(data):
    if block - pos % block < 7:  # the rest of a block is padding
      pos += block - pos % block
      continue
    length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
    pending += data[pos + 7 : pos + 7 + length]
    pos += 7 + length
    if kind in (1, 4):
      yield pending
      pending = b""


def _history(run_dir):
  """Every logged row of an offline run: {metric name: value}."""
  from wandb.proto import wandb_internal_pb2

  rows = []
  for data in _records(glob.glob(os.path.join(run_dir, "run-*.wandb"))[0]):
    record = wandb_internal_pb2.Record()
    record.ParseFromString(data)
    if record.WhichOneof("record_type") == "history":
      rows.append(
        {
          item.key or "/".join(item.nested_key): json.loads(item.value_json)
          for item in record.history.item
        }
      )
  return rows


@pytest.mark.slow
def test_offline_run_has_cleanrl_names_and_resumes_as_one_run(tmp_path, monkeypatch):
  from galax.training.loop import train

  monkeypatch.setenv("WANDB_SILENT", "true")
  config = tiny_config(total_env_steps=2 * STEPS_PER_CALL, track=True, track_mode="offline")
  train(config, workdir=str(tmp_path), log=quiet)
  runs = glob.glob(str(tmp_path / "wandb" / "offline-run-*"))
  assert len(runs) == 1, runs
  rows = _history(runs[0])
  assert [row["global_step"] for row in rows] == [STEPS_PER_CALL, 2 * STEPS_PER_CALL]
  for tag in (
    "charts/episodic_return",
    "charts/SPS",
    "losses/value_loss",
    "losses/policy_loss",
    "losses/entropy",
  ):
    assert tag in rows[-1], sorted(rows[-1])
  run_id = (tmp_path / "wandb_id.txt").read_text()
  assert run_id in os.path.basename(runs[0])

  config = tiny_config(total_env_steps=3 * STEPS_PER_CALL, track=True, track_mode="offline")
  train(config, workdir=str(tmp_path), resume=True, log=quiet)
  assert (tmp_path / "wandb_id.txt").read_text() == run_id  # the same W&B run, continued
  runs = sorted(glob.glob(str(tmp_path / "wandb" / "offline-run-*")))
  assert all(run_id in os.path.basename(r) for r in runs), runs


def test_bad_track_mode_is_one_line(tmp_path):
  from galax.training.loop import train

  with pytest.raises(ValueError, match="config.track_mode='cloud' is not one of"):
    train(tiny_config(track=True, track_mode="cloud"), workdir=str(tmp_path), log=quiet)
