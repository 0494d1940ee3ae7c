"""A `gs://` workdir, offline: training, checkpoints, resume, evaluation and the lock against
a local in-memory GCS emulator (gcp-storage-emulator), reached by the same clients a real
bucket uses (gcsfs through etils.epath for galax's files, TensorStore's GCS driver inside
orbax for the arrays), pointed at it by their documented test variables.

What this does not test: GCS's own authentication, and s3:// (the same code path, with
s3fs and TensorStore's S3 driver).
"""

import logging
import os
import socket
import sys

import pytest
from run_helpers import STEPS_PER_CALL, tiny_config

emulator = pytest.importorskip("gcp_storage_emulator.server")
pytest.importorskip("gcsfs")

BUCKET = "galax-test"
quiet = lambda _: None


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _send_generation_headers():
  """Make the emulator's media reads (`?alt=media`, TensorStore's) carry `x-goog-generation`,
  as GCS's do.

  TensorStore takes an object's generation from that header. Without it an OCDBT manifest
  read back mid-save has generation 0, and the conditional write after it fails with
  "Malformed StorageGeneration": about one run of this file in 13 did so.
  """
  from gcp_storage_emulator.handlers import objects

  plain = objects.download

  def download(request, response, storage, *args, **kwargs):
    plain(request, response, storage, *args, **kwargs)
    if response.status in (200, 206):
      obj = storage.get_file_obj(request.params["bucket_name"], request.params["object_id"])
      response["x-goog-generation"] = obj["generation"]
      response["x-goog-metageneration"] = obj["metageneration"]

  return download


@pytest.fixture(scope="module")
def bucket(tmp_path_factory):
  """gs://galax-test on an emulator; galax's staging copies under a temp folder."""
  port = _free_port()
  server = emulator.create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
  server.start()
  # A client that hangs up early (a retry under load) made the server thread print a
  # BrokenPipeError's traceback, which parses source: on CPython < 3.11.8 that raced a
  # failing test's report in pytest (tests/conftest.py, _serialize_ast_parse). One line.
  httpd = server._api._httpd
  httpd.handle_error = lambda request, address: logging.getLogger("gcp_storage_emulator").info(
    "request from %s: %r", address, sys.exc_info()[1]
  )
  url = f"http://127.0.0.1:{port}"
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr("gcp_storage_emulator.handlers.objects.download", _send_generation_headers())
    mp.setenv("STORAGE_EMULATOR_HOST", url)  # gcsfs
    mp.setenv("TENSORSTORE_GCS_HTTP_URL", url)  # orbax's arrays
    mp.setenv("GOOGLE_AUTH_TOKEN_FOR_TESTING", "emulator")  # TensorStore skips real auth
    mp.setenv("GALAX_STAGING", str(tmp_path_factory.mktemp("staging")))
    logging.getLogger("gcsfs").setLevel(logging.ERROR)  # "no default credentials"
    yield f"gs://{BUCKET}"
  server.stop()


def _remote(url):
  from etils import epath

  return epath.Path(url)


def _csv_steps(url):
  lines = _remote(url).read_text().splitlines()[1:]
  return [int(line.split(",")[0]) for line in lines]


@pytest.mark.slow
def test_train_resume_and_evaluate_on_gs(bucket, tmp_path, monkeypatch):
  from galax.evaluate import cli as evaluate
  from galax.training.loop import train

  monkeypatch.chdir(tmp_path)
  workdir = f"{bucket}/runs/cartpole"
  first = train(
    tiny_config(total_env_steps=2 * STEPS_PER_CALL, tensorboard=True), workdir=workdir, log=quiet
  )
  assert first.env_steps == 2 * STEPS_PER_CALL
  names = {p.name for p in _remote(workdir).iterdir()}
  assert {"config.json", "metrics.csv", "result.json", "checkpoints", "tb"} <= names, names
  assert _remote(f"{workdir}/checkpoints/{2 * STEPS_PER_CALL}/commit_success.txt").exists()
  assert _csv_steps(f"{workdir}/metrics.csv") == [STEPS_PER_CALL, 2 * STEPS_PER_CALL]
  assert not os.path.exists(tmp_path / "gs:")  # never a local folder named after the URL

  lines = []
  second = train(
    tiny_config(total_env_steps=4 * STEPS_PER_CALL), workdir=workdir, resume=True, log=lines.append
  )
  assert any(
    line.startswith(f"resumed from {workdir}/checkpoints/{2 * STEPS_PER_CALL}") for line in lines
  ), lines
  assert second.env_steps == 4 * STEPS_PER_CALL
  assert _csv_steps(f"{workdir}/metrics.csv") == [STEPS_PER_CALL * k for k in (1, 2, 3, 4)]
  assert evaluate.checkpoint_steps(workdir) == [4 * STEPS_PER_CALL, 2 * STEPS_PER_CALL]
  assert evaluate.read_config(workdir).env.id == tiny_config().env.id
  _, step = evaluate.restore_params(workdir)
  assert step == 4 * STEPS_PER_CALL
  assert _remote(f"{workdir}/run.lock").read_text() == ""  # ended normally: names no one


@pytest.mark.slow
def test_lock_in_the_store_names_an_unfinished_writer(bucket, tmp_path):
  from galax.training.loop import train

  workdir = f"{bucket}/runs/locked"
  _remote(f"{workdir}/run.lock").write_text('{"pid": 4242, "host": "tpu-vm-7", "since": 0}')
  lines = []
  train(tiny_config(total_env_steps=STEPS_PER_CALL), workdir=workdir, log=lines.append)
  warnings = [line for line in lines if line.startswith("warning:")]
  assert len(warnings) == 1 and "pid 4242 on host tpu-vm-7" in warnings[0], lines


def test_unwritable_bucket_is_one_line(bucket):
  from galax.training.loop import train

  with pytest.raises(ValueError, match=r"--workdir 'gs://no-such-bucket/x' is not writable"):
    train(tiny_config(), workdir="gs://no-such-bucket/x", log=quiet)


def test_a_second_writer_reads_the_checkpoint_manifest_back(bucket):
  """A fresh TensorStore context must read the OCDBT manifest back and write after it,
  as a save does when its cached manifest is gone. Fails on an emulator whose downloads
  carry no generation."""
  import numpy as np
  import tensorstore as ts

  def write(name):
    spec = {
      "driver": "zarr",
      "kvstore": {"driver": "ocdbt", "base": f"{bucket}/manifest-reread/", "path": f"{name}/"},
      "metadata": {"shape": [2], "chunks": [2], "dtype": "<f4"},
      "create": True,
      "open": True,
    }
    array = ts.open(spec, context=ts.Context()).result()
    array.write(np.ones(2, np.float32)).result()

  write("first")
  write("second")
