"""One speed measure: every speed the report's modules quote, tabulate or draw of a stored run is
its env steps/s once learning starts (analysis.io.load.LEARNING_RATE, the report's SPEED), never the
run's whole-run `env_steps_per_sec`, which averages its fast warm-up in. The synthetic runs here
spend 2,000 of their 3,000 env steps warming up at 10x their rate (tests/synthetic_runs.py), so
their whole-run rate is 2.5x their rate once learning: a module that quoted it again fails here."""

import json

import pytest
from sacred.observers import FileStorageObserver

from analysis.io.load import LEARNING_RATE, load_runs
from analysis.report.framework import page
from analysis.report.speed import scaling
from analysis.report.speed import shape
from analysis.report.speed import vector_check
from analysis.report.framework.common import PREDICTED, SPEED
from tests.synthetic_runs import make_runs

WARM = {"learning_starts": 2_000, "eval_episodes": 0}
"""2,000 of the 3,000 env steps at 10x the rate: the whole run's rate is 3,000 / 1.2 s, 2.5x the rate."""


def _once(speed: float, seed: int) -> float:
    """A synthetic run's rate once learning: its `speed` with its seed's offset."""
    return speed * (1 + seed / 100)


def _numbers(made) -> dict:
    return {name: value if isinstance(value, str) else fmt.format(value) for name, value, fmt in made.numbers}


def test_the_measure_is_the_loaders_rate_once_learning():
    assert SPEED == LEARNING_RATE == "learning_env_steps_per_sec"


def test_scaling_quotes_the_rate_once_learning_and_drops_a_run_without_one(tmp_path):
    make_runs(FileStorageObserver(str(tmp_path / "scaling")), [
        {"run_id": "scaling-single1", "seed": 1, "speed": 1_000.0, **WARM},
        {"run_id": "scaling-actor1", "seed": 1, "architecture": "actor_learner", "num_workers": 2, "speed": 1_500.0,
         **WARM},
        {"run_id": "scaling-hogwild1", "seed": 1, "architecture": "hogwild", "num_workers": 2, "speed": 1_800.0,
         **WARM},
        # no log at or after learning_starts: no rate once learning, so no speed at all
        {"run_id": "scaling-single2", "seed": 2, "speed": 9_000.0, "learning_starts": 3_000, "eval_episodes": 0}])
    rs = load_runs([str(tmp_path)])
    whole = rs.runs.set_index("run_id")["env_steps_per_sec"]
    assert whole["scaling-single1"] == pytest.approx(2.5 * _once(1_000, 1))  # the two measures do differ
    notes = []
    made = scaling.data(rs, notes.append)
    points = made.parts["points"].set_index("design")
    assert points[SPEED].to_dict() == pytest.approx(
        {"actor_learner": _once(1_500, 1), "hogwild": _once(1_800, 1), "single_env": _once(1_000, 1)})
    assert "env_steps_per_sec" not in made.data  # the CSV names what it holds
    numbers = _numbers(made)
    assert numbers["ScalingSingleCostZero"] == "1,010" and numbers["ScalingHogwildTwoCostZero"] == "1,818"
    assert numbers["SpeedupHogwildTwoCostZero"] == "1.80"
    assert ("scaling: run scaling-single2 has no env steps/s once learning (no log at or after learning_starts); "
            "left out") in notes
    assert made.parts["spread"][("CartPole", 0.0, "hogwild", 2)] == pytest.approx((1_818, 1_818))


def test_shape_sets_the_rate_once_learning_against_its_prediction_of_that_rate(tmp_path, monkeypatch):
    make_runs(FileStorageObserver(str(tmp_path / "seed_shape")), [
        *[{"run_id": f"seed_shape-al4s{seed}", "seed": seed, "architecture": "actor_learner", "num_workers": 4,
           "speed": 2_000.0, **WARM} for seed in (1, 2, 3)],
        {"run_id": "seed_shape-single1", "seed": 1, "speed": 400.0, **WARM},
        {"run_id": "seed_shape-single2", "seed": 2, "speed": 400.0, "learning_starts": 3_000, "eval_episodes": 0}])
    predicted = tmp_path / "predicted.json"  # the whole run's prediction and, apart, the rate once learning's
    predicted.write_text(json.dumps({"predictions": [
        {"design": "actor_learner", "workers": 4, "predicted_env_steps_per_sec": 5_000.0,
         "predicted_steady_env_steps_per_sec": 2_000.0, "bottleneck": "learner"},
        {"design": "single_env", "workers": 1, "predicted_env_steps_per_sec": 1_000.0,
         "predicted_steady_env_steps_per_sec": 400.0, "bottleneck": "process"}]}))
    monkeypatch.setattr(shape, "PREDICTIONS", str(predicted))
    notes = []
    made = shape.data(load_runs([str(tmp_path)]), notes.append)
    points = made.parts["points"].set_index("design")
    assert points.loc["actor_learner", SPEED] == pytest.approx(_once(2_000, 2))  # the median of seeds 1-3
    assert points.loc["actor_learner", "low"] == pytest.approx(_once(2_000, 1))
    assert points.loc["actor_learner", PREDICTED] == 2_000.0
    assert points.loc["actor_learner", "error"] == pytest.approx(0.02)  # 2,040 / 2,000 - 1, not 2,040 x 2.5 / 5,000
    assert points.loc["single_env", "seeds"] == 1  # seed 2 has no rate once learning
    assert "env_steps_per_sec" not in made.data and "predicted_env_steps_per_sec" not in made.data
    [(_, table, caption)] = made.tables
    assert table["measured (median [min, max])"].tolist() == ["404 [404, 404]", "2,040 [2,020, 2,060]"]
    assert "once learning starts" in caption
    numbers = _numbers(made)
    assert numbers["ShapeSingleEnv"] == "404" and numbers["ShapeActorLearnerBest"] == "2,040"
    assert numbers["ShapePractitionerSingle"] == "424"  # the practitioner's own number, as they reported it
    assert any("run seed_shape-single2 has no env steps/s once learning" in n for n in notes)


