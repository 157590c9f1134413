"""The speed before and after a change: the runs interleave cell by cell with the first of each pair
alternating, and a cell is called slower only past the rounds' own spread (analysis/before_after.py,
experiments/benches/speed_before_after.py)."""

import os
import subprocess
import sys

import pandas as pd
import pytest

from analysis import before_after
from experiments.benches import speed_before_after
from tests.synthetic_runs import steady_log, write_run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_each_round_runs_every_cell_in_both_checkouts_back_to_back_alternating_which_goes_first():
    order = speed_before_after.schedule(["a", "b"], 2)
    assert order == [(1, "a", "after"), (1, "a", "before"), (1, "b", "before"), (1, "b", "after"),
                     (2, "a", "before"), (2, "a", "after"), (2, "b", "after"), (2, "b", "before")]
    firsts = [side for i, (_, _, side) in enumerate(speed_before_after.schedule(list("abcd"), 4)) if i % 2 == 0]
    assert firsts.count("before") == firsts.count("after")  # drift hits both alike


def _frame(rates: list[float]) -> pd.DataFrame:
    return pd.DataFrame([{"setting": "busy", "busy_us": 1000.0, "wait_us": 0.0, "design": "actor_learner",
                          "workers": 2, "total_env_steps": 100_000, "seed": 101 + i, "rate": r}
                         for i, r in enumerate(rates)])


@pytest.mark.parametrize("before, after, word", [
    ([1000, 1010, 990, 1005, 995], [1000, 1010, 990, 1005, 995], "within the rounds' spread"),
    ([1000, 1010, 990, 1005, 995], [800, 808, 792, 804, 796], "slower"),
    ([1000, 1010, 990, 1005, 995], [1200, 1212, 1188, 1206, 1194], "faster"),
    ([1000, 1500, 700, 1300, 900], [850, 1275, 595, 1105, 765], "within the rounds' spread"),  # 15% slower, 114% spread
])
def test_a_cell_is_called_slower_or_faster_only_past_the_rounds_own_spread(before, after, word):
    table = before_after.compare(_frame(before), _frame(after))
    (row,) = table.to_dict("records")
    assert row["verdict"] == word and row["rounds"] == 5
    assert row["after / before (median)"] == pytest.approx(pd.Series(after).div(pd.Series(before)).median())


def test_runs_pair_by_seed_and_a_seed_in_one_store_only_is_left_out():
    table = before_after.compare(_frame([1000, 1000, 1000]), _frame([900, 900]))
    assert table["rounds"].tolist() == [2]


def test_runs_of_another_budget_in_the_same_store_are_another_cell():
    """A reference store may still hold an earlier, shorter version of the sweep's cells: their runs
    must not pair with the new ones."""
    old = _frame([3000, 3000]).assign(total_env_steps=10_000)
    new = _frame([1000, 1000]).assign(total_env_steps=100_000)
    table = before_after.compare(new, pd.concat([old, new.assign(rate=[990.0, 1010.0])]))
    assert table["rounds"].tolist() == [2] and table["after / before (median)"].tolist() == pytest.approx([1.0])


def test_rates_read_each_runs_cell_and_its_rate_once_learning(tmp_path):
    for seed, rate in ((101, 500.0), (102, 520.0)):
        write_run(str(tmp_path), f"speed-{seed}", config={"design": "hogwild", "num_workers": 8, "seed": seed,
                                                         "env_step_wait_us": 2200.0, "learning_starts": 0,
                                                         "total_env_steps": 10_000},
                  result={"env_steps": 10_000, "train_seconds": 10_000 / rate, "env_steps_per_sec": rate},
                  metrics=steady_log(rate))
    frame = before_after.rates(str(tmp_path)).sort_values("seed")
    assert frame[["setting", "design", "workers", "seed"]].values.tolist() == [["waits", "hogwild", 8, 101],
                                                                              ["waits", "hogwild", 8, 102]]
    assert frame["total_env_steps"].tolist() == [10_000, 10_000]
    assert frame["rate"].tolist() == pytest.approx([500.0, 520.0])


