"""The report's data functions alone, one test per figure family, on a tiny synthetic store whose
values are known by construction (tests/synthetic_runs.py: a run's holdout return at checkpoint
k of K is quality * k / K + seed, its env steps/s speed * (1 + seed / 100)); and that they, and
every module they live in, load and run without matplotlib."""

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sacred import Experiment
from sacred.observers import FileStorageObserver

from analysis import stats
from analysis.cost import model as cost_model
from analysis.io.load import RunSet, load_runs
from analysis.report.framework import claims
from analysis.report.learning import curves as learning
from analysis.report.learning import headline_tables, improvement, utd
from analysis.report.speed import breakdown, hogwild, scaling, threads, uneven
from analysis.report.framework.common import PREDICTED, SPEED, markdown
from tests.synthetic_runs import headline_specs, make_runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COSTS = dict(env_step=10.0, act=10.0, fold=2.0, store=2.0, sample=20.0, update=580.0, diagnostics=10.0,
             ring_write=4.0, ring_drain=2.0, weight_publish=10.0, act_batch={1: 12.0, 2: 14.0},
             vector_send={1: 30.0}, vector_recv={1: 50.0}, vector_round_trip={1: 200.0})


def _stored(folder, name: str, run_id: str, config: dict, result: dict) -> None:
    """One run of a Sacred experiment `name` with this config and result (for the experiments
    synthetic_runs does not imitate: update timing, components, hogwild's overlap). A result with a
    speed and training seconds holds the env steps they make and logs the speed at env step 0, as
    the loop logs it: with no warm-up, its rate once learning (the report's speed) is that speed."""
    ex = Experiment(name, save_git_info=False)
    ex.add_config(**config)
    speed, seconds = result.get("env_steps_per_sec"), result.get("train_seconds")
    if speed and seconds:
        result = {**result, "env_steps": round(speed * seconds)}

    def main(_run):
        if speed and seconds:
            _run.log_scalar("env_steps_per_sec", speed, 0)
        return result

    ex.main(main)
    ex.observers.append(FileStorageObserver(str(folder)))
    ex.run(options={"--id": run_id, "--loglevel": "ERROR"})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    make_runs(FileStorageObserver(str(root / "architectures")), headline_specs() + [
        {"run_id": f"architectures-vector{seed}", "seed": seed, "architecture": "vector_env", "num_workers": 2,
         "speed": 500.0, "quality": 50.0} for seed in (1, 2, 3)])
    for network, cells in {"mlp": {(32, 1): 1000.0, (32, 2): 600.0, (256, 1): 4000.0, (256, 2): 2500.0},
                           "cnn": {(32, 1): 3000.0, (32, 4): 1200.0}}.items():
        for (batch, n), us in cells.items():
            _stored(root / "threads", "update_timing", f"threads-{network}{batch}t{n}",
                    {"network": network, "batch_size": batch, "torch_threads": n, "device": "cpu"},
                    {"update_us_median": us, "update_us_p10": 0.9 * us, "update_us_p90": 1.1 * us})
    _stored(root / "threads", "update_timing", "threads-gpu",
            {"network": "mlp", "batch_size": 32, "torch_threads": 8, "device": "cuda"},
            {"update_us_median": 1.0, "update_us_p10": 1.0, "update_us_p90": 1.0})
    make_runs(FileStorageObserver(str(root / "scaling")), [
        {"run_id": "scaling-single0", "speed": 5_000.0},
        {"run_id": "scaling-actor0", "architecture": "actor_learner", "num_workers": 2, "speed": 4_000.0},
        {"run_id": "scaling-hogwild0", "architecture": "hogwild", "num_workers": 2, "speed": 9_000.0},
        {"run_id": "scaling-single100", "speed": 2_000.0, "env_step_cost_us": 100.0},
        {"run_id": "scaling-actor100", "architecture": "actor_learner", "num_workers": 2, "speed": 3_000.0,
         "env_step_cost_us": 100.0}])
    stored = {k: ({"us": v, "p10": v, "p90": v} if not isinstance(v, dict) else
                  {str(n): {"us": x, "p10": x, "p90": x} for n, x in v.items()}) for k, v in COSTS.items()}
    _stored(root / "scaling", "components", "scaling-components0", {"env_step_cost_us": 0.0, "env_id": "CartPole-v1"},
            {"cores": 2, "costs_us": stored})   # none at 100 us: that column has no prediction
    long = {"total_env_steps": 50_000, "eval_every": 25_000}
    make_runs(FileStorageObserver(str(root / "utd")), [
        *[{"run_id": f"utd-single{s}", "seed": s, **long} for s in (1, 3)],
        *[{"run_id": f"utd-u4none{s}", "seed": s, "architecture": "high_utd", "utd": 4.0, **long} for s in (1, 3)],
        {"run_id": "utd-u4ln1", "seed": 1, "architecture": "high_utd", "utd": 4.0, "layer_norm": True,
         "quality": 300.0, **long},
        *[{"run_id": f"utd-u16none{s}", "seed": s, "architecture": "high_utd", "utd": 16.0, "quality": 20.0, **long}
          for s in (1, 3)]])
    for run_id, arch, lock, seed, speed, final, overlap, adam in [
            ("lock1", "hogwild", True, 1, 4_000.0, 150.0, 0.0, 1000), ("lock2", "hogwild", True, 2, 4_200.0, 170.0, 0.0, 1000),
            ("free1", "hogwild", False, 1, 5_000.0, 120.0, 0.1, 990), ("free2", "hogwild", False, 2, 5_400.0, 180.0, 0.3, 995),
            ("single1", "single_env", False, 1, 1_000.0, 200.0, None, None)]:
        _stored(root / "hogwild", "parallel_dqn", f"hogwild-{run_id}",
                {"architecture": arch, "num_workers": 4 if arch == "hogwild" else 1, "hogwild_lock": lock,
                 "seed": seed, "env_id": "CartPole-v1"},
                {"env_steps_per_sec": speed, "final_holdout_return": final, "overlap_fraction": overlap,
                 "updates": 1000, "shared_adam_steps": adam, "train_seconds": 1.0,
                 "holdout_curve": [{"env_steps": 1000, "return_mean": final / 2},
                                   {"env_steps": 2000, "return_mean": final}]})
    # uneven: worker 0 slowed; equal quotas hold its share at 1/2, free-running actors let it fall
    for run_id, arch, quotas, seed, speed, final, steps, staleness in [
            ("equal1", "actor_learner", "equal", 1, 1_000.0, 150.0, [0.5, 0.5], [6.0, 4.0]),
            ("equal2", "actor_learner", "equal", 2, 1_100.0, 170.0, [0.5, 0.5], [8.0, 4.0]),
            ("free1", "actor_learner", "free", 1, 3_000.0, 160.0, [0.1, 0.9], [30.0, 2.0]),
            ("free2", "actor_learner", "free", 2, 3_200.0, 180.0, [0.2, 0.8], [50.0, 2.0]),
            ("single1", "single_env", "equal", 1, 2_000.0, 200.0, None, None),
            ("single2", "single_env", "equal", 2, 2_000.0, 100.0, None, None)]:
        shares = {kind: list(steps) for kind in ("env_steps", "replay", "sampled")} if steps else None
        _stored(root / "uneven", "parallel_dqn", f"uneven-{run_id}",
                {"architecture": arch, "num_workers": 2 if steps else 1, "actor_quotas": quotas, "seed": seed,
                 "env_id": "CartPole-v1", "slow_worker_cost_us": 1000.0 if steps else 0.0},
                {"env_steps_per_sec": speed, "final_holdout_return": final, "updates": 1000, "train_seconds": 1.0,
                 "runs_at_once": 1, "policy_lag": {"mean": 1.0}, "worker_shares": shares,
                 "worker_acting_staleness_mean": staleness,
                 "holdout_curve": [{"env_steps": 1000, "return_mean": final / 2},
                                   {"env_steps": 2000, "return_mean": final}]})
    return root


