"""The tool as a new user meets it: a fresh run never mixes with an earlier run in its
workdir, tracking without credentials, help that reaches every field, one-line errors, and
no trace of a run that never started.

New galax names are imported inside the tests, so that against older code each test fails
on its own assertion rather than the whole module on an import.
"""

import os

import pytest
from run_helpers import header_lines_for, run_cli, tiny_config

import galax.training.loop as train_lib
from galax.config import base_config, from_data
from galax.training.loop import train
from galax.training.settings import loop_settings

quiet = lambda _: None


class _Built(Exception):
  """The run reached its (slow) build."""


def _stop_at_build(monkeypatch, error=None):
  def build(config):
    raise error or _Built()

  monkeypatch.setattr(train_lib, "make_algorithm", build)


def _earlier_run(workdir):
  """The files an earlier run leaves, and one of the user's own."""
  (workdir / "checkpoints" / "2400").mkdir(parents=True)
  (workdir / "checkpoints" / "2400" / "commit_success.txt").write_text("")
  (workdir / "tb").mkdir()
  (workdir / "tb" / "events.out.tfevents.1").write_text("")
  for name in ("config.json", "metrics.csv", "result.json", "eval_step2400.json"):
    (workdir / name).write_text("{}")
  (workdir / "notes.txt").write_text("mine")


def _one_line(proc, needle, status=2):
  lines = proc.stderr.strip().splitlines()
  assert proc.returncode == status, (proc.stdout[-2000:], proc.stderr[-2000:])
  assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], proc.stderr
  return lines[0]


# 1. A fresh run into a workdir that holds a run.


def test_a_fresh_run_into_a_run_is_refused_before_setup(tmp_path, monkeypatch):
  _earlier_run(tmp_path)
  _stop_at_build(monkeypatch)
  with pytest.raises(ValueError, match="already holds a run .*--resume.*--overwrite"):
    train(tiny_config(), workdir=str(tmp_path), log=quiet)
  assert (tmp_path / "checkpoints" / "2400").is_dir() and (tmp_path / "config.json").exists()


def test_overwrite_deletes_the_earlier_run_before_setup_and_keeps_other_files(
  tmp_path, monkeypatch
):
  _earlier_run(tmp_path)
  _stop_at_build(monkeypatch)
  with pytest.raises(_Built):
    train(tiny_config(), workdir=str(tmp_path), log=quiet, overwrite=True)
  assert sorted(os.listdir(tmp_path)) == ["notes.txt", "run.lock"]


@pytest.mark.slow
def test_cli_rerun_names_resume_and_overwrite_starts_afresh(tmp_path):
  args = [
    "--config.env.id=gymnax/CartPole-v1",
    "--config.updates_per_call=10",
    "--config.tensorboard=False",
    f"--workdir={tmp_path}",
  ]
  first = run_cli(*args, "--config.total_env_steps=1600")
  assert first.returncode == 0, first.stderr[-2000:]
  again = run_cli(*args, "--config.total_env_steps=800")
  _one_line(again, "--resume")
  assert "--overwrite" in again.stderr and not again.stdout
  assert os.listdir(tmp_path / "checkpoints") == ["1600"]
  fresh = run_cli(*args, "--config.total_env_steps=800", "--overwrite")
  assert fresh.returncode == 0, fresh.stderr[-2000:]
  assert os.listdir(tmp_path / "checkpoints") == ["800"]
  _one_line(run_cli(*args, "--resume", "--overwrite"), "give one")


# 2 and 4. Tracking without credentials; a run that never started leaves nothing.


def _no_wandb_login(tmp_path, monkeypatch):
  pytest.importorskip("wandb")
  monkeypatch.delenv("WANDB_API_KEY", raising=False)
  monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc
  monkeypatch.setenv("NETRC", str(tmp_path / "home" / ".netrc"))
  monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "home" / "wandb"))