def test_the_driver_lists_one_pattern_per_cell_and_its_dry_run_runs_nothing(tmp_path):
    patterns = speed_before_after.cell_patterns(ROOT, "speed")
    assert len(patterns) == len(set(patterns)) == 13
    assert "practitioner_shape/hogwild/num_workers=16" in patterns and "cartpole/single_env" in patterns
    proc = subprocess.run([sys.executable, "-m", "experiments.benches.speed_before_after", "--before", ROOT,
                           "--after", ROOT, "--rounds", "2", "--dry-run", "--after-out", str(tmp_path / "after")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "52 runs: 13 cells x 2 rounds x 2 checkouts" in proc.stdout and not (tmp_path / "after").exists()
    one = subprocess.run([sys.executable, "-m", "experiments.benches.speed_before_after", "--before", ROOT,
                          "--after", ROOT, "--rounds", "1", "--dry-run"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert one.returncode == 2 and "--rounds: must be 2 to 10" in one.stderr  # one round has no spread to weigh


def test_cells_picks_the_part_of_the_sweep_each_pattern_names_and_refuses_one_that_names_none():
    cells = ["cartpole/single_env", "cartpole/hogwild/num_workers=2", "practitioner_shape/hogwild/num_workers=8"]
    assert speed_before_after.select(cells, None) == cells
    assert speed_before_after.select(cells, "cartpole") == cells[:2]
    assert speed_before_after.select(cells, "hogwild/practitioner_shape,cartpole/single_env") == [cells[0], cells[2]]
    proc = subprocess.run([sys.executable, "-m", "experiments.benches.speed_before_after", "--before", ROOT,
                           "--after", ROOT, "--rounds", "2", "--dry-run", "--cells", "cartpole"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "20 runs: 5 cells x 2 rounds x 2 checkouts" in proc.stdout, proc.stderr[-2000:]
    none = subprocess.run([sys.executable, "-m", "experiments.benches.speed_before_after", "--before", ROOT,
                           "--after", ROOT, "--rounds", "2", "--dry-run", "--cells", "atari"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert none.returncode == 2 and "no cell of 'speed' matches" in none.stderr


def _aucs(aucs: list[float], workers: int = 8) -> pd.DataFrame:
    return pd.DataFrame([{"setting": "waits", "busy_us": 0.0, "wait_us": 2200.0, "design": "hogwild", "workers": workers,
                          "total_env_steps": 100_000, "seed": 101 + i, "auc": a} for i, a in enumerate(aucs)])


def test_each_after_run_is_read_against_the_range_of_the_reference_runs_of_its_cell():
    """The learning guardrail of the roles redesign: runs after a change against the reference sweep's runs of the
    same cell."""
    reference = _aucs([300.0, 350.0, 400.0, 420.0, 380.0])
    inside = before_after.inside_spread(reference, _aucs([310.0, 410.0, 399.0]))
    assert inside["verdict"].tolist() == ["inside the reference's range"] and inside["reference runs"].tolist() == [5]
    assert inside["after runs (seeds)"].tolist() == ["310.0 (101), 410.0 (102), 399.0 (103)"]
    outside = before_after.inside_spread(reference, _aucs([290.0, 430.0, 350.0]))
    assert outside["verdict"].tolist() == ["2 of 3 outside (1 below, 1 above)"]
    assert before_after.inside_spread(reference, _aucs([300.0], workers=16)).empty  # no reference runs of that cell


def test_learning_reads_each_runs_mean_holdout_return(tmp_path):
    curve = [{"env_steps": 1_000, "return_mean": 100.0}, {"env_steps": 2_000, "return_mean": 200.0}]
    write_run(str(tmp_path), "run-1", config={"design": "hogwild", "num_workers": 8, "seed": 101,
                                              "env_step_wait_us": 2200.0, "total_env_steps": 2_000},
              result={"env_steps": 2_000, "train_seconds": 4.0, "env_steps_per_sec": 500.0, "holdout_curve": curve})
    frame = before_after.learning(str(tmp_path))
    assert frame[["design", "workers", "seed"]].values.tolist() == [["hogwild", 8, 101]]
    assert frame["auc"].tolist() == pytest.approx([150.0])