@pytest.fixture(scope="module")
def rs(store) -> RunSet:
    return load_runs([str(store)])


def _only(rs: RunSet, sweep: str) -> RunSet:
    """The store as if it held one sweep only."""
    return RunSet(rs.runs[rs.runs["sweep"] == sweep], rs.metrics, rs.holdout)


def _numbers(made) -> dict:
    return {name: value if isinstance(value, str) else fmt.format(value) for name, value, fmt in made.numbers}


# ---------------------------------------------------------------------- 1. threads
def test_threads_keeps_cpu_timings_sorted_and_quotes_one_and_most_threads(rs):
    notes = []
    made = threads.data(rs, notes.append)
    assert notes == []
    rows = made.data[["network", "batch_size", "torch_threads", "update_us_median"]].values.tolist()
    assert rows == [["cnn", 32, 1, 3000.0], ["cnn", 32, 4, 1200.0], ["mlp", 32, 1, 1000.0], ["mlp", 32, 2, 600.0],
                    ["mlp", 256, 1, 4000.0], ["mlp", 256, 2, 2500.0]]   # the cuda run is not among them
    assert made.data["update_us_p90"].tolist() == pytest.approx([3300, 1320, 1100, 660, 4400, 2750])
    assert _numbers(made) == {"ThreadsCnnOneUs": "3,000", "ThreadsCnnMostUs": "1,200", "ThreadsMlpOneUs": "1,000",
                              "ThreadsMlpMostUs": "600", "ThreadsMost": "4",
                              # every batch apart: the headline's batch is not the smallest
                              "ThreadsCnnBatchThreeTwoOneUs": "3,000", "ThreadsCnnBatchThreeTwoMostUs": "1,200",
                              "ThreadsMlpBatchThreeTwoOneUs": "1,000", "ThreadsMlpBatchThreeTwoMostUs": "600",
                              "ThreadsMlpBatchTwoFiveSixOneUs": "4,000", "ThreadsMlpBatchTwoFiveSixMostUs": "2,500",
                              "ThreadsRounds": "1"}


# ---------------------------------------------------------------------- 2. scaling
def test_scaling_sets_measured_rates_beside_the_cost_model(rs):
    notes = []
    made = scaling.data(rs, notes.append)
    assert notes == ["scaling: no `components` run for CartPole at env step cost 100 us, so the cost model's "
                     "prediction is not drawn; run the `scaling` sweep again (it measures them)"]
    points = made.parts["points"]
    assert points[["env_step_cost_us", "design", "num_workers"]].values.tolist() == [
        [0.0, "actor_learner", 2], [0.0, "hogwild", 2], [0.0, "single_env", 1],
        [100.0, "actor_learner", 2], [100.0, "single_env", 1]]
    assert points[SPEED].tolist() == pytest.approx([4040, 9090, 5050, 3030, 2020])
    assert points["parallel_efficiency"].tolist() == pytest.approx([0.4, 0.9, 1.0, 0.75, 1.0])
    # the model's rate at the runs' utd: the rate once learning, as SPEED is
    expected = {design: cost_model.predict(design, n, COSTS, utd=0.25, cores=2).env_steps_per_sec
                for design, n in (("actor_learner", 2), ("hogwild", 2), ("single_env", 1))}
    assert points[PREDICTED].tolist()[:3] == pytest.approx(list(expected.values()))
    assert points[PREDICTED].iloc[3:].isna().all()
    assert points["predicted_bottleneck"].tolist()[0] == "learner"
    assert points["prediction_error"].tolist()[:3] == pytest.approx(
        [4040 / expected["actor_learner"] - 1, 9090 / expected["hogwild"] - 1, 5050 / expected["single_env"] - 1])
    assert made.data[SPEED].tolist() == [4040.0, 9090.0, 5050.0, 3030.0, 2020.0]   # the CSV, rounded
    columns = made.parts["columns"]
    assert [c["cost"] for c in columns] == [0.0, 100.0] and [c["base"] for c in columns] == pytest.approx([5050, 2020])
    assert [list(c["workers"]) for c in columns] == [[2], [2]]
    assert columns[0]["predicted"][("hogwild", 2)] == pytest.approx(expected["hogwild"])
    assert columns[1]["predicted"] == {}
    numbers = _numbers(made)
    assert numbers["ScalingSingleCostZero"] == "5,050" and numbers["ScalingSingleCostOneZeroZero"] == "2,020"
    assert numbers["SpeedupHogwildTwoCostZero"] == "1.80" and numbers["SpeedupActorLearnerTwoCostOneZeroZero"] == "1.50"
    assert numbers["ModelWorstErrorWithinCores"] == "{:.0f}".format(100 * points["prediction_error"].abs().max())
    [(name, table, _)] = made.tables
    assert name == "scaling_model" and table["design"].tolist() == ["actor_learner", "hogwild", "single_env"]
    assert table["measured env steps/s once learning"].tolist() == ["4,040", "9,090", "5,050"]
    assert table["error"].tolist()[0] == f"{100 * (4040 / expected['actor_learner'] - 1):+.0f}%"


