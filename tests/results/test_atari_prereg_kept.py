"""Issue 56's runs on a new machine (experiments/atari_prereg.py): runs/ is not in git, so
a run's figures are read from its copy kept under docs/results/atari_gala_hts where its
workdir is absent, and a finished kept run is not started again."""

import json
import os

import pytest

from experiments import atari_prereg, atari_prereg_report

TREE_KEPT = atari_prereg.KEPT


@pytest.fixture
def dirs(tmp_path, monkeypatch):
  runs, kept = tmp_path / "runs", tmp_path / "kept"
  monkeypatch.setattr(atari_prereg, "RUNS_DIR", str(runs))
  monkeypatch.setattr(atari_prereg, "KEPT", str(kept))
  monkeypatch.setattr(atari_prereg, "CARRIED", str(tmp_path / "carried"))
  return runs, kept


def _write_run(folder, stopped="budget", steps=5_008_000, mean_return=300.0, evaluated=False):
  os.makedirs(folder, exist_ok=True)
  with open(os.path.join(folder, "result.json"), "w") as f:
    json.dump(dict(stopped=stopped, env_steps=steps, mean_return=mean_return), f)
  with open(os.path.join(folder, "metrics.csv"), "w") as f:
    f.write(f"env_steps,mean_return,wall_time_s\n500000,10.0,600\n{steps},{mean_return},6000\n")
  with open(os.path.join(folder, "sittings.json"), "w") as f:
    json.dump([dict(env_steps=0, commit="abcdef0123", dirty=False)], f)
  if evaluated:
    record = dict(
      step=steps, mean_return=390.0, stderr=5.0, returns=[390.0], lengths=[9], episodes=1
    )
    with open(
      os.path.join(folder, "eval_step5008000_10ep_greedy_learner-first_seed0.json"), "w"
    ) as f:
      json.dump(record, f)


def test_every_kept_run_folder_in_the_tree_is_a_registered_runs_kept_folder():
  """The names kept_folder gives are the tree's; labelled extras (diagnostics, a first
  attempt) are not runs of the registry."""
  named = {os.path.basename(atari_prereg.kept_folder(n)) for n in atari_prereg.registered()}
  folders = [
    f
    for f in os.listdir(TREE_KEPT)
    if os.path.isdir(os.path.join(TREE_KEPT, f)) and not f.startswith("diagnostic_")
  ]
  unnamed = [f for f in folders if f not in named and not f.endswith("_first_attempt")]
  assert not unnamed, unnamed
  assert {"Acode_gala_seed2", "Bfast_hts_seed1", "A_gala_eps0.01_seed0"} <= set(folders)


def test_the_report_reads_kept_copies_where_no_workdir_is_here(dirs, tmp_path):
  runs, kept = dirs
  _write_run(atari_prereg.kept_folder("codeeps_gala_0"), evaluated=True)
  _write_run(atari_prereg.kept_folder("codeeps_gala_1"))  # its evaluation file not kept
  atari_prereg_report.report(str(tmp_path / "out"))
  text = (tmp_path / "out" / "runs.md").read_text()
  assert "| codeeps_gala_0 | finished at 5,008,000 agent steps (budget) |" in text
  assert "| codeeps_gala_0 | 5,008,000 | 390.0 +- 5.0 |" in text
  assert "| codeeps_gala_1 | | no evaluation file in" in text
  assert "| codeeps_gala_0 | 0 at abcdef0 |" in text
  assert atari_prereg.status("codeeps_allreduce_0") == "not started"


def test_the_report_names_each_sittings_machine_where_recorded(dirs, tmp_path):
  """A seed's runs are alike bit for bit only on one machine: the sittings table says which."""
  runs, kept = dirs
  _write_run(str(runs / "hts_0"))
  machine = dict(
    cpu="AMD EPYC", cores=2, isa=["avx2", "fma"], backend="cpu (cpu) x 1", jax="0.11.2"
  )
  sittings = [
    dict(env_steps=0, commit="abcdef0123", dirty=False),  # before sittings.json had a machine
    dict(env_steps=1_000_000, commit="0123456789", dirty=True, machine=machine),
  ]
  (runs / "hts_0" / "sittings.json").write_text(json.dumps(sittings))
  atari_prereg_report.report(str(tmp_path / "out"))
  on = "on AMD EPYC, 2 cores, avx2 fma, cpu (cpu) x 1, jax 0.11.2"
  assert (
    f"| hts_0 | 0 at abcdef0, 1,000,000 at 0123456+ {on} |"
    in (tmp_path / "out" / "runs.md").read_text()
  )


