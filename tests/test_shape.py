"""The practitioner's-shape report (analysis/report/speed/shape.py): measured cells against the
predictions committed before the runs, no refit, and each run's own bound."""

import json

import numpy as np

from analysis.io.load import load_runs
from analysis.report.speed import shape
from analysis.report.framework.common import SPEED
from tests.synthetic_runs import steady_log, write_run


def _predicted(design: str, workers: int, rate: float, bound: str) -> dict:
    """One cell of a committed predicted.json: its rate once learning (the one set against the runs'),
    and over the whole run (the same here: these runs have no warm-up)."""
    return {"design": design, "workers": workers, "predicted_env_steps_per_sec": rate,
            "predicted_steady_env_steps_per_sec": rate, "bottleneck": bound}


def _result(speed: float, role: str, learner_busy: float) -> dict:
    seconds = 10.0
    return {"env_steps": int(speed * seconds), "env_steps_per_sec": speed, "train_seconds": seconds,
            "final_holdout_return": float("nan"), "holdout_curve": [],
            "time_breakdown": {"update": {"seconds": 6.0}, "sample": {"seconds": 1.0},
                               "handoff_drain": {"seconds": 0.5}, "wait": {"seconds": 2.0}},
            "bottleneck": {"role": role, "busy_fraction": {"learner": learner_busy, "actors": 0.3},
                           "summary": f"{role} ..."}}


def test_each_cell_is_read_against_its_prediction_and_names_its_bound(tmp_path, monkeypatch):
    store = tmp_path / "runs"
    speeds = {("actor_learner", 1): [400.0, 420.0, 410.0], ("actor_learner", 8): [2_000.0, 2_100.0, 1_900.0],
              ("single_env", 1): [390.0, 380.0, 400.0]}
    for (arch, n), values in speeds.items():
        for seed, speed in zip((101, 102, 103), values):
            role = "learner" if n == 8 else "actors"
            write_run(str(store), f"seed_shape-{arch}{n}s{seed}",
                      config={"architecture": arch, "num_workers": n, "seed": seed, "env_step_wait_us": 2200.0},
                      result=_result(speed, role, 0.98 if n == 8 else 0.4), metrics=steady_log(speed))
    predicted = tmp_path / "predicted.json"
    predicted.write_text(json.dumps({"predictions": [
        _predicted("actor_learner", 1, 400.0, "actors"),
        _predicted("actor_learner", 8, 2_600.0, "learner"),
        _predicted("single_env", 1, 395.0, "process")]}))
    monkeypatch.setattr(shape, "PREDICTIONS", str(predicted))
    notes: list[str] = []
    made = shape.data(load_runs([str(store)]), notes.append)
    points = made.parts["points"].set_index(["design", "num_workers"])
    assert points.loc[("actor_learner", 8), SPEED] == 2_000.0  # the median over seeds
    assert np.isclose(points.loc[("actor_learner", 8), "error"], 2_000 / 2_600 - 1)  # a miss stays a miss
    assert points.loc[("actor_learner", 8), "measured_bound"] == "learner"
    assert points.loc[("actor_learner", 8), "learner_shares"] == "60% / 10% / 5% / 20%"
    numbers = dict((name, value) for name, value, _ in made.numbers)
    assert numbers["ShapeCells"] == 3 and numbers["ShapeCellsWithinTwenty"] == 2  # 2,000 against 2,600: -23%, a miss
    assert numbers["ShapeActorLearnerBestWorkers"] == 8
    [(name, table, _)] = made.tables
    assert name == "seed_shape_model" and len(table) == 3 and not notes


def test_the_second_prediction_is_read_against_its_own_sweep_and_leaves_the_first_alone(tmp_path, monkeypatch):
    """shape_check runs go to the second table (shape_check_model) against the second prediction;
    the first family sees none of them."""
    store = tmp_path / "runs"
    for seed, speed in zip((101, 102), (2_400.0, 2_500.0)):
        write_run(str(store), f"shape_check-actor_learner24s{seed}",
                  config={"architecture": "actor_learner", "num_workers": 24, "seed": seed, "env_step_wait_us": 2200.0},
                  result=_result(speed, "learner", 0.98), metrics=steady_log(speed))
    predicted = tmp_path / "check.json"
    predicted.write_text(json.dumps({"predictions": [
        _predicted("actor_learner", 24, 2_300.0, "learner")]}))
    monkeypatch.setattr(shape, "CHECK_PREDICTIONS", str(predicted))
    runs = load_runs([str(store)])
    notes: list[str] = []
    made = shape.check_data(runs, notes.append)
    [(name, table, _)] = made.tables
    assert name == "shape_check_model" and len(table) == 1 and not notes
    numbers = dict((name, value) for name, value, _ in made.numbers)
    assert numbers["ShapeCheckCells"] == 1 and numbers["ShapeCheckCellsWithinTwenty"] == 1  # 2,450 against 2,300
    assert shape.data(runs, notes.append) is None and "seed_shape" in notes[-1]


def test_the_third_prediction_reads_its_own_sweep_and_quotes_the_cores_the_runs_kept_busy(tmp_path, monkeypatch):
    """shape_confirm runs go to the third table against the third prediction, with each median
    run's cores busy (its `cpu`); the second family sees none of them."""
    store = tmp_path / "runs"
    for seed, speed, busy in zip((101, 102), (3_300.0, 3_500.0), (1.9, 1.95)):
        result = {**_result(speed, "learner", 0.9), "cpu": {"cores_busy": busy}}
        write_run(str(store), f"shape_confirm-actor_learner12s{seed}",
                  config={"architecture": "actor_learner", "num_workers": 12, "seed": seed, "env_step_wait_us": 2200.0},
                  result=result, metrics=steady_log(speed))
    predicted = tmp_path / "confirm.json"
    predicted.write_text(json.dumps({"predictions": [
        _predicted("actor_learner", 12, 4_500.0, "cores")]}))
    monkeypatch.setattr(shape, "CONFIRM_PREDICTIONS", str(predicted))
    runs = load_runs([str(store)])
    notes: list[str] = []
    made = shape.confirm_data(runs, notes.append)
    [(name, table, _)] = made.tables
    assert name == "shape_confirm_model" and not notes
    assert table["cores busy"].tolist() == ["1.95"]  # the median run's (of two: the upper)
    assert table["error"].tolist() == ["-24%"]  # the median 3,400 against 4,500: a miss stays a miss
    numbers = dict((name, value) for name, value, _ in made.numbers)
    assert numbers["ShapeConfirmCellsWithinTwenty"] == 0
    assert shape.check_data(runs, notes.append) is None and "shape_check" in notes[-1]