# ---------------------------------------------------------------------- 3, 4, 9. the headline comparison
def test_learning_curves_are_iqms_per_checkpoint(rs):
    notes = []
    made = learning.curves_data(rs, notes.append)
    assert notes == []
    single = made.data[made.data["design"] == "single_env"]
    assert single["env_step"].tolist() == [1000, 2000, 3000] and single["seeds"].tolist() == [3, 3, 3]
    assert single["return_iqm"].tolist() == pytest.approx([100 / 3 + 2, 200 / 3 + 2, 102])  # seeds 1-3: the mean
    assert single["train_seconds_median"].tolist() == pytest.approx([1.0, 2.0, 3.0])
    high = made.data[made.data["design"] == "high_utd"]
    assert high["return_iqm"].tolist() == pytest.approx([200 / 3 + 2, 400 / 3 + 2, 202])
    assert (made.data["return_low"] <= made.data["return_iqm"]).all()
    assert (made.data["return_iqm"] <= made.data["return_high"]).all()
    assert sorted(set(made.data["design"])) == ["actor_learner", "high_utd", "single_env", "vector_env"]


def test_speed_quality_finds_the_frontier_and_quotes_each_architecture(rs):
    made = learning.speed_quality_data(rs, [].append)
    data = made.data.set_index("design")
    assert data.index.tolist() == ["actor_learner", "high_utd", "single_env", "vector_env"]
    assert data["label"].tolist() == ["actor_learner (2)", "high_utd (utd 4)", "single_env", "vector_env (2)"]
    assert data["steps_per_sec_median"].tolist() == pytest.approx([1938, 306, 1020, 510])
    assert data["final_return_iqm"].tolist() == pytest.approx([97, 202, 102, 52])
    assert data["auc_iqm"].tolist() == pytest.approx([95 * 2 / 3 + 2, 200 * 2 / 3 + 2, 100 * 2 / 3 + 2, 50 * 2 / 3 + 2])
    # vector_env is slower and worse than single_env; each other one is fastest or best or in between.
    assert data["non_dominated"].tolist() == [True, True, True, False]
    [(name, table, _)] = made.tables
    assert name == "architectures"
    assert table.iloc[2].tolist() == ["CartPole", "single_env", 3, "1,020 [1,010, 1,030]", "these runs",
                                      "102.0 [101.0, 103.0]", "68.7 [67.7, 69.7]", "0 (>= 475)"]
    numbers = _numbers(made)
    assert numbers["CartPoleSingleEnvSteps"] == "1,020" and numbers["CartPoleHighUtdFinal"] == "202.0"
    assert numbers["CartPoleActorLearnerAuc"] == "65" and numbers["CartPoleVectorEnvSeeds"] == "3"
    assert numbers["CartPoleSingleEnvSolved"] == "0"  # 101-103 < 475: none solved


def test_speeds_of_runs_made_several_at_once_are_never_quoted(tmp_path):
    """Headline runs a sweep made two at a time (`--jobs 2`) learn as well but their env steps/s
    shared the CPU: the table quotes the scaling sweep's one-at-a-time runs of the same design and
    worker count (no env cost) instead, says so, and where there are none quotes no speed at all;
    the probability of improvement leaves speed out rather than compare shared-CPU numbers."""
    make_runs(FileStorageObserver(str(tmp_path / "architectures")), [
        {**spec, "runs_at_once": 2, **({"quality": 473.5} if "single" in spec["run_id"] else {})}
        for spec in headline_specs() if "highutd" not in spec["run_id"]])
    make_runs(FileStorageObserver(str(tmp_path / "scaling")), [
        {"run_id": "scaling-single0", "speed": 5_000.0, "eval_episodes": 0},
        {"run_id": "scaling-single1", "speed": 5_000.0, "seed": 2, "eval_episodes": 0},
        {"run_id": "scaling-single100", "speed": 2_000.0, "env_step_cost_us": 100.0, "eval_episodes": 0},
        {"run_id": "scaling-actor1", "architecture": "actor_learner", "num_workers": 1, "speed": 3_000.0,
         "eval_episodes": 0}])
    rs = load_runs([str(tmp_path)])
    notes = []
    made = learning.speed_quality_data(rs, notes.append)
    data = made.data.set_index("design")
    assert data.loc["single_env", "steps_per_sec_median"] == pytest.approx(5_075)  # seeds 1, 2: 5,050 and 5,100
    assert data.loc["single_env", "speed_from"] == "scaling sweep, 2 runs"
    assert np.isnan(data.loc["actor_learner", "steps_per_sec_median"])  # scaling has it at 1 worker, not 2
    assert data.loc["actor_learner", "speed_from"] == "not measured"
    assert data.loc["actor_learner", "final_return_iqm"] == pytest.approx(97)  # learning is still reported
    assert data.loc["single_env", "solved"] == 2  # 474.5, 475.5, 476.5 against CartPole's 475
    assert _numbers(made)["CartPoleActorLearnerSteps"] == "not measured"
    assert any("actor_learner's runs were made several at a time" in n for n in notes)
    poi = improvement.data(rs, [].append).data
    assert set(poi["metric"]) == {"final_holdout_return", "holdout_auc"}   # actor_learner (2): no speed alone
    # With one-at-a-time runs of it in the scaling sweep, its speed is set against single_env's from there too.
    make_runs(FileStorageObserver(str(tmp_path / "scaling")), [
        {"run_id": "scaling-actor2", "architecture": "actor_learner", "num_workers": 2, "speed": 6_000.0,
         "eval_episodes": 0}])
    poi = improvement.data(load_runs([str(tmp_path)]), [].append).data.set_index("metric")
    assert poi.loc[SPEED, ["probability", "seeds", "baseline_seeds"]].tolist() == [1.0, 1, 2]
    # The curves' wall-clock axis: env steps over the one-at-a-time speed; a cell never run alone is left
    # off it (the shared machine's clock would make a design with more processes look slower), said so.
    notes = []
    curves = learning.curves_data(rs, notes.append).data
    single = curves[curves["design"] == "single_env"]
    assert single["train_seconds_median"].tolist() == pytest.approx([1000 / 5075, 2000 / 5075, 3000 / 5075])
    actor = curves[curves["design"] == "actor_learner"]
    assert actor["train_seconds_median"].isna().all() and actor["return_iqm"].notna().all()
    assert notes == [("learning curves: CartPole actor_learner (2)'s runs were made several at a time and no run "
                      "of that cell alone; left off the wall-clock axis")]


SCALING_ALONE = [{"run_id": f"scaling-{name}{seed}", "seed": seed, "eval_episodes": 0, **spec}
                 for seed in (1, 2) for name, spec in (
                     ("single", {"speed": 5_000.0}),
                     ("actor", {"architecture": "actor_learner", "num_workers": 2, "speed": 6_000.0}),
                     ("highutd", {"architecture": "high_utd", "utd": 4.0, "layer_norm": True, "speed": 500.0}))]
