"""The pqn family (analysis/report/learning/pqn.py) on synthetic runs with known curves and speeds: who
solved CartPole, when first, and the seconds that takes at the speed measured side by side."""

import json

import numpy as np
import pytest
from sacred.observers import FileStorageObserver

from analysis.io.load import load_runs
from analysis.report.learning import pqn
from tests.synthetic_runs import headline_specs, make_runs


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("pqn_store")
    make_runs(FileStorageObserver(str(root / "architectures")), headline_specs())
    # Curves rise linearly to quality + seed: 480 + seed ends solved; its 5th of 6 checkpoints is 400 + seed.
    make_runs(FileStorageObserver(str(root / "pqn")), [
        {"run_id": f"pqn-s{seed}", "seed": seed, "architecture": "pqn", "num_workers": 4, "total_env_steps": 6_000,
         "quality": 480.0} for seed in (1, 2, 3)])
    bench = root / "bench.json"  # the side-by-side bench: pqn's three rounds, no single_env in it
    bench.write_text(json.dumps([{"cost_us": 0.0, "round": r, "arch": "pqn", "num_workers": 4,
                                  "env_steps_per_sec": speed} for r, speed in enumerate((1_900.0, 2_000.0, 2_500.0))]))
    notes = []
    return pqn.data(load_runs([str(root)]), notes.append, bench=str(bench)), notes


def test_pqn_is_set_beside_the_headline_by_when_it_first_solved_and_at_what_speed(made):
    made, notes = made
    rows = made.data.set_index("design")
    assert rows.loc["pqn", "final_solved"] == 3 and rows.loc["pqn", "reached"] == 3
    assert rows.loc["pqn", "first_median"] == 6_000  # the first checkpoint at >= 475 is the last one
    assert rows.loc["single_env", "reached"] == 0 and np.isnan(rows.loc["single_env", "first_median"])
    assert rows.loc["pqn", "speed"] == 2_000.0  # the bench's median over its rounds
    assert rows.loc["pqn", "seconds"] == pytest.approx(6_000 / 2_000.0)
    assert np.isnan(rows.loc["single_env", "seconds"])  # never solved, and not in the bench
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
                                                 "predicted_steady_env_steps_per_sec": 4_000.0, "bottleneck": "envs"}],
                                "component_costs_us": costs}))
    notes = []
    made = pqn.speed_check_data(load_runs([str(tmp_path)]), notes.append,
                                paths={"CartPole": str(path), "Breakout": str(tmp_path / "none.json")})
    row = made.data.iloc[0]
    assert row["runs"] == 2  # the run made beside another is no speed measurement
    assert row["measured"] == pytest.approx(2_000 * 1.015) and row["miss"] == pytest.approx(2_030 / 4_000 - 1)
    assert row["trip_alone"] == 400.0 and row["learn_alone"] == 40.0
    assert dict((n, v) for n, v, _ in made.numbers)["PqnMissFour"] == pytest.approx(100 * (2_030 / 4_000 - 1))
    assert row["game"] == "CartPole" and len(made.data) == 1
    assert any("Breakout: no predictions" in n for n in notes)  # a game without its prediction is said, not guessed


def test_side_by_side_ratios_are_taken_within_rounds(tmp_path):
    """Round 2 ran on a machine twice as fast for everyone: the ratios, taken within rounds, do not move."""
    runs = [{"cost_us": 0.0, "round": r, "arch": a, "env_steps_per_sec": base * scale, **extra}
            for r, scale in ((0, 1.0), (1, 2.0), (2, 1.0))
            for a, base, extra in (("single_env", 1_000.0, {}), ("pqn", 1_500.0, {"num_workers": 4}))]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(runs))
    made = pqn.side_by_side_data(None, [].append, paths={"Breakout": str(path)})
    row = made.data.set_index("design").loc["pqn"]
    assert (row["ratio"], row["ratio_low"], row["ratio_high"]) == (1.5, 1.5, 1.5)
    assert row["workers"] == 4 and row["speed"] == 1_500.0 and row["speed_high"] == 3_000.0
    assert dict((n, v) for n, v, _ in made.numbers)["PqnSideBreakoutPqn"] == 1.5