def test_vector_check_misses_and_ratios_are_of_the_rate_once_learning(tmp_path):
    busy = {"env_step_cost_us": 1_000.0, **WARM}
    make_runs(FileStorageObserver(str(tmp_path / "vector_check")), [
        run for seed in (1, 2) for run in (
            {"run_id": f"vector_check-single{seed}", "seed": seed, "speed": 700.0, **busy},
            {"run_id": f"vector_check-vec2s{seed}", "seed": seed, "architecture": "vector_env", "num_workers": 2,
             "speed": 1_400.0, **busy})])
    path = tmp_path / "busy.json"
    path.write_text(json.dumps({"predictions": [
        {"design": d, "workers": n, "predicted_env_steps_per_sec": 2.5 * v, "predicted_steady_env_steps_per_sec": v,
         "bottleneck": "main"} for d, n, v in (("single_env", 1, 700.0), ("vector_env", 2, 1_400.0))]}))
    made = vector_check.data(load_runs([str(tmp_path)]), [].append, {"busy": str(path)})
    rows = made.data.set_index("design")
    assert rows.loc["vector_env", "measured"] == pytest.approx(1_400 * 1.015)
    assert rows.loc["vector_env", "miss"] == pytest.approx(0.015)
    assert _numbers(made)["VectorCheckBusyVectorEnvTwoOverSingleEnv"] == "2.00"


def test_the_page_sets_smoke_speeds_once_learning_beside_the_reference(tmp_path):
    make_runs(FileStorageObserver(str(tmp_path / "smoke")), [
        {"run_id": "smoke-single1", "seed": 1, "speed": 1_000.0, **WARM},
        {"run_id": "smoke-single2", "seed": 2, "speed": 7_000.0, "learning_starts": 3_000, "eval_episodes": 0}])
    smoke = page._smoke_section(load_runs([str(tmp_path)]))
    assert "1,010" in smoke and "2,525" not in smoke  # once learning, not the whole run's 3,000 / 1.2 s x 1.01
    assert "7," not in smoke  # the run without a rate once learning is left out


def test_the_answers_speeds_are_also_tested_blocked_by_seed():
    """Each seed's design run over single_env's run of the same seed (a seed single_env lacks pairs with
    nothing): a steady 2x with noise reads ~2x, and with every pair one way the p is its floor 2 / 2^n."""
    import numpy as np
    import pandas as pd

    from analysis.report.answer import table

    rng = np.random.default_rng(3)
    base = pd.DataFrame({"seed": range(101, 107), table.SPEED: 1_000 * rng.uniform(0.95, 1.05, 6)})
    cell = pd.DataFrame({"seed": range(101, 108), table.SPEED: 2_000 * rng.uniform(0.95, 1.05, 7)})
    got = table._blocked(cell, base)
    assert got["pairs"] == 6 and got["blocked_p"] == got["blocked_floor"] == 2 / 2 ** 6
    assert got["blocked_low"] <= got["blocked_ratio"] <= got["blocked_high"] and 1.8 < got["blocked_ratio"] < 2.2
    assert table._blocked(cell, base.assign(seed=range(1, 7)))["pairs"] == 0  # no seed in common: nothing to pair


def test_the_answer_caption_says_which_vector_env_ran_where_and_pqns_learning_compute():
    """Review point 4: the table sets unlike things side by side, and says so, with pqn's updates per
    env step from its runs (none said where it has no runs)."""
    import numpy as np
    import pandas as pd

    from analysis.report.answer import table

    said = table._caption(pd.DataFrame(), np.array([0.0156, 0.0640, 0.0312]))
    assert "lockstep AsyncVectorEnv in the 2-worker learning and on the 16-core machines" in said
    assert "pqn makes 0.016-0.064 updates per env step in the speed runs against the DQN designs' 0.25" in said
    assert "pqn makes" not in table._caption(pd.DataFrame())