TRUTH_CASES = [
    # (case, the headline's sweep, seeds, runs at once, scaling runs beside, what its captions must say)
    ("a smoke sweep, one run a design, made alone", "smoke", 1, 1, False,
     ["3 runs of the smoke sweep", "of these runs, each made one at a time", "no interval: 1 / 1 runs, too few"]),
    ("the headline made two at a time, speeds from the scaling sweep", "architectures", 3, 2, True,
     ["9 runs of the architectures sweep", "of the scaling sweep's runs of each design made one at a time (these "
      "runs shared the CPU)"]),
]


@pytest.mark.parametrize("case, sweep, seeds, at_once, scaling, said", TRUTH_CASES, ids=[c[0] for c in TRUTH_CASES])
def test_the_headline_says_which_runs_it_read_and_no_nan_reaches_a_table(tmp_path, case, sweep, seeds, at_once,
                                                                         scaling, said):
    """On the smoke store the speed caption said the speeds came from the scaling sweep's runs made
    alone, and the improvement table showed `0.00 [nan, nan]`."""
    make_runs(FileStorageObserver(str(tmp_path / sweep)), [
        {**spec, "run_id": spec["run_id"].replace("architectures", sweep), "runs_at_once": at_once}
        for spec in headline_specs(seeds)])
    if scaling:
        make_runs(FileStorageObserver(str(tmp_path / "scaling")), SCALING_ALONE)
    rs = load_runs([str(tmp_path)])
    quality, poi = learning.speed_quality_data(rs, [].append), improvement.data(rs, [].append)
    captions = " ".join([caption for _, _, caption in quality.tables + poi.tables]
                        + [quality.parts["read"], poi.parts["read"]])
    cells = " ".join(markdown(frame) for _, frame, _ in quality.tables + poi.tables)
    for text in said:
        assert text in captions + cells, text
    assert "nan" not in cells.lower()
    if not scaling:  # what it did not read, it does not claim
        assert "scaling sweep" not in captions


def test_headline_speeds_leave_the_warm_up_out(tmp_path):
    """A short scaling run spends much of itself warming up (no updates, so fast): MinAtar's 5k of a
    6,666-step high_utd run. The headline quotes env steps/s once learning, the rate its long runs
    see, and so does the scaling figure (its model predicts that rate)."""
    make_runs(FileStorageObserver(str(tmp_path / "architectures")), [
        {**spec, "runs_at_once": 2} for spec in headline_specs() if "single" in spec["run_id"]])
    make_runs(FileStorageObserver(str(tmp_path / "scaling")), [
        {"run_id": f"scaling-single{seed}", "seed": seed, "speed": 1_000.0, "learning_starts": 2_000,
         "eval_episodes": 0} for seed in (1, 2)])
    rs = load_runs([str(tmp_path)])
    # 2,000 steps at 10x then 1,000 at the rate: 3,000 / (0.2 + 1) s, 2.5x the rate once learning.
    assert rs.runs.set_index("run_id").loc["scaling-single1", "env_steps_per_sec"] == pytest.approx(3_000 / 1.2 * 1.01)
    made = learning.speed_quality_data(rs, [].append)
    assert made.data.set_index("design").loc["single_env", "steps_per_sec_median"] == pytest.approx(1_015)
    curves = learning.curves_data(rs, [].append).data
    assert curves["train_seconds_median"].tolist() == pytest.approx([1000 / 1015, 2000 / 1015, 3000 / 1015])
    points = scaling.data(_only(rs, "scaling"), [].append).parts["points"]
    assert points[SPEED].tolist() == pytest.approx([1_015])  # not the whole run's 3,000 / 1.2 * 1.015


def test_probability_of_improvement_over_single_env(rs):
    made = improvement.data(rs, [].append)
    poi = made.data.set_index(["design", "metric"])["probability"]
    assert poi.index.get_level_values(0).unique().tolist() == ["actor_learner", "vector_env", "high_utd"]
    assert poi.to_dict() == {
        ("actor_learner", "final_holdout_return"): 0.0, ("actor_learner", "holdout_auc"): 0.0,
        ("actor_learner", SPEED): 1.0, ("vector_env", "final_holdout_return"): 0.0,
        ("vector_env", "holdout_auc"): 0.0, ("vector_env", SPEED): 0.0,
        ("high_utd", "final_holdout_return"): 1.0, ("high_utd", "holdout_auc"): 1.0,
        ("high_utd", SPEED): 0.0}
    assert set(made.data["seeds"]) == {3} and set(made.data["baseline_seeds"]) == {3}
    assert _numbers(made)["PoiCartPoleHighUtdFinalHoldoutReturn"] == "1.00"
    # Every pair ordered one way at 3 seeds a side: the exact rank test's p is 2 / C(6, 3) = 0.1,
    # and over the table's 6 learning comparisons (3 speed ones apart) no P of 0 or 1 is told apart.
    assert made.data["rank_p"].tolist() == pytest.approx([0.1] * 9)
    holm = made.data.set_index("metric")["holm_p"]
    assert holm["holdout_auc"].tolist() == pytest.approx([0.6] * 3)
    assert holm[SPEED].tolist() == pytest.approx([0.3] * 3)
    # the sensitivity check: Holm over the mean holdout return's 3 comparisons alone, 3 x 0.1
    primary_only = made.data.set_index("metric")["holm_primary_only"]
    assert primary_only["holdout_auc"].tolist() == pytest.approx([0.3] * 3)
    assert primary_only[["final_holdout_return", SPEED]].isna().all()
    assert _numbers(made)["PoiCartPoleHighUtdHoldoutAucHolmPrimary"] == "0.300"
    assert set(made.data["verdict"]) == {"not told apart"}
    assert _numbers(made)["PoiCartPoleHighUtdFinalHoldoutReturnVerdict"] == "not told apart"
    [(name, table, caption)] = made.tables
    assert name == "improvement_cartpole" and len(table) == 6 and "6 learning comparisons" in caption


@pytest.mark.parametrize("probability, corrected_p, word", [
    (0.9, 0.01, "told apart, better"), (0.1, 0.049, "told apart, worse"),
    (1.0, 0.06, "not told apart"),    # an interval at a point is not a test
    (0.5, float("nan"), "not told apart")])
def test_a_verdict_is_no_stronger_than_its_corrected_test(probability, corrected_p, word):
    assert claims.verdict(probability, corrected_p) == word


