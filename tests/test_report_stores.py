"""The report reads every run: several `-F` stores under one folder whose Sacred ids collide (each
numbers its runs 1, 2, ...), and runs it cannot use named in its problems (analysis/load.py)."""

import json
import os

import pytest

from analysis.load import load_runs
from tests.synthetic_runs import write_run

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
