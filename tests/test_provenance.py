"""Every run reproducible to the line: a run records its commit and, from a tree with
uncommitted changes, stores the diff beside its record, which `git apply` turns back into that tree;
a sweep into results/reference/ refuses such a tree unless told otherwise; the report marks the runs
made from one."""

import json
import os
import subprocess

import pandas as pd
import pytest

from analysis.report.answer import provenance
from analysis.report.framework.selection import runs_read
from experiments.tracking import host
from experiments import sweep
from experiments.sweeps import plan as sweep_plan
from experiments.tracking.host import SOURCE_DIFF, source_changes, source_diff


def _git(root, *args):
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def checkout(tmp_path):
    """A small git checkout: a committed module, a results/ folder, then a change and a new module."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("STEP = 1\n")
    (root / "results").mkdir()
    _git(root, "init", "-q")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "first")
    return root


def _dirty(root):
    (root / "pkg" / "mod.py").write_text("STEP = 2\n")
    (root / "pkg" / "new.py").write_text("NEW = True\n")


def test_run_outputs_and_the_writeup_leave_a_tree_clean(checkout):
    (checkout / "results" / "run.json").write_text("{}")
    (checkout / "paper").mkdir()
    (checkout / "paper" / "notes.py").write_text("x = 1\n")
    (checkout / "pkg" / "picture.png").write_bytes(b"\x89PNG")  # not source
    assert source_changes(str(checkout)) == ([], [])


def test_the_diff_rebuilds_the_tree_on_its_commit(checkout, tmp_path):
    _dirty(checkout)
    assert source_changes(str(checkout)) == (["pkg/mod.py"], ["pkg/new.py"])
    patch = tmp_path / "source.diff"
    patch.write_text(source_diff(str(checkout)))
    again = tmp_path / "again"
    subprocess.run(["git", "clone", "-q", str(checkout), str(again)], check=True)
    _git(again, "apply", str(patch))
    assert (again / "pkg" / "mod.py").read_text() == "STEP = 2\n"
    assert (again / "pkg" / "new.py").read_text() == "NEW = True\n"


def test_a_run_from_a_dirty_tree_stores_its_diff_and_a_clean_one_none(checkout, tmp_path, monkeypatch):
    from experiments.tracking.store import AtomicFileStorageObserver
    from experiments.train import ex

    monkeypatch.setattr(host, "ROOT", str(checkout))
    tiny = dict(total_env_steps=300, learning_starts=100, eval_every=300, eval_episodes=1, hidden_sizes=[8],
                buffer_size=300, batch_size=8, log_every=100)
    stores = {}
    for state in ("clean", "dirty"):
        if state == "dirty":
            _dirty(checkout)
        stores[state] = tmp_path / state
        observer = AtomicFileStorageObserver(str(stores[state]))
        ex.observers.append(observer)
        try:
            ex.run(config_updates=tiny)
        finally:
            ex.observers.remove(observer)
    commit = _git(checkout, "rev-parse", "HEAD").strip()
    clean, dirty = (json.loads((stores[s] / "1" / "run.json").read_text()) for s in ("clean", "dirty"))
    assert clean["host"]["git"]["commit"] == commit and clean["host"]["git"]["dirty"] is False
    assert not (stores["clean"] / "1" / SOURCE_DIFF).exists()
    assert dirty["host"]["git"] == {"commit": commit, "dirty": True, "changed": ["pkg/mod.py", "pkg/new.py"],
                                    "diff": SOURCE_DIFF}
    stored = (stores["dirty"] / "1" / SOURCE_DIFF).read_text()
    assert "+STEP = 2" in stored and "+NEW = True" in stored and SOURCE_DIFF in dirty["artifacts"]


def test_a_reference_sweep_refuses_a_dirty_tree_unless_told(checkout, monkeypatch, capsys):
    monkeypatch.setattr(host, "ROOT", str(checkout))
    reference = os.path.join(str(checkout), "results", "reference")
    monkeypatch.setattr(sweep_plan, "REFERENCE", reference)
    sweep_plan.check_tree(os.path.join(reference, "smoke"), allow_dirty=False)  # clean: goes on
    _dirty(checkout)
    sweep_plan.check_tree(os.path.join(str(checkout), "results", "sweeps", "smoke"), allow_dirty=False)  # not reference
    sweep_plan.check_tree(os.path.join(reference, "smoke"), allow_dirty=True)  # told: goes on
    with pytest.raises(SystemExit) as stopped:
        sweep.main(["smoke", "--out", os.path.join(reference, "smoke")])
    assert stopped.value.code == 2
    line = capsys.readouterr().err.strip()
    assert line.count("\n") == 0 and "2 uncommitted file(s) (pkg/mod.py, pkg/new.py)" in line and "--allow-dirty" in line
    assert not os.path.exists(os.path.join(reference, "smoke"))  # refused before the store was made


def test_the_report_marks_runs_from_a_dirty_tree():
    runs = pd.DataFrame({"sweep": ["speed"] * 3, "git_dirty": [True, False, None],
                         "git_commit": ["a" * 40, "a" * 40, None]})
    assert runs_read(runs) == "3 runs of the speed sweep; 1 of them from a dirty tree"
    assert runs_read(runs.assign(git_dirty=True)) == "3 runs of the speed sweep; all of them from a dirty tree"
    assert runs_read(runs.assign(git_dirty=False)) == "3 runs of the speed sweep"

    class Set:
        pass

    rs = Set()
    rs.runs = runs
    table = provenance.data(rs, note=lambda line: None).data
    assert table.to_dict("records") == [{"sweep": "speed", "runs": 3, "commits": 1, "from a dirty tree": 1,
                                         "not recorded": 1, "at": "aaaaaaa"}]