# ---------------------------------------------------------------------- 5, 6. time breakdown, policy lag and shares
def test_time_breakdown_shares_per_role_from_the_scaling_sweep(rs):
    made = breakdown.time_data(rs, [].append)
    at0 = made.data[made.data["env_step_cost_us"] == 0.0]
    assert at0[["design", "num_workers", "role", "component"]].values.tolist() == [
        ["actor_learner", 2, "each actor", "env_step"], ["actor_learner", 2, "main process", "act"],
        ["actor_learner", 2, "main process", "update"], ["single_env", 1, "main process", "act"],
        ["single_env", 1, "main process", "update"]]   # hogwild's main process only waits: left out
    assert at0["share_of_train_time"].tolist() == pytest.approx([0.5, 0.1, 0.6, 0.1, 0.6])
    assert set(at0.loc[at0["design"] == "actor_learner", "bottleneck"]) == {"actors"}
    assert set(at0.loc[at0["design"] == "single_env", "bottleneck"]) == {""}
    assert sorted(set(made.data["env_step_cost_us"])) == [0.0, 100.0]
    # Without the scaling sweep the headline runs are broken down instead.
    headline = breakdown.time_data(_only(rs, "architectures"), [].append)
    assert sorted(set(headline.data["design"])) == ["actor_learner", "high_utd", "single_env", "vector_env"]


def test_policy_lag_and_worker_shares_per_run(rs):
    made = breakdown.lag_data(rs, [].append)
    lag, shares = made.parts["lag"], made.parts["shares"]
    actor_runs = {"architectures-actor1", "architectures-actor2", "architectures-actor3", "scaling-actor0",
                  "scaling-actor100"}
    assert set(lag["run_id"]) == actor_runs == set(shares["run_id"])
    one = lag[lag["run_id"] == "scaling-actor0"].set_index(["measure", "statistic"])["updates"].to_dict()
    assert one == {("policy_lag", "mean"): 900.0, ("policy_lag", "p50"): 800.0, ("policy_lag", "p95"): 2000.0,
                   ("policy_lag", "max"): 4000.0, ("acting_staleness", "mean"): 6.0, ("acting_staleness", "p50"): 5.0,
                   ("acting_staleness", "p95"): 11.0, ("acting_staleness", "max"): 40.0}
    mine = shares[shares["run_id"] == "scaling-actor0"]
    assert mine[["kind", "worker", "share"]].values.tolist() == [["env_steps", 0, 0.5], ["env_steps", 1, 0.5],
                                                                  ["sampled", 0, 0.49], ["sampled", 1, 0.51]]
    assert made.data["table"].value_counts().to_dict() == {"lag": 40, "shares": 20}
    assert made.data["table"].is_monotonic_increasing   # the CSV: lag rows, then shares


# ---------------------------------------------------------------------- 7. high_utd grid
def test_utd_grid_and_the_cells_against_single_env(rs):
    made = utd.data(rs, [].append)
    data = made.data
    assert data[["utd", "mitigation", "seeds"]].astype({"mitigation": str}).values.tolist() == [
        [4.0, "none", 2], [4.0, "LayerNorm", 1], [16.0, "none", 2]]
    assert data["final_iqm"].tolist() == pytest.approx([102, 301, 22])
    assert data["return_25k_iqm"].tolist() == pytest.approx([52, 151, 12])
    assert data["diverged_runs"].tolist() == [0, 0, 2] and data["divergence_rate"].tolist() == [0.0, 0.0, 1.0]
    assert data["max_abs_q_median"].tolist() == [100.0, 100.0, 5000.0]
    assert made.parts["single"]["run_id"].tolist() == ["utd-single1", "utd-single3"]
    (grid_name, grid, _), (vs_name, vs, _) = made.tables
    assert grid_name == "utd_grid" and vs_name == "utd_against_single_env"
    assert grid["final return (50k), IQM [95% CI]"].tolist()[1] == "301 (1 seed)"
    assert grid["diverged"].tolist() == ["0/2", "0/1", "2/2"]
    # The LayerNorm cell has fewer seeds than single_env: not set against it.
    assert vs[["design", "utd", "mitigation", "seeds"]].values.tolist() == [
        ["single_env", "0.25", "-", 2], ["high_utd", "4", "none", 2], ["high_utd", "16", "none", 2]]
    assert vs["final (50k), per seed"].tolist() == ["101, 103", "101, 103", "21, 23"]
    # utd 4 ties single_env seed for seed (0.5); utd 16 is below it on every pair (0.0, no spread).
    # The rank test's p stays above zero where the interval collapses: 2 / C(4, 2) at 2 seeds a side.
    assert vs["P(> single_env) at 25k [95% CI], rank-test p"].tolist() == [
        "-", "0.50 [0.00, 1.00], p 1.000", "0.00 [0.00, 0.00], p 0.333"]
    assert (vs["P(> single_env) mean over checkpoints [95% CI], rank-test p"].tolist()
            == vs["P(> single_env) at 25k [95% CI], rank-test p"].tolist())
    numbers = _numbers(made)
    assert numbers["UtdSixteenNoneDiverged"] == "2/2" and numbers["UtdFourLayerNormFinal"] == "301"
    assert numbers["UtdVsSingleEnvZeroPointTwoFiveFinal"] == "102" and numbers["UtdVsHighUtdSixteenNoneEarly"] == "12"
    assert numbers["UtdSeeds"] == "1" and numbers["UtdVsSeeds"] == "2"
    assert (numbers["UtdVsHighUtdFourNonePoiEarly"], numbers["UtdVsHighUtdSixteenNonePoiHoldoutAucHigh"]) == ("0.50", "0.00")
    assert numbers["UtdVsHighUtdSixteenNoneRankPHoldoutAuc"] == "0.333"
    assert not any(char.isdigit() for name in numbers for char in name)   # LaTeX macro names take letters only


