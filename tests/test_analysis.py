"""analysis/: the loader on tiny synthetic Sacred runs from both stores, the report end to end,
bad input, and that the committed paper/ outputs are what the report regenerates from results/."""

import filecmp
import glob
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sacred.observers import FileStorageObserver

from analysis import report as report_mod
from analysis.io.load import NoRunsError, load_runs
from tests.synthetic_runs import headline_specs, make_runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def headline_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    make_runs(FileStorageObserver(str(root / "architectures")), headline_specs())
    return root


def test_file_store_loads_into_tidy_frames(headline_store):
    rs = load_runs([str(headline_store)])
    assert rs.problems == []
    assert len(rs.runs) == 9
    single = rs.runs[rs.runs["run_id"] == "architectures-single2"].iloc[0]
    assert (single["sweep"], single["design"], single["num_workers"], single["seed"], single["env"]) == \
        ("architectures", "single_env", 1, 2, "CartPole")
    assert single["env_steps_per_sec"] == pytest.approx(1_000 * 1.02)
    holdout = rs.holdout[rs.holdout["run_id"] == "architectures-single2"]
    assert holdout["env_step"].tolist() == [1000, 2000, 3000]
    assert holdout["return_mean"].tolist() == pytest.approx([100 / 3 + 2, 200 / 3 + 2, 102])
    assert holdout["train_seconds"].tolist() == pytest.approx([1.0, 2.0, 3.0])
    metrics = rs.metrics[(rs.metrics["run_id"] == "architectures-actor1") & (rs.metrics["metric"] == "td_loss")]
    assert metrics["value"].tolist() == pytest.approx([1.0, 0.5, 1 / 3])
    assert metrics["wall_time"].notna().all() and (metrics["wall_time"] >= 0).all()
    assert set(rs.metrics.columns) >= {"run_id", "design", "num_workers", "utd", "seed", "env", "metric",
                                       "env_step", "wall_time", "value"}


@pytest.mark.parametrize("case, logged, expected", [
    # 5k warm-up steps in 0.25 s (20,000/s), then 15k learning steps in 10 s: 1,500/s once learning.
    ("warm-up fast, learning slow", {5_000: 5_000 / 0.25, 10_000: 10_000 / 3.583333}, 1_500.0),
    ("a log before learning_starts is not the start", {1_000: 40_000.0, 5_000: 20_000.0}, 1_500.0),
    ("no log inside [learning_starts, end)", {1_000: 40_000.0, 20_000: 20_000 / 10.25}, float("nan")),
])
def test_the_learning_rate_leaves_the_warm_up_out(case, logged, expected):
    """A 20k-step run whose first 5k steps (no updates) took 0.25 s and the rest 10 s: over the run
    it made 1,951 env steps/s; once learning it made 1,500, the rate a long run sees."""
    from analysis.io.load import learning_rate

    result = {"env_steps": 20_000, "train_seconds": 10.25, "env_steps_per_sec": 20_000 / 10.25}
    metrics = {"env_steps_per_sec": {"steps": list(logged), "values": list(logged.values())}}
    rate = learning_rate(result, {"learning_starts": 5_000}, metrics)
    assert rate == pytest.approx(expected, rel=1e-3, nan_ok=True), case
    assert np.isnan(learning_rate(result, {"learning_starts": 5_000}, {}))  # no log at all: not measured


def test_mongo_store_loads_the_same_frames(headline_store):
    mongomock = pytest.importorskip("mongomock")
    import gridfs
    from mongomock.gridfs import enable_gridfs_integration
    from sacred.observers import MongoObserver

    enable_gridfs_integration()
    client = mongomock.MongoClient()
    db = client["suite"]
    make_runs(MongoObserver.create_from(db.runs, gridfs.GridFS(db), metrics_collection=db.metrics), headline_specs())
    from_mongo = load_runs(["mongodb://example.invalid:27017/suite"], mongo_client_factory=lambda url, **kw: client)
    from_files = load_runs([str(headline_store)])
    columns = ["run_id", "sweep", "design", "num_workers", "utd", "seed", "env", "env_steps_per_sec",
               "final_holdout_return"]
    pd.testing.assert_frame_equal(from_mongo.runs[columns], from_files.runs[columns])
    key = ["run_id", "env_step"]
    pd.testing.assert_frame_equal(from_mongo.holdout.sort_values(key, ignore_index=True),
                                  from_files.holdout.sort_values(key, ignore_index=True))
    assert len(from_mongo.metrics) == len(from_files.metrics)


