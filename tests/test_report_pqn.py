"""The pqn family (analysis/report/pqn.py) on synthetic runs with known curves and speeds: who
solved CartPole, when first, and the seconds that takes at the speed of one-at-a-time runs."""

import json

import numpy as np
import pytest
from sacred.observers import FileStorageObserver

from analysis.load import load_runs
from analysis.report import pqn
from tests.synthetic_runs import headline_specs, make_runs


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("pqn_store")
    make_runs(FileStorageObserver(str(root / "architectures")), headline_specs())
    # Curves rise linearly to quality + seed: 480 + seed ends solved; its 5th of 6 checkpoints is 400 + seed.
    make_runs(FileStorageObserver(str(root / "pqn")), [
        {"run_id": f"pqn-s{seed}", "seed": seed, "architecture": "pqn", "num_workers": 4, "total_env_steps": 6_000,
         "quality": 480.0} for seed in (1, 2, 3)])
    make_runs(FileStorageObserver(str(root / "scaling")), [
        {"run_id": f"scaling-pqn{seed}", "seed": seed, "architecture": "pqn", "num_workers": 4, "speed": 2_000.0}
        for seed in (1, 2, 3)])
    notes = []
    return pqn.data(load_runs([str(root)]), notes.append), notes


def test_pqn_is_set_beside_the_headline_by_when_it_first_solved_and_at_what_speed(made):
    made, notes = made
    rows = made.data.set_index("design")
    assert rows.loc["pqn", "final_solved"] == 3 and rows.loc["pqn", "reached"] == 3
    assert rows.loc["pqn", "first_median"] == 6_000  # the first checkpoint at >= 475 is the last one
    assert rows.loc["single_env", "reached"] == 0 and np.isnan(rows.loc["single_env", "first_median"])
    assert rows.loc["pqn", "speed"] == pytest.approx(2_000 * 1.02)  # the scaling runs' median (seeds 1-3)
    assert rows.loc["pqn", "seconds"] == pytest.approx(6_000 / (2_000 * 1.02))
    assert np.isnan(rows.loc["single_env", "seconds"])  # never solved, and no scaling runs of it here
    numbers = dict((name, value) for name, value, _ in made.numbers)
    assert numbers["PqnEvalEvery"] == 1_000 and numbers["PqnCmpPqnFinalSolved"] == 3
    assert numbers["PqnCmpSingleEnvSpeed"] == "not measured"
    table = {name: frame for name, frame, _ in made.tables}["pqn_cartpole"]
    assert list(table.iloc[0][["final >= 475", "reached 475 at a checkpoint"]]) == ["3 of 3", "3 of 3"]


def test_without_pqn_runs_the_family_says_which_sweep_makes_them(tmp_path):
    make_runs(FileStorageObserver(str(tmp_path / "architectures")), headline_specs(1))
    notes = []
    assert pqn.data(load_runs([str(tmp_path)]), notes.append) is None
    assert any("experiments.sweep pqn" in n for n in notes)


def test_the_speed_check_sets_the_committed_prediction_beside_the_runs_made_alone(tmp_path):
    make_runs(FileStorageObserver(str(tmp_path / "scaling")), [
        {"run_id": f"scaling-pqn{seed}", "seed": seed, "architecture": "pqn", "num_workers": 4, "speed": 2_000.0,
         "runs_at_once": 1 if seed < 3 else 2} for seed in (1, 2, 3)])
    costs = {"vector_round_trip": {"1": {"us": 100.0}, "4": {"us": 400.0}}, "rollout_learn": {"4": {"us": 40.0}}}
    path = tmp_path / "predicted.json"
    path.write_text(json.dumps({"predictions": [{"design": "pqn", "workers": 4, "predicted_env_steps_per_sec": 4_000.0,
                                                 "bottleneck": "envs"}], "component_costs_us": costs}))
    made = pqn.speed_check_data(load_runs([str(tmp_path)]), [].append, path=str(path))
    row = made.data.iloc[0]
    assert row["runs"] == 2  # the run made beside another is no speed measurement
    assert row["measured"] == pytest.approx(2_000 * 1.015) and row["miss"] == pytest.approx(2_030 / 4_000 - 1)
    assert row["trip_alone"] == 400.0 and row["learn_alone"] == 40.0
    assert dict((n, v) for n, v, _ in made.numbers)["PqnMissFour"] == pytest.approx(100 * (2_030 / 4_000 - 1))