# ---------------------------------------------------------------------- 8. hogwild
def test_hogwild_configs_with_their_overlap(rs):
    made = hogwild.data(rs, [].append)
    assert made.data[["config", "seed", SPEED, "final_holdout_return"]].values.tolist() == [
        ["hogwild (lock)", 1, 4000.0, 150.0], ["hogwild (lock)", 2, 4200.0, 170.0],
        ["hogwild (no lock)", 1, 5000.0, 120.0], ["hogwild (no lock)", 2, 5400.0, 180.0],
        ["single_env", 1, 1000.0, 200.0]]
    assert made.data["overlap_fraction"].tolist()[:4] == [0.0, 0.0, 0.1, 0.3]
    assert np.isnan(made.data["overlap_fraction"].iloc[4])
    numbers = _numbers(made)
    assert numbers == {"HogHogwildLockSteps": "4,100", "HogHogwildLockFinal": "160.0", "HogHogwildLockWorst": "150.0",
                       "HogHogwildLockOverlapMax": "0.0", "HogHogwildLockOverlapMin": "0.0",
                       "HogHogwildNoLockSteps": "5,200", "HogHogwildNoLockFinal": "150.0",
                       "HogHogwildNoLockWorst": "120.0", "HogHogwildNoLockOverlapMax": "30.0",
                       "HogHogwildNoLockOverlapMin": "10.0", "HogSingleEnvSteps": "1,000",
                       "HogSingleEnvFinal": "200.0", "HogSingleEnvWorst": "200.0", "HogSeeds": "1",
                       # the lock question: finals (120, 180) against (150, 170) win 2 of 4 pairs; speeds all 4
                       "HogLockPoiFinalHoldoutReturn": "0.50", "HogLockPoiHoldoutAuc": "0.50",
                       "HogLockPoiEnvStepsPerSec": "1.00", "HogLostAdamStepsMax": "10",
                       "HogLostAdamStepsMaxPercent": "1.000",
                       # the exact rank test: 2 / C(4, 2) where every pair is ordered (speed), 1 at a tie of U
                       "HogLockPEnvStepsPerSec": "0.333", "HogLockHolmEnvStepsPerSec": "0.333",
                       "HogLockPFinalHoldoutReturn": "1.000", "HogLockHolmFinalHoldoutReturn": "1.000",
                       "HogLockPHoldoutAuc": "1.000", "HogLockHolmHoldoutAuc": "1.000",
                       **{f"HogLockVerdict{m}": "not told apart"
                          for m in ("EnvStepsPerSec", "FinalHoldoutReturn", "HoldoutAuc")},
                       # CartPole's solved line, and how many of the hogwild runs' finals reached it
                       "HogSolvedAt": "475", "HogFinalSolved": "0", "HogFinalRuns": "4",
                       **{k: numbers[k] for k in numbers if k.endswith(("Low", "High"))}}
    assert made.data["holdout_auc"].tolist()[:2] == [112.5, 127.5]  # the mean of the two checkpoints
    assert made.data["lost_adam_steps"].tolist()[:4] == pytest.approx([0.0, 0.0, 0.01, 0.005])
    assert float(numbers["HogLockPoiEnvStepsPerSecLow"]) == 1.0   # every resample keeps the lock-free runs faster
    assert float(numbers["HogLockPoiFinalHoldoutReturnLow"]) < 0.5 < float(numbers["HogLockPoiFinalHoldoutReturnHigh"])
    name, table, _ = made.tables[0]
    assert name == "hogwild_lock" and table["P(no lock > lock) [95% CI]"].str.startswith(("0.50", "1.00")).all()


# ---------------------------------------------------------------------- 10. uneven workers
def test_uneven_workers_the_slow_ones_share_its_age_and_the_quota_question(rs):
    made = uneven.data(rs, [].append)
    data = made.data.set_index("run_id")
    assert sorted(set(data["config"])) == ["actor_learner (2, equal quotas)", "actor_learner (2, free quotas)",
                                           "single_env"]
    assert data.loc["uneven-free1", ["slow_share_env_steps", "slow_share_replay", "slow_share_sampled"]].tolist() \
        == pytest.approx([0.2, 0.2, 0.2])   # worker 0's share x 2 workers
    assert data.loc["uneven-free2", ["staleness_slow", "staleness_fast"]].tolist() == [50.0, 2.0]
    assert np.isnan(data.loc["uneven-single1", "slow_share_env_steps"])
    assert data.loc["uneven-equal1", "holdout_auc"] == pytest.approx(112.5)
    numbers = _numbers(made)
    assert numbers["UnevenActorLearnerTwoFreeQuotasSteps"] == "3,100"
    assert numbers["UnevenActorLearnerTwoFreeQuotasSlowShareEnvSteps"] == "0.30"
    assert numbers["UnevenActorLearnerTwoEqualQuotasSlowShareSampled"] == "1.00"
    assert numbers["UnevenActorLearnerTwoFreeQuotasStalenessSlow"] == "40.0"
    assert numbers["UnevenSingleEnvFinal"] == "150.0" and numbers["UnevenSingleEnvSeeds"] == "2"
    # free-running is faster in every pair, and wins 3 of 4 pairs on the final return (160, 180 vs 150, 170)
    assert numbers["UnevenFreePoiEnvStepsPerSec"] == "1.00" and numbers["UnevenFreePoiFinalHoldoutReturn"] == "0.75"
    # ...which two seeds a side cannot tell apart: the exact rank test's smallest p is 2 / C(4, 2)
    assert (numbers["UnevenFreePEnvStepsPerSec"], numbers["UnevenFreeVerdictEnvStepsPerSec"]) == ("0.333", "not told apart")
    # Holm over the two learning measures, speed apart (its Holm is its own p)
    learning_ps = [float(numbers[f"UnevenFreeP{m}"]) for m in ("FinalHoldoutReturn", "HoldoutAuc")]
    assert [float(numbers[f"UnevenFreeHolm{m}"]) for m in ("FinalHoldoutReturn", "HoldoutAuc")] == pytest.approx(
        stats.holm(learning_ps), abs=1e-3)
    assert numbers["UnevenFreeHolmEnvStepsPerSec"] == numbers["UnevenFreePEnvStepsPerSec"]
    [(name, table, _)] = made.tables
    assert name == "uneven" and table["design"].tolist() == sorted(set(data["config"]))
    assert table["weight age, slow / fast"].tolist() == ["7.0 / 4.0", "40.0 / 2.0", "-"]
    assert table["Holm p"].iloc[-1] == "-" and all(0 <= float(p) <= 1 for p in table["Holm p"].iloc[:-1])
    curves = made.parts["curves"]
    assert curves[curves["config"] == "single_env"]["return_iqm"].tolist() == pytest.approx([75.0, 150.0])


def test_a_second_envs_headline_gets_its_own_table_and_never_pools_with_cartpole(tmp_path):
    """The `minatar` sweep is a headline of its own: its rows sit beside CartPole's in the
    `architectures` table, each env also gets a table (architectures_breakout), and the time
    breakdown and lag figures keep the envs apart."""
    make_runs(FileStorageObserver(str(tmp_path / "architectures")), headline_specs(2))
    make_runs(FileStorageObserver(str(tmp_path / "minatar")), [
        {**spec, "run_id": spec["run_id"].replace("architectures", "minatar"), "env_id": "MinAtar/Breakout-v1",
         "quality": 10.0} for spec in headline_specs(2)])
    rs = load_runs([str(tmp_path)])
    made = learning.speed_quality_data(rs, [].append)
    tables = {name: table for name, table, _ in made.tables}
    assert sorted(tables) == ["architectures", "architectures_breakout", "architectures_cartpole"]
    assert tables["architectures"]["env"].tolist().count("Breakout") == 3
    assert len(tables["architectures_breakout"]) == 3 and "env" not in tables["architectures_breakout"]
    numbers = _numbers(made)
    assert numbers["BreakoutSingleEnvFinal"] == "11.5" and numbers["CartPoleSingleEnvFinal"] == "101.5"
    assert numbers["BreakoutSingleEnvAuc"] == "8.2" and numbers["CartPoleSingleEnvAuc"] == "68"  # (10/3+20/3+10)/3+1.5
    curves = learning.curves_data(rs, [].append).data
    assert sorted(set(curves["env"])) == ["Breakout", "CartPole"]
    times = breakdown.time_data(rs, [].append).data
    assert sorted(set(times["env"])) == ["Breakout", "CartPole"]
    lag = breakdown.lag_data(rs, [].append).parts["lag"]
    assert sorted(set(lag["env"])) == ["Breakout", "CartPole"]


