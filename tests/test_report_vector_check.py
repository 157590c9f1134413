"""The vector_check sweep's speed checks (analysis/report/speed/vector_check.py) on hand-written runs: each setting's
committed prediction beside its runs made alone, and the acceptance ratios taken within a seed."""

import json

import pytest

from analysis.io.load import load_runs
from analysis.report.speed import vector_check
from tests.synthetic_runs import steady_log, write_run

BUSY = {"env_step_cost_us": 1000.0}
WAIT = {"env_step_wait_us": 2000.0}


def _run(store, name, seed, arch, workers, config, speed, at_once=1):
    """A run of `speed` env steps/s, no warm-up: its rate once learning (the report's speed) is the same."""
    write_run(str(store), f"vector_check-{name}s{seed}", {"architecture": arch, "seed": seed, "num_workers": workers,
                                                         **config},
              {"env_steps": speed * 10, "train_seconds": 10.0, "env_steps_per_sec": speed, "runs_at_once": at_once,
               "holdout_curve": []}, metrics=steady_log(speed))


def test_predictions_meet_their_runs_and_ratios_are_taken_within_a_seed(tmp_path):
    store = tmp_path / "vector_check"
    for seed, machine in ((101, 1.0), (102, 2.0), (103, 1.0)):  # seed 102 ran on a machine twice as fast
        _run(store, "single", seed, "single_env", 1, BUSY, 700.0 * machine)
        _run(store, "vec2", seed, "vector_env", 2, BUSY, 1_200.0 * machine)
        _run(store, "vec4", seed, "vector_env", 4, WAIT, 1_800.0 * machine)
        _run(store, "al4", seed, "actor_learner", 4, WAIT, 1_900.0 * machine)
    _run(store, "vec4late", 104, "vector_env", 4, WAIT, 100.0, at_once=2)  # beside another run: no measurement
    paths = {}
    for name, rows in (("busy", [("single_env", 1, 800.0), ("vector_env", 2, 1_500.0)]),
                       ("wait", [("vector_env", 4, 1_800.0), ("actor_learner", 4, 2_000.0)])):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps({"predictions": [
            {"design": d, "workers": n, "predicted_env_steps_per_sec": v, "predicted_steady_env_steps_per_sec": v,
             "bottleneck": "main"} for d, n, v in rows]}))
    notes = []
    made = vector_check.data(load_runs([str(tmp_path)]), notes.append, {k: str(v) for k, v in paths.items()})
    rows = made.data.set_index(["setting", "design", "workers"])
    vec2 = rows.loc[("busy", "vector_env", 2)]
    assert vec2["runs"] == 3 and vec2["measured"] == 1_200.0 and vec2["miss"] == pytest.approx(1_200 / 1_500 - 1)
    assert rows.loc[("wait", "vector_env", 4), "runs"] == 3  # the run made beside another is left out
    ratios = {name: frame for name, frame, _ in made.tables}["vector_check_ratios"].set_index("ratio")
    assert ratios.loc["vector_env (2) / single_env (1)", "median (range)"] == "1.71 (1.71-1.71)"  # the fast seed cancels
    assert ratios.loc["vector_env (4) / actor_learner (4)", "seeds"] == 3
    numbers = dict((n, v) for n, v, _ in made.numbers)
    assert numbers["VectorCheckBusyVectorEnvTwoOverSingleEnv"] == pytest.approx(1_200 / 700)


def test_without_runs_it_says_how_to_make_them(tmp_path):
    write_run(str(tmp_path / "architectures"), "architectures-single1", {}, {"env_steps_per_sec": 1.0})
    notes = []
    assert vector_check.data(load_runs([str(tmp_path)]), notes.append) is None
    assert any("experiments.sweep vector_check" in n for n in notes)