def test_track_without_credentials_is_one_line_before_anything_is_made(tmp_path, monkeypatch):
  _no_wandb_login(tmp_path, monkeypatch)
  _stop_at_build(monkeypatch)
  with pytest.raises(ValueError, match="no W&B credentials.*--config.track_mode=offline"):
    train(tiny_config(track=True), workdir=str(tmp_path / "run"), log=quiet)
  assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_cli_track_without_credentials_is_one_line(tmp_path, monkeypatch):
  _no_wandb_login(tmp_path, monkeypatch)  # the subprocess inherits the environment
  proc = run_cli("--config.track=True", f"--workdir={tmp_path / 'run'}")
  _one_line(proc, "track_mode=offline")
  assert not (tmp_path / "run").exists()


def test_a_run_that_never_started_leaves_no_lock_or_folder(tmp_path, monkeypatch):
  with pytest.raises(FileNotFoundError, match="--resume"):
    train(tiny_config(), workdir=str(tmp_path / "new" / "run"), resume=True, log=quiet)
  assert not (tmp_path / "new").exists()
  (tmp_path / "mine").mkdir()
  _stop_at_build(monkeypatch, ValueError("Unknown env id"))
  with pytest.raises(ValueError, match="Unknown env id"):
    train(tiny_config(), workdir=str(tmp_path / "mine"), log=quiet)
  assert os.listdir(tmp_path / "mine") == []  # the user's folder stays, emptied of the lock


# 3. Help, hints and flag errors.


# Both spellings on two commands; the others share galax.config.cli.answer_help's one check
# of both (HELP_FLAGS), so one spelling each, alternating (each call took 2-4 s).
@pytest.mark.parametrize(
  "module,flag",
  [
    *[(m, f) for m in (None, "galax.evaluate") for f in ("--help", "-h")],
    *[
      pytest.param(m, f, marks=pytest.mark.slow)
      for m, f in (
        ("galax.aot", "--help"),
        ("galax.results.experiment", "-h"),
        ("galax.results.sweep", "--help"),
        ("galax.results.report", "-h"),
      )
    ],
  ],
)
def test_every_command_answers_help(module, flag):
  proc = run_cli(flag, module=module)
  assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr[-2000:]
  assert "--" in proc.stdout and len(proc.stdout.splitlines()) > 5, proc.stdout


def test_help_config_lists_every_field_with_its_default_and_a_doc():
  from galax.config import help as config_help

  lines = config_help.describe()
  fields = [line.strip() for line in lines[1:]]
  assert len(fields) == len(list(config_help._leaves(base_config())))
  for line in fields:
    assert " = " in line and "  # " in line and line.split("  # ")[1].strip(), line
  assert "optimizer.learning_rate = 0.0007  # " in "\n".join(fields)
  assert any(f.startswith("ppo.clip = 0.08  # ratio clip") for f in fields)  # a section's
  assert any(f.startswith("hts.microbatches = 0  # ") and f.endswith("0 = auto") for f in fields)


def test_cli_help_config_of_a_named_config_marks_its_changes():
  proc = run_cli("--help_config=pong_fast")
  assert proc.returncode == 0, proc.stderr[-2000:]
  assert "env.id = 'Pong-v5' (schema: 'CartPole-v1')  # " in proc.stdout
  _one_line(run_cli("--help_config=pongg"), "No config 'pongg'")


def test_unknown_field_hint_searches_every_section_by_its_last_name():
  proc = run_cli("--config.learning_rate=1e-3")
  line = _one_line(proc, "Did you mean 'config.optimizer.learning_rate'")
  assert "learner_stats" not in line.split("'config.optimizer.learning_rate'")[0]


@pytest.mark.parametrize("flag", ["--config.track=maybe", "--resume=maybe"])
def test_a_flag_type_error_is_one_plain_line(flag):
  line = _one_line(run_cli(flag), "'maybe' is not a boolean (true or false)")
  assert "('" not in line


def test_a_positional_config_is_taken_as_the_config():
  from galax.config import (
    cli,
    config_path,
  )

  argv = cli.prepare_argv(["galax", "pong_fast", "--config.seed=3"], "default.py")
  assert argv == ["galax", f"--config={config_path('pong_fast')}", "--config.seed=3"]
  _one_line(run_cli("pong_fastt"), "No config 'pong_fastt'")


@pytest.mark.slow
def test_a_stray_argument_is_one_line():
  _one_line(run_cli("cartpole_a2c", "extra"), "unexpected argument(s) 'extra'")