# ---------------------------------------------------------------------- without the sweeps, and without matplotlib
@pytest.mark.parametrize("family, sweep_to_run", [
    (threads.data, "experiments.sweep threads"), (scaling.data, "experiments.sweep scaling"),
    (utd.data, "experiments.sweep utd"), (hogwild.data, "experiments.sweep hogwild"),
    (uneven.data, "experiments.sweep uneven")])
def test_a_missing_sweep_gives_no_data_and_names_the_sweep(rs, family, sweep_to_run):
    notes = []
    assert family(_only(rs, "architectures"), notes.append) is None
    assert len(notes) == 1 and sweep_to_run in notes[0]


def test_data_functions_load_and_run_without_matplotlib(store):
    code = ("import json, sys\n"
            "import analysis.report.framework.common, analysis.report.speed.threads, analysis.report.speed.scaling\n"
            "import analysis.report.learning.curves, analysis.report.speed.breakdown, analysis.report.learning.utd, analysis.report.speed.hogwild\n"
            "import analysis.report.speed.uneven\n"
            "from analysis.report import FIGURES\n"
            "from analysis.io.load import load_runs\n"
            "rs = load_runs([sys.argv[1]])\n"
            "made = [name for name, data, _ in FIGURES if data(rs, [].append) is not None]\n"
            "drawing = sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'seaborn'))\n"
            "print(json.dumps([made, drawing]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(store)], cwd=ROOT, capture_output=True, text=True, check=True)
    made, plotting = json.loads(out.stdout)
    # table_pqn_side_by_side reads the committed bench (results/benchmarks/, cwd-relative), not the store;
    # table_provenance reads any store's runs
    assert len(made) == 15 and "table_pqn_side_by_side" in made and "table_answer" in made, " ".join(made)
    assert "table_provenance" in made
    assert {"table_stability", "table_hyperparameters"} <= set(made) and plotting == []


def test_time_shares_of_a_cell_sum_to_at_most_one():
    """Seeds of one cell that name their bound with different busy percentages are one cell: its
    components' shares are means over the runs and add up as each run's do (grouped by the whole
    text, two seeds made two stacked groups, totals up to 2.9 in the committed CSV)."""
    import types

    import pandas as pd

    def run(seed, update, act, busy):
        return {"sweep": "scaling", "env": "CartPole", "env_step_cost_us": 0.0, "design": "actor_learner",
                "num_workers": 2, "run_id": f"r{seed}", "train_seconds": 10.0,
                "bottleneck": f"learner (busy {busy}% of the time, mostly update); actors busy 30%",
                "result": {"time_breakdown": {"update": {"seconds": update}, "sample": {"seconds": 1.0}},
                           "actor_time_breakdown": {"act": {"seconds_per_actor": act}}}}

    rs = types.SimpleNamespace(runs=pd.DataFrame([run(1, 8.0, 2.0, 97), run(2, 9.0, 3.0, 99), run(3, 7.0, 2.5, 98)]))
    data = breakdown.time_data(rs, [].append).data
    totals = data.groupby(["design", "num_workers", "role"])["share_of_train_time"].sum()
    assert totals.max() <= 1.0 + 1e-9
    assert totals[("actor_learner", 2, "main process")] == pytest.approx((8 + 9 + 7) / 30 + 0.1)
    assert set(data["bottleneck"]) == {"learner"} and len(data) == 3  # update, sample; act


def test_stability_counts_the_seeds_that_fell_after_reaching_the_cap(monkeypatch):
    """high_utd's collapse on CartPole: a run that reached 500 and later fell below 475
    counts as fallen, its checkpoints after the first 500 are shared out, its drop is 500 less its
    lowest return after; a run that never reached 500 counts in none of it."""
    curves = {"a1": ("single_env", [300, 500, 500, 500]), "a2": ("single_env", [200, 400, 470, 480]),
              "h1": ("high_utd", [500, 250, 500, 490]), "h2": ("high_utd", [400, 500, 100, 500])}
    runs = pd.DataFrame([{"run_id": k, "env": "CartPole", "design": a, "num_workers": 1, "utd": 4.0}
                         for k, (a, _) in curves.items()])
    holdout = pd.DataFrame([{"run_id": k, "env_step": 1_000 * (i + 1), "return_mean": float(v)}
                            for k, (_, values) in curves.items() for i, v in enumerate(values)])
    monkeypatch.setattr(headline_tables, "headline_rows", lambda rs: runs)
    made = headline_tables.stability_data(RunSet(runs, pd.DataFrame(), holdout), [].append)
    rows = made.data.set_index("design")
    assert rows.loc["single_env", ["reached_cap", "fell_below_solved"]].tolist() == [1, 0]
    assert rows.loc["high_utd", ["reached_cap", "fell_below_solved"]].tolist() == [2, 2]
    assert rows.loc["high_utd", "share_below_after_cap"] == pytest.approx(2 / 5)  # 250 of (250, 500, 490); 100 of (100, 500)
    assert rows.loc["high_utd", "median_drop"] == pytest.approx((250 + 400) / 2)
    assert _numbers(made)["StabilityCartPoleHighUtdFell"] == "2"
    [(name, table, _)] = made.tables
    assert name == "stability_cartpole" and table["then fell below 475"].tolist() == ["0 of 1", "2 of 2"]


def test_the_hyperparameter_table_is_what_the_runs_stored(rs):
    """The table reads single_env's stored config per headline env; a design whose runs differ in a
    shared setting is named in a note (a table generated from what ran)."""
    notes: list[str] = []
    made = headline_tables.hyperparameters_data(rs, notes.append)
    [(name, table, _)] = made.tables
    rows = table.set_index("setting")
    assert name == "hyperparameters" and len(table) == len(headline_tables.HYPERPARAMETERS)
    assert rows.loc["learning rate (Adam)", "CartPole"] == "0.0005" and rows.loc["updates per env step", "CartPole"] == "0.25"
    assert not notes
    changed = rs.runs.copy()
    first = changed.index[changed["design"] == "actor_learner"][0]
    changed.at[first, "config"] = {**changed.at[first, "config"], "lr": 1e-3}
    headline_tables.hyperparameters_data(RunSet(changed, rs.metrics, rs.holdout), notes.append)
    assert len(notes) == 1 and "differs from single_env in lr" in notes[0]


def test_the_window_leaves_out_later_cells(tmp_path):
    """ScalingWindowMinutes spans the sweep's own window: pqn's cells, added days later, and high_utd's,
    remade later, do not stretch it (it read 2,126 minutes with pqn's CartPole runs in it)."""
    from analysis.report.framework.common import FigureData

    rows = []
    for i, (arch, start, stop) in enumerate([("single_env", "2026-12-01T10:00:00", "2026-12-01T10:05:00"),
                                             ("hogwild", "2026-12-01T10:20:00", "2026-12-01T10:28:00"),
                                             ("pqn", "2026-12-03T06:00:00", "2026-12-03T06:01:00"),
                                             ("high_utd", "2026-12-02T09:00:00", "2026-12-02T09:02:00")]):
        folder = tmp_path / str(i)
        folder.mkdir()
        (folder / "run.json").write_text(json.dumps({"start_time": start, "stop_time": stop}))
        rows.append({"env": "CartPole", "design": arch, "source": str(folder)})
    made = FigureData(pd.DataFrame())
    scaling._window_minutes(made, pd.DataFrame(rows))
    assert [(name, value) for name, value, _ in made.numbers] == [("ScalingWindowMinutes", 28.0)]


def test_utd_long_cells_are_read_after_solving():
    """The utd sweep's long cells: apart from the grid (its smaller budget), each cell's falls
    after first reaching 500, and the comparisons (high_utd against single_env, each reset cell against no
    resets) corrected together; 3 seeds a side cannot give a rank-test p below 0.1."""
    curves = {  # cell -> per seed curve (holdout every 25k of 100k)
        "single": [[300, 500, 500, 500], [300, 500, 500, 500], [200, 480, 500, 500]],
        "none": [[500, 200, 300, 250], [500, 500, 100, 300], [400, 500, 450, 200]],
        "last": [[500, 450, 500, 500], [500, 500, 500, 500], [400, 500, 500, 500]],
        "all": [[300, 400, 500, 500], [200, 400, 480, 500], [100, 300, 400, 500]]}
    rows, holdout = [], []
    for cell, seeds in curves.items():
        for seed, curve in enumerate(seeds, start=101):
            run_id = f"{cell}{seed}"
            rows.append({"run_id": run_id, "sweep": "utd", "seed": seed, "total_env_steps": 100_000,
                         "design": "single_env" if cell == "single" else "high_utd", "utd": 4.0,
                         "layer_norm": cell != "single", "reset_period": 40_000 if cell in ("last", "all") else 0,
                         "config": {"reset_layers": "all" if cell == "all" else "last"},
                         "final_holdout_return": float(curve[-1])})
            holdout += [{"run_id": run_id, "env_step": 25_000 * (i + 1), "return_mean": float(v)}
                        for i, v in enumerate(curve)]
    rows.append({**rows[0], "run_id": "grid1", "total_env_steps": 50_000})  # the grid's: not a long cell
    holdout += [{"run_id": "grid1", "env_step": 25_000 * (i + 1), "return_mean": 500.0} for i in range(2)]
    made = utd.long_data(RunSet(pd.DataFrame(rows), pd.DataFrame(), pd.DataFrame(holdout)), [].append)
    cells = made.parts["rows"].set_index("cell")
    assert cells["seeds"].tolist() == [3, 3, 3, 3]  # the grid's run is left out
    assert len(made.data) == 4 * 3 * 4  # the figure's curves: the long cells' checkpoints, not the grid's
    assert cells.loc["none", ["reached_cap", "fell_below_solved"]].tolist() == [3, 3]
    assert cells.loc["last", ["reached_cap", "fell_below_solved"]].tolist() == [3, 1]
    assert cells.loc["all", ["reached_cap", "fell_below_solved"]].tolist() == [3, 0]
    tests = made.parts["tests"]
    assert len(tests) == 3 * 2  # no resets vs single_env, each reset cell vs no resets; 2 measures each
    assert set(zip(tests["cell"], tests["against"])) == {("none", "single_env"), ("last", "none"), ("all", "none")}
    assert tests["p"].min() >= 0.1 - 1e-9 and (tests["verdict"] == "not told apart").all()
    numbers = _numbers(made)
    assert numbers["UtdLongNoneFell"] == "3" and numbers["UtdLongComparisons"] == "6"
    assert numbers["UtdLongSmallestP"] == "0.100" and numbers["UtdLongBudget"] == "100,000"
    assert [name for name, _, _ in made.tables] == ["utd_long", "utd_long_tests"]


@pytest.mark.parametrize("column, lines", [
    ("seeds", ["seeds"]),
    ("final >= 475", ["final >= 475"]),
    ("reached 475 at a checkpoint", ["reached 475 at a", "checkpoint"]),
    ("env steps to first reach it, median [95% CI]", ["env steps to first", "reach it", "median [95\\% CI]"]),
    ("P(design > single_env) over game-seed pairs [95% CI]",
     ["P(design >", "single\\_env) over", "game-seed pairs", "[95\\% CI]"]),
    ("measured (median [min, max])", ["measured (median", "[min, max])"]),
])
def test_long_headers_stack_and_tables_only_shrink(column, lines):
    """common.stacked_header stacks a long column name at commas, then spaces, at most HEADER_WIDTH
    characters a line where its words allow (the pqn table's one-line headers shrank it past
    legibility), never inside brackets, and guards a line that opens with "[" from being read as
    the line break's optional skip (LaTeX stopped on "median\\\\[min"); common.latex shrinks a table
    wider than the text and never enlarges a narrow one."""
    from analysis.report.framework.common import HEADER_WIDTH, stacked_header, latex

    text = stacked_header(column)
    stacked = text.removeprefix("\\textbf{\\shortstack[l]{").removesuffix("}}").split("\\\\{}")
    assert (stacked if len(lines) > 1 else [text.removeprefix("\\textbf{").removesuffix("}")]) == lines
    assert all(len(line.replace("\\", "")) <= HEADER_WIDTH for line in lines)
    table = latex(pd.DataFrame({column: ["1"]}), "a caption", "t")
    assert "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}" in table


def test_the_abstracts_worst_miss_is_the_largest_in_size_of_every_out_of_sample_test():
    from analysis.report.framework import claims

    macros = {"PqnMissTwo": "-59", "ShapeCheckWorstSigned": "+40", "VectorCheckWorstSigned": "-66", "Other": "-99"}
    assert claims.worst_out_of_sample(macros) == (66.0, "the asynchronous vector_env and pqn")
    assert claims.worst_out_of_sample({**macros, "PlanCartPoleMissFirst": "-70"}) == (70.0, "plan's recommendation on CartPole")
    assert claims.worst_out_of_sample({"Other": "-99"}) is None  # not a test of the model: never quoted