def test_a_workdir_here_is_read_before_the_kept_copy(dirs):
  runs, kept = dirs
  _write_run(atari_prereg.kept_folder("hts_0"), stopped="preempted", steps=1_864_000)
  assert atari_prereg.status("hts_0") == "kept in the tree, its checkpoint not here"
  _write_run(str(runs / "hts_0"), stopped="target return", steps=3_000_000)
  assert atari_prereg.run_folder("hts_0") == str(runs / "hts_0")
  assert atari_prereg.status("hts_0") == "finished at 3,000,000 agent steps (target return)"


def test_a_finished_kept_run_is_not_started_again(dirs, monkeypatch, capsys):
  _write_run(atari_prereg.kept_folder("codeeps_gala_2"))
  started = []
  monkeypatch.setattr(atari_prereg, "_run_passing_sigterm", lambda c: started.append(c) or 0)
  atari_prereg.run(["codeeps_gala_2"])
  assert not started
  assert (
    "codeeps_gala_2: finished at 5,008,000 agent steps (budget): skipped" in capsys.readouterr().out
  )


def test_keep_copies_a_runs_small_files_and_evaluations(dirs):
  runs, kept = dirs
  workdir = str(runs / "codeeps_a2c16_0")
  _write_run(workdir, evaluated=True)
  os.makedirs(os.path.join(workdir, "checkpoints", "5008000"))
  folder = atari_prereg.keep("codeeps_a2c16_0")
  assert folder == os.path.join(str(kept), "Acode_a2c16_seed0")
  assert sorted(os.listdir(folder)) == [
    "eval_step5008000_10ep_greedy_learner-first_seed0.json",
    "metrics.csv",
    "result.json",
    "sittings.json",
  ]
  with pytest.raises(SystemExit, match="a2c_0 has no metrics.csv"):
    atari_prereg.keep("a2c_0")


def _measured_gradient_point(metrics_path: str) -> str:
  """Where a kept HTS-A2C run took its gradients, from its own rows: 'stale' (theta_{k-1},
  the parameters that collected the data), 'current' (theta_k, the ones it is applied to)
  or 'undelayed' (both the same)."""
  import csv

  with open(metrics_path) as f:
    rows = list(csv.DictReader(f))
  points = set()
  for row in rows:
    data, grad, applied = (
      float(row[f"hts/{k}"]) for k in ("data_version", "grad_version", "applied_to_version")
    )
    points.add(
      "undelayed"
      if data == applied
      else "stale"
      if grad == data
      else "current"
      if grad == applied
      else "?"
    )
  assert len(points) == 1, f"{metrics_path}: mixed points {points}"
  return points.pop()


def test_every_kept_hts_run_names_the_gradient_point_it_used():
  """A config.json whose `hts.gradient_point` changed meaning (before 0611713 'current' was
  theta_{k-1}) has a CONFIG_NOTE.md beside it naming the point the run's rows show."""
  checked = 0
  for name in sorted(os.listdir(TREE_KEPT)):
    folder = os.path.join(TREE_KEPT, name)
    config_path = os.path.join(folder, "config.json")
    if not os.path.exists(config_path):
      continue
    with open(config_path) as f:
      config = json.load(f)
    if config.get("algorithm") != "hts_a2c":
      continue
    measured = _measured_gradient_point(os.path.join(folder, "metrics.csv"))
    said = config["hts"]["gradient_point"]
    said = "stale" if said == "auto" else said
    note = os.path.join(folder, "CONFIG_NOTE.md")
    if measured == "undelayed":
      assert not config["hts"]["delayed"], name
    elif said != measured:
      assert os.path.exists(note), f"{name}: config says {said!r}, its rows show {measured!r}"
      with open(note) as f:
        assert f"**`{measured}`**" in f.read(), name
    checked += 1
  assert checked >= 8
