"""The report reads every run: several `-F` stores under one folder whose Sacred ids collide (each
numbers its runs 1, 2, ...), runs it cannot use named in its problems, and diverged runs counted
apart from the headline (analysis/io/stores.py, analysis/io/load.py, analysis/report/framework/selection.py)."""

import json
import os

import pytest
from sacred.observers import FileStorageObserver

from analysis.io.load import load_runs
from analysis.report.learning import improvement
from analysis.report.learning import curves as learning
from analysis.report.learning import utd
from tests.synthetic_runs import headline_specs, make_runs, write_run

RESULT = {"architecture": "single_env", "env_steps": 3_000, "env_steps_per_sec": 1_000.0, "train_seconds": 3.0,
          "final_holdout_return": 100.0, "holdout_curve": [{"env_steps": 1_000, "return_mean": 50.0},
                                                           {"env_steps": 3_000, "return_mean": 100.0}]}


def _stores(root, names, ids=("1", "2")):
    for name in names:
        for seed, run_id in enumerate(ids, start=1):
            write_run(os.path.join(root, name), run_id, {"seed": seed}, RESULT)


def _cut(root):
    """A run whose run.json a full disk cut mid-way, beside a good one."""
    _stores(root, ["a"])
    text = json.dumps({"status": "COMPLETED", "result": RESULT})
    write_run(os.path.join(root, "a"), "3", run_json=text[:len(text) // 2])


STORE_CASES = [
    # (case, how the folder is laid out, the sources read under it, run ids read, problems named)
    ("three -F stores under one folder, each numbering its runs 1, 2",
     lambda root: _stores(root, ["store1", "store2", "nested/store3"]), ["."],
     ["nested/store3/1", "nested/store3/2", "store1/1", "store1/2", "store2/1", "store2/2"], []),
    ("a sweep's unique ids beside a -F store keep their names",
     lambda root: (_stores(root, ["sweeps"], ids=("smoke-76db19def1", "smoke-0a1b2c3d4e")), _stores(root, ["mine"])),
     ["."], ["1", "2", "smoke-0a1b2c3d4e", "smoke-76db19def1"], []),
    ("two folders given, each a store holding run 1",
     lambda root: _stores(root, ["x", "y"], ids=("1",)), ["x", "y"], ["x/1", "y/1"], []),
    ("the same store reached twice is read once and named",
     lambda root: _stores(root, ["a"]), [".", "a"], ["1", "2"],
     ["run 1 (", "the same run was already read from", "run 2 ("]),
    ("a COMPLETED run without a result is named, not read",
     lambda root: (_stores(root, ["a"], ids=("1",)), write_run(os.path.join(root, "a"), "2", result=None)),
     ["."], ["1"], ["run 2 (", "COMPLETED but has no result; left out"]),
    ("a run.json cut mid-way is named, not read", _cut, ["."], ["1", "2"], ["run 3 (", "unreadable"]),
]


@pytest.mark.parametrize("case, layout, sources, expected, problems", STORE_CASES, ids=[c[0] for c in STORE_CASES])
def test_every_run_of_every_store_is_read_once(tmp_path, case, layout, sources, expected, problems):
    layout(str(tmp_path))
    rs = load_runs([str(tmp_path / source) for source in sources])
    assert sorted(rs.runs["run_id"]) == expected, case
    assert sorted(set(rs.holdout["run_id"])) == expected  # every frame keys the runs alike
    assert rs.runs["source"].nunique() == len(expected)  # each a folder of its own
    said = "\n".join(rs.problems)
    assert all(part in said for part in problems) and bool(problems) == bool(rs.problems), said
    sweeps = dict(zip(rs.runs["run_id"], rs.runs["sweep"]))
    assert all(sweeps[r] == (r.rsplit("-", 1)[0] if "-" in r else "") for r in expected)  # from the Sacred id


@pytest.fixture()
def diverged_store(tmp_path):
    """The headline in miniature, plus a fourth single_env seed and the only vector_env run, both
    stopped diverged (returns far below the others: counted in, they would move every IQM)."""
    make_runs(FileStorageObserver(str(tmp_path / "architectures")), headline_specs() + [
        {"run_id": "architectures-single4", "seed": 4, "quality": -1_000.0, "diverged_at_update": 120},
        {"run_id": "architectures-vector1", "seed": 1, "architecture": "vector_env", "num_workers": 2,
         "quality": -1_000.0, "diverged_at_update": 40}])
    return tmp_path


def test_a_diverged_run_is_counted_apart_from_the_headline(diverged_store):
    rs = load_runs([str(diverged_store)])
    stopped = rs.runs.set_index("run_id").loc["architectures-single4"]
    assert (stopped["diverged"], stopped["diverged_at_update"], stopped["diverged_reason"]) == \
        (True, 120, "non-finite TD loss")
    notes = []
    made = learning.speed_quality_data(rs, notes.append)
    data = made.data.set_index("design")
    assert data.index.tolist() == ["actor_learner", "high_utd", "single_env"]  # no vector_env run is left
    assert data.loc["single_env", ["seeds", "final_return_iqm"]].tolist() == [3, pytest.approx(102)]
    [(_, table, caption)] = made.tables
    assert table[["design", "seeds", "diverged, left out"]].values.tolist() == [
        ["actor_learner (2)", 3, "0 of 3"], ["high_utd (utd 4)", 3, "0 of 3"], ["single_env", 3, "1 of 4"],
        ["vector_env (2)", 0, "1 of 1"]]
    assert table.iloc[3]["final holdout return, IQM [95% CI]"] == "-" and "counted in the last column" in caption
    assert notes[-1] == ("speed against quality: 2 of 11 headline runs diverged and are left out: "
                         "architectures-single4, architectures-vector1")
    curves = learning.curves_data(rs, [].append).data
    assert set(curves.loc[curves["design"] == "single_env", "seeds"]) == {3}
    assert "vector_env" not in set(curves["design"])
    poi = improvement.data(rs, [].append).data
    assert set(poi["baseline_seeds"]) == {3} and "vector_env" not in set(poi["design"])


def test_without_a_diverged_run_the_table_is_as_it_was(tmp_path):
    make_runs(FileStorageObserver(str(tmp_path / "architectures")), headline_specs())
    [(_, table, caption)] = learning.speed_quality_data(load_runs([str(tmp_path)]), [].append).tables
    assert "diverged, left out" not in table.columns and "diverged" not in caption


def test_the_utd_grid_keeps_its_diverged_runs(tmp_path):
    long = {"total_env_steps": 50_000, "eval_every": 25_000, "architecture": "high_utd", "utd": 4.0}
    make_runs(FileStorageObserver(str(tmp_path / "utd")), [
        {"run_id": "utd-u4none1", "seed": 1, **long},
        {"run_id": "utd-u4none2", "seed": 2, "diverged_at_update": 900, **long}])
    grid = utd.data(load_runs([str(tmp_path)]), [].append).data
    assert grid[["seeds", "diverged_runs"]].values.tolist() == [[2, 1]]


def test_committed_inputs_are_found_from_the_package_wherever_the_report_runs(tmp_path):
    """Run from another folder, the report still reads the committed benchmarks (the pqn
    side-by-side table was missing) and writes no cache there (it made `results/.cache` in the
    working directory)."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    _stores(str(tmp_path / "store"), ["architectures"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run([sys.executable, "-m", "analysis.report", "--runs", str(tmp_path / "store"), "--out", "out"],
                          cwd=elsewhere, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (elsewhere / "out" / "tables" / "pqn_side_by_side.csv").exists()
    assert sorted(os.listdir(elsewhere)) == ["out"]  # no results/.cache beside it