def test_cache_is_reused_until_a_run_changes(headline_store, tmp_path):
    cache = tmp_path / "cache"
    first = load_runs([str(headline_store)], cache_dir=str(cache))
    assert len(os.listdir(cache)) == 1
    again = load_runs([str(headline_store)], cache_dir=str(cache))
    pd.testing.assert_frame_equal(first.runs.drop(columns="result"), again.runs.drop(columns="result"))
    run_json = headline_store / "architectures" / "architectures-single1" / "run.json"
    os.utime(run_json, ns=(1, 1))
    load_runs([str(headline_store)], cache_dir=str(cache))
    assert len(os.listdir(cache)) == 2


def test_a_new_column_is_never_served_from_an_old_cache(headline_store, tmp_path, monkeypatch):
    import analysis.io.load as load

    cache = tmp_path / "cache"
    load_runs([str(headline_store)], cache_dir=str(cache))
    monkeypatch.setattr(load, "RESULT_COLUMNS", [*load.RESULT_COLUMNS, "a_new_result"])
    fresh = load_runs([str(headline_store)], cache_dir=str(cache))
    assert "a_new_result" in fresh.runs.columns and len(os.listdir(cache)) == 2


def test_report_end_to_end_on_a_tiny_store(headline_store, tmp_path):
    out = tmp_path / "paper"
    report = report_mod.build([str(headline_store)], str(out))
    for name in ("learning_curves", "speed_quality", "time_breakdown", "policy_lag_shares", "improvement"):
        for ext in ("pdf", "png", "csv"):
            assert (out / "figures" / f"{name}.{ext}").stat().st_size > 0, (name, ext)
    for ext in ("tex", "md", "csv"):
        assert (out / "tables" / f"architectures.{ext}").exists()
    curves = pd.read_csv(out / "figures" / "learning_curves.csv")
    single = curves[curves["design"] == "single_env"].sort_values("env_step")
    assert single["return_iqm"].tolist() == pytest.approx([100 / 3 + 2, 200 / 3 + 2, 102])  # seeds 1-3: IQM = mean
    poi = pd.read_csv(out / "figures" / "improvement.csv").set_index(["design", "metric"])
    assert poi.loc[("high_utd", "final_holdout_return"), "probability"] == 1.0   # 201+ beats 101-103
    assert poi.loc[("actor_learner", "learning_env_steps_per_sec"), "probability"] == 1.0
    numbers = (out / "generated" / "numbers.tex").read_text()
    assert "\\newcommand{\\CartPoleSingleEnvSteps}{1,020}" in numbers
    # Sweeps absent from the store are named, with the command that produces them.
    assert any("experiments.sweep utd" in note for note in report.notes)
    # Rebuilding gives the same data.
    first = {p: open(p).read() for p in glob.glob(str(out / "figures" / "*.csv"))}
    report_mod.build([str(headline_store)], str(out))
    assert {p: open(p).read() for p in first} == first


@pytest.mark.slow
def test_bad_runs_are_named_and_the_rest_still_builds(tmp_path):
    store = tmp_path / "store"
    specs = headline_specs(seeds=3)
    specs.append({"run_id": "architectures-nometrics", "seed": 4, "store_holdout": False})
    specs.append({"run_id": "architectures-shifted", "seed": 5, "grid_offset": 500})
    make_runs(FileStorageObserver(str(store)), specs)
    failed = store / "architectures-broken"
    failed.mkdir()
    (failed / "run.json").write_text('{"status": "FAILED"}')
    (failed / "config.json").write_text("{}")
    report = report_mod.build([str(store)], str(tmp_path / "out"))
    notes = "\n".join(report.notes)
    assert "architectures-broken" in notes and "status FAILED" in notes
    assert "architectures-nometrics" in notes and "no holdout checkpoints" in notes
    assert "architectures-shifted" in notes and "unlike" in notes
    curves = pd.read_csv(tmp_path / "out" / "figures" / "learning_curves.csv")
    assert set(curves["env_step"]) == {1000, 2000, 3000}   # the shifted run did not leak in


