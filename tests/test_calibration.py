"""analysis.calibration: a calibration sweep's cells side by side and the rule that picks one."""

import subprocess
import sys

import pytest
from sacred.observers import FileStorageObserver

from analysis.calibration import cells
from analysis.io.load import load_runs
from tests.synthetic_runs import make_runs


@pytest.mark.slow
def test_the_cell_with_the_best_early_mean_over_seeds_is_chosen(tmp_path):
    """Two cells by lr over two seeds: the holdout at checkpoint k of K is quality * k / K + seed,
    so at checkpoints 1000, 2000 of 3000 (upto 2000) the early mean is quality / 2 + seed; the
    cell with the higher quality is chosen, however its final return compares."""
    specs = [{"run_id": f"cal-{lr}-{seed}", "seed": seed, "lr": lr, "quality": quality}
             for lr, quality in ((2.5e-4, 60.0), (1e-3, 90.0)) for seed in (1, 2)]
    make_runs(FileStorageObserver(str(tmp_path)), specs)
    rs = load_runs([str(tmp_path)])
    table = cells(rs.runs, rs.holdout, upto=2_000).set_index("lr")
    assert table.loc["0.001", "chosen"] == "yes" and table.loc["0.00025", "chosen"] == ""
    assert table.loc["0.001", "mean to 2,000, mean over seeds"] == 90.0 / 2 + 1.5
    assert table.loc["0.00025", "final"] == "61.0, 62.0" and table.loc["0.00025", "seeds"] == "1, 2"
    out = subprocess.run([sys.executable, "-m", "analysis.calibration", "--runs", str(tmp_path), "--upto", "2000"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "| 0.001 |" in out.stdout, out.stderr
    missing = subprocess.run([sys.executable, "-m", "analysis.calibration", "--runs", str(tmp_path / "none"),
                              "--upto", "1"], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "error: --runs" in missing.stderr