# 4. The smaller things.


def test_a_silent_store_fails_within_the_probe_timeout(monkeypatch):
  pytest.importorskip("gcsfs")
  import time

  from galax.runtime import workdir as workdirs

  class Silent:  # a store behind no network: its client retries for a minute
    def __init__(self, _):
      pass

    def write_text(self, _):
      time.sleep(5)

    unlink = write_text

  monkeypatch.setattr(workdirs, "path", Silent)
  monkeypatch.setattr(workdirs, "PROBE_TIMEOUT_S", 0.2, raising=False)
  start = time.perf_counter()
  with pytest.raises(ValueError, match="did not answer a test write within"):
    workdirs.check_remote("gs://bucket/run")
  assert time.perf_counter() - start < 2


@pytest.mark.slow
def test_progress_and_done_lines_share_steps_per_second_and_say_no_episode(tmp_path, monkeypatch):
  import time

  from galax.runtime import checkpoint as ckpt_lib

  real_save = ckpt_lib.Checkpointer.save

  def slow_save(self, *args, **kwargs):  # the final save comes after the last call
    time.sleep(0.5)
    return real_save(self, *args, **kwargs)

  monkeypatch.setattr(ckpt_lib.Checkpointer, "save", slow_save)
  monkeypatch.setattr(train_lib.metrics_lib, "add_episodes", lambda *args: None)
  lines = []
  train(
    tiny_config(total_env_steps=4 * 800, checkpoint_every_steps=0),
    workdir=str(tmp_path),
    log=lines.append,
  )
  progress = [line for line in lines if line.startswith("steps ")]
  done = lines[-1]
  assert len(progress) == 4 and done.startswith("done:"), lines
  assert all("no finished episode yet" in line and "nan" not in line for line in progress)
  assert done.endswith("; no finished episode yet"), done
  last_rate = progress[-1].split("|")[1].split()[0]
  assert f"{last_rate} steps/s)" in done, (progress[-1], done)


def _header(obs_shape, network="mlp", **fields):
  return header_lines_for(tiny_config(network__name=network, **fields), obs_shape)


def test_the_header_warns_of_an_mlp_on_large_images_in_one_line():
  warnings = [line for line in _header((4, 84, 84)) if line.startswith("warning:")]
  assert len(warnings) == 1 and "4x84x84" in warnings[0] and "archnips" in warnings[0]
  for shape, network in (((10, 10, 4), "mlp"), ((4,), "mlp"), ((4, 84, 84), "archnips")):
    assert not [line for line in _header(shape, network) if "warning" in line]


def test_the_header_says_how_the_logging_cadence_rounds():
  lines = _header((4,), log_every_steps=500, checkpoint_every_steps=1600)
  assert (
    "log_every_steps=500 rounds up to every 800 env steps (whole calls of 800 env steps)" in lines
  )
  assert not [line for line in lines if "checkpoint_every_steps" in line]  # 2 whole calls


def test_readme_commands_name_configs_so_they_work_from_any_directory():
  import re

  from run_helpers import ROOT

  from galax.config import config_names

  with open(os.path.join(ROOT, "README.md")) as f:
    blocks = f.read().split("```")[1::2]
  given = re.findall(r"--(?:help_)?config=([^\s:`]+)", "\n".join(blocks))
  assert given and all(name in config_names() for name in given), given
  assert not [b for b in blocks[1:] if re.search(r"^python run\.py", b, re.M)]


def test_idle_devices_are_named_in_the_header():
  """4 learners on the suite's 8 virtual devices: the header says 4 are idle."""
  from galax.config import make_algorithm
  from galax.training.header import header_lines

  config = tiny_config(num_learners=4, combine="allreduce")
  algorithm = make_algorithm(config)
  try:
    planned = dict(requested_env_steps=1, planned_env_steps=1)
    lines = header_lines(
      algorithm, loop_settings(from_data(config), algorithm.setup.settings), planned
    )
  finally:
    algorithm.env.close()
  assert (
    "devices: 4 of the 8 visible carry learners, 4 idle (num_learners=4; a multiple of 8 "
    "uses them all)" in lines
  )