@pytest.mark.parametrize("make, expected", [
    (lambda p: p / "missing", "does not exist"),
    (lambda p: (p / "empty").mkdir() or p / "empty", "holds no Sacred runs"),
])
def test_missing_or_empty_runs_folder_fails_clearly(tmp_path, make, expected):
    folder = make(tmp_path)
    with pytest.raises(NoRunsError, match=expected):
        load_runs([str(folder)])
    proc = subprocess.run([sys.executable, "-m", "analysis.report", "--runs", str(folder), "--out",
                           str(tmp_path / "out"), "--cache", ""], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert expected in proc.stderr and str(folder) in proc.stderr


def test_analysis_never_imports_architectures():
    """analysis/ reads stored runs only: of the package it reads the registry of designs (their
    names, order and cost-model entries, pure data) and the atomic writer, nothing that runs them."""
    code = ("import sys, analysis.report, analysis.io.load, analysis.stats, analysis.cost.model; "
            "bad = [m for m in sys.modules if m.startswith('architectures') and m not in "
            "('architectures', 'architectures.registry', 'architectures.core', 'architectures.core.atomic')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


REFERENCE = os.path.join(ROOT, "results", "reference")


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(REFERENCE), reason="results/reference not present")
def test_committed_figures_and_tables_are_what_the_report_regenerates(tmp_path):
    report_mod.build([REFERENCE], str(tmp_path))
    committed = sorted(glob.glob(os.path.join(ROOT, "paper", "figures", "*.csv"))
                       + glob.glob(os.path.join(ROOT, "paper", "tables", "*.csv"))
                       + glob.glob(os.path.join(ROOT, "paper", "tables", "*.md"))
                       + [os.path.join(ROOT, "paper", "generated", "numbers.tex")])
    assert committed, "paper/ has no generated files"
    differ = [os.path.relpath(path, ROOT) for path in committed
              if not filecmp.cmp(path, tmp_path / os.path.relpath(path, os.path.join(ROOT, "paper")), shallow=False)]
    assert differ == [], f"regenerate with `make -C paper figures`: {differ}"


@pytest.mark.parametrize("parts, expected", [
    (("CartPole", "single_env", "steps"), "CartPoleSingleEnvSteps"),
    (("utd", 16.0, "LayerNorm", "final"), "UtdSixteenLayerNormFinal"),
    (("hog", "hogwild (no lock)", "steps"), "HogHogwildNoLockSteps"),
    (("speedup", "actor_learner", 2, "cost", 1000), "SpeedupActorLearnerTwoCostThousand"),
    (("utd", 0.25), "UtdZeroPointTwoFive"),
])
def test_macro_names_are_letters_only_and_readable(parts, expected):
    assert report_mod.macro_name(*parts) == expected


def test_a_macro_cannot_mean_two_numbers(tmp_path):
    report = report_mod.Report(str(tmp_path))
    report.number("Same", 1.0)
    report.number("Same", 1.0)
    with pytest.raises(ValueError, match="would mean both"):
        report.number("Same", 2.0)


def test_every_number_the_writeup_quotes_is_a_generated_macro():
    import re

    tex = open(os.path.join(ROOT, "paper", "main.tex")).read()
    numbers = open(os.path.join(ROOT, "paper", "generated", "numbers.tex")).read()
    defined = set(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", numbers))
    used = set(re.findall(r"\\([A-Z][A-Za-z]+)", tex))
    assert used, "main.tex quotes no generated numbers"
    assert sorted(used - defined) == []
    for figure in re.findall(r"\\includegraphics(?:\[[^\]]*\])?\{([^}]+)\}", tex):
        assert os.path.exists(os.path.join(ROOT, "paper", figure)), figure
    for table in re.findall(r"\\input\{(tables/[^}]+)\}", tex):
        assert os.path.exists(os.path.join(ROOT, "paper", table)), table


@pytest.mark.slow
def test_pooling_different_configs_of_one_architecture_is_named(tmp_path):
    store = tmp_path / "store"
    make_runs(FileStorageObserver(str(store)), [
        {"run_id": "mine-a1", "seed": 1}, {"run_id": "mine-b1", "seed": 1, "architecture": "actor_learner",
                                          "num_workers": 2},
        {"run_id": "mine-c1", "seed": 1, "architecture": "actor_learner", "num_workers": 4}])
    report = report_mod.build([str(store)], str(tmp_path / "out"))
    assert any("actor_learner pools runs of 2 configs" in note for note in report.notes)
