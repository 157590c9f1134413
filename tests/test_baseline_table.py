import csv
import json

import pytest

from analysis.io.baseline_table import load_completed_runs, main


def _write_run(folder, run_id, status, seed, final=500.0):
    d = folder / str(run_id)
    d.mkdir(parents=True)
    result = {"architecture": "single_env", "env_steps": 100, "final_holdout_return": final,
              "env_steps_per_sec": 1234.56, "realised_utd": 0.25, "train_seconds": 1.0,
              "holdout_curve": [{"env_steps": 50, "return_mean": 10.0}, {"env_steps": 100, "return_mean": final}]}
    run = {"status": status, "result": result if status == "COMPLETED" else None,
           "host": {"cpu_model": "test cpu", "git": {"commit": "abc"}}}
    (d / "run.json").write_text(json.dumps(run))
    (d / "config.json").write_text(json.dumps({"env_id": "CartPole-v1", "seed": seed}))


def test_table_keeps_completed_runs_only(tmp_path, capsys):
    runs = tmp_path / "runs"
    _write_run(runs, 1, "COMPLETED", seed=2, final=480.0)
    _write_run(runs, 2, "FAILED", seed=3)
    _write_run(runs, 3, "COMPLETED", seed=1)
    out = tmp_path / "table.csv"
    main([str(runs), "--out", str(out)])
    rows = list(csv.DictReader(open(out)))
    assert [r["seed"] for r in rows] == ["1", "2"]
    assert rows[1]["final_holdout_return"] == "480.0" and rows[1]["holdout@50"] == "10.0"
    captured = capsys.readouterr()
    assert "skipping run 2: status FAILED" in captured.err
    assert "| 2 | 480.0 |" in captured.out


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no runs folder"):
        load_completed_runs(str(tmp_path / "nope"))
