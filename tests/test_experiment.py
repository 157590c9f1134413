"""The Sacred experiment end to end: the documented command line, bad input, and both stores."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = ["total_env_steps=600", "learning_starts=100", "eval_every=300", "eval_episodes=2",
        "hidden_sizes=[16]", "batch_size=16", "log_every=100"]


def _train(args, cwd=ROOT, timeout=120):
    return subprocess.run([sys.executable, "-m", "experiments.train", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": ROOT})


def _runs(folder):
    if not os.path.isdir(folder):
        return []
    return [json.load(open(os.path.join(folder, d, "run.json"))) for d in sorted(os.listdir(folder))
            if d.isdigit()]


def test_documented_command_line_stores_a_completed_run(tmp_path):
    out = tmp_path / "runs"
    proc = _train(["with", "design=single_env", "env_id=CartPole-v1", "seed=3", *TINY, "-F", str(out)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    [run] = _runs(out)
    assert run["status"] == "COMPLETED"
    result = run["result"]
    for key in ("env_steps", "updates", "train_seconds", "env_steps_per_sec", "updates_per_sec", "realised_utd",
                "final_holdout_return"):
        assert key in result
    assert result["design"] == "single_env" and result["env_steps"] == 600
    host = run["host"]
    assert host["cpu_count"] >= 1 and host["cpu_model"] and host["packages"]["torch"].startswith("2.13.0")
    assert "commit" in host["git"] and "OMP_NUM_THREADS" in host["thread_env"]
    metrics = json.load(open(out / "1" / "metrics.json"))
    assert metrics["holdout_return_mean"]["steps"] == [300, 600]
    for name in ("env_steps_per_sec", "td_loss", "q_mean", "train_episode_return"):
        assert metrics[name]["values"], name
    info = json.load(open(out / "1" / "info.json"))
    assert [len(h["returns"]) for h in info["holdout"]] == [2, 2]  # per-episode returns kept
    assert json.load(open(out / "1" / "config.json"))["seed"] == 3


def test_a_run_ends_in_a_short_summary_and_no_process_prints_sacreds_warning(tmp_path):
    """In place of Sacred's whole result dict (hundreds of lines), one line; and Sacred's
    `pkg_resources is deprecated` warning from no process, the spawned actors included."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}  # as a user's shell has it
    proc = subprocess.run([sys.executable, "-m", "experiments.train", "with", "actor_learner", *TINY, "-F",
                           str(tmp_path / "runs")], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**env, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Result:" not in proc.stderr and "pkg_resources" not in proc.stdout + proc.stderr
    [line] = proc.stdout.splitlines()
    assert line.startswith("result: actor_learner, 600 env steps, ") and line.endswith(
        f"the whole result is in {tmp_path / 'runs' / '1'}")


def test_default_observer_is_file_storage_under_results(tmp_path):
    # Run from a scratch folder holding a link to the code, so results/runs lands in tmp_path.
    for name in ("architectures", "experiments"):
        os.symlink(os.path.join(ROOT, name), tmp_path / name)
    proc = _train(["with", *TINY, "total_env_steps=300", "eval_every=300"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [r["status"] for r in _runs(tmp_path / "results" / "runs")] == ["COMPLETED"]


def test_the_old_spelling_architecture_is_read_as_design_and_said_once(tmp_path):
    out = tmp_path / "runs"
    proc = _train(["with", "architecture=single_env", "env_id=CartPole-v1", "seed=3", *TINY, "-F", str(out)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    [run] = _runs(out)
    assert run["result"]["design"] == "single_env"
    said = [line for line in proc.stderr.splitlines() if "the old spelling of design=" in line]
    assert len(said) == 1, proc.stderr[-2000:]


BAD_INPUT = [
    (["design=nope"], "design: unknown 'nope'"),
    (["env_id=NoSuchEnv-v0"], "env_id: unknown gymnasium id"),
    (["batch_size=0"], "batch_size: must be an integer >= 1"),
    (["buffer_size=-4"], "buffer_size: must be an integer >= 1"),
    (["utd=0"], "utd: must be a number > 0"),
    (["eps_start=1.5"], "eps_start: must be in [0, 1]"),
    (["eps_end=-0.1"], "eps_end: must be in [0, 1]"),
    (["learning_starts=5000", "total_env_steps=1000"], "learning_starts: must be <= total_env_steps"),
    (["design=actor_learner", "num_workers=0"], "num_workers: must be an integer >= 1"),
    (["actor_learner", "weight_sync_period=0"], "weight_sync_period: must be an integer >= 1"),
]


@pytest.mark.parametrize("args,message", [BAD_INPUT[0], BAD_INPUT[-1]])
def test_bad_input_fails_fast_with_one_line_and_records_nothing(tmp_path, args, message):
    """The command line itself, for a key Sacred's config holds and a named config's value."""
    out = tmp_path / "runs"
    proc = _train(["with", *args, "-F", str(out)], timeout=60)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert lines == [f"error: {lines[0][7:]}"] and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not [r for r in _runs(out) if r["status"] == "COMPLETED"]


@pytest.mark.parametrize("args,message", BAD_INPUT)
def test_every_bad_value_stops_the_experiment_before_it_runs_with_one_line(capsys, args, message):
    """Every bad value through the same hook, in this process (a command line each cost 2 s of
    interpreter and Sacred start-up, ten times over): exit 2 and one line, before the run starts."""
    from experiments.train import ex

    named = [a for a in args if "=" not in a]
    updates = dict(a.split("=", 1) for a in args if "=" in a)
    with pytest.raises(SystemExit) as stop:
        ex.run(named_configs=named, config_updates={k: _value(v) for k, v in updates.items()},
               options={"--unobserved": True, "--loglevel": "ERROR"})
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith("error: ") and message in lines[0], lines


def _value(text: str):
    """A `with` value as Sacred's command line reads it (a number, else the string)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def test_named_configs_are_valid():
    from architectures import ARCHITECTURES
    from architectures.core.config import DQNConfig
    from experiments.tracking.configs import NAMED_CONFIGS

    for name, values in NAMED_CONFIGS.items():
        DQNConfig.from_dict({k: v for k, v in values.items() if k != "design"})  # raises on a bad value
        assert values.get("design", "single_env") in ARCHITECTURES
    assert {"cartpole", "minatar_breakout", "actor_learner", "vector_env"} <= set(NAMED_CONFIGS)


def _run_in_process(observer, **updates):
    from experiments.train import ex

    ex.observers.append(observer)
    try:
        return ex.run(config_updates={"design": "single_env", "total_env_steps": 300, "learning_starts": 100,
                                      "eval_every": 300, "eval_episodes": 1, "hidden_sizes": [8],
                                      "batch_size": 8, "log_every": 100, **updates})
    finally:
        ex.observers.remove(observer)


def test_mongo_observer_with_mongomock():
    mongomock = pytest.importorskip("mongomock")
    import gridfs
    from mongomock.gridfs import enable_gridfs_integration
    from sacred.observers import MongoObserver

    enable_gridfs_integration()
    db = mongomock.MongoClient().db
    observer = MongoObserver.create_from(db.runs, gridfs.GridFS(db), metrics_collection=db.metrics)
    run = _run_in_process(observer, seed=5)
    stored = db.runs.find_one({"_id": run._id})
    assert stored["status"] == "COMPLETED"
    assert stored["result"]["env_steps"] == 300 and stored["config"]["seed"] == 5
    names = {m["name"] for m in db.metrics.find({"run_id": run._id})}
    assert {"holdout_return_mean", "env_steps_per_sec"} <= names


@pytest.mark.skipif(not os.environ.get("MONGO_URL"), reason="MONGO_URL not set: no real MongoDB server to test against")
def test_mongo_observer_with_a_real_server():
    import uuid

    from sacred.observers import MongoObserver

    db_name = f"dqn_suite_test_{uuid.uuid4().hex[:8]}"
    observer = MongoObserver(url=os.environ["MONGO_URL"], db_name=db_name)
    try:
        run = _run_in_process(observer)
        assert observer.runs.find_one({"_id": run._id})["status"] == "COMPLETED"
    finally:
        observer.runs.database.client.drop_database(db_name)


@pytest.mark.parametrize("url, expected", [
    ("mongodb://localhost:27017/dqn", ("mongodb://localhost:27017/dqn", "dqn")),
    ("mongodb://localhost:27017", ("mongodb://localhost:27017", "parallel_dqn")),
    ("mongodb://user:pw@db.example.org:27017/runs?authSource=admin",
     ("mongodb://user:pw@db.example.org:27017/runs?authSource=admin", "runs")),
])
def test_mongo_urls_name_their_database(url, expected):
    from experiments.train import mongo_target

    assert mongo_target(url) == expected


@pytest.mark.parametrize("url", ["localhost:27017:dqn", "http://localhost/dqn"])
def test_a_mongo_flag_that_is_not_a_url_fails_clearly(url):
    from experiments.train import mongo_target

    with pytest.raises(SystemExit, match="expected a mongodb:// URL"):
        mongo_target(url)
