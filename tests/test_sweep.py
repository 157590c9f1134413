"""Named sweeps: listing, bad input, resuming after SIGKILL, and the MongoDB store."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from experiments import sweep as sweep_mod
from experiments.sweeps import grid as sweep_grid
from experiments.sweeps import runners as sweep_runners
from experiments.sweeps import stores as sweep_stores
from experiments.sweeps.catalog import SWEEPS, Cell, Sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = dict(total_env_steps=2_000, eval_every=1_000, eval_episodes=2, learning_starts=300, hidden_sizes=[16],
            buffer_size=2_000, batch_size=16, log_every=500, checkpoint_every=300)
# A three-run sweep, registered in the child process that runs it.
TINY_SWEEP = (
    "import sys; from experiments.sweeps.catalog import SWEEPS, Sweep, Cell; "
    "SWEEPS['tiny'] = Sweep('tiny', 'three tiny single_env runs', {'small': 0.3, 'paper': 0.3}, "
    f"{{'small': [Cell(('cartpole', 'single_env'), {TINY!r})], 'paper': []}}, {{'small': 3, 'paper': 1}}); "
    "from experiments.sweep import main; sys.exit(main(sys.argv[1:]))"
)


def _sweep(forked, args, **kw) -> subprocess.CompletedProcess:
    """`python -m experiments.sweep ARGS` for a command that stops before any run (a refusal, a dry
    run), in a fork of a warm interpreter (tests/forked_commands.py)."""
    return forked.run(["experiments.sweep", *args], timeout=kw.get("timeout", 120))


def statuses(out, polling: bool = False) -> dict:
    """Each run's run.json. While a sweep runs (`polling`), Sacred may be mid-rewrite of one (an
    empty file): that run is left out of this look, and the next look sees it; after the
    sweep, every file must parse."""
    found = {}
    for name in os.listdir(out):
        path = os.path.join(out, name, "run.json")
        if os.path.isfile(path):
            with open(path) as f:
                try:
                    found[name] = json.load(f)
                except json.JSONDecodeError:
                    if not polling:
                        raise
    return found


def test_every_sweep_expands_to_unique_deterministic_ids():
    for sweep in SWEEPS.values():
        for scale in ("small", "paper"):
            runs = sweep_grid.expand(sweep, scale, None)
            if sweep.not_ready:  # its cells come from a file not written yet (plan_validation's predictions)
                assert runs == [] and sweep.cells_from in sweep.not_ready, sweep.name
                continue
            ids = [r.run_id for r in runs]
            assert len(ids) == len(set(ids)) and runs, (sweep.name, scale)
            assert ids == [r.run_id for r in sweep_grid.expand(sweep, scale, None)]
            assert all(r.run_id.startswith(f"{sweep.name}-") for r in runs)
    # More seeds keep the first seeds' ids: a sweep can be extended without rerunning.
    smoke1 = {r.run_id for r in sweep_grid.expand(SWEEPS["smoke"], "small", 1)}
    assert smoke1 < {r.run_id for r in sweep_grid.expand(SWEEPS["smoke"], "small", 2)}


@pytest.mark.parametrize("scale", ["small", "paper"])
def test_the_speed_sweeps_seeds_let_its_holm_family_say_faster(scale):
    """The answer tests each design's speed cell against single_env's (one a design and setting) with
    the exact rank test, Holm over them all: with too few seeds even a perfect ordering stays above 0.05
    after Holm (5 v 5 over 8 cells: 0.063), and every speed verdict would read "not told apart"."""
    from analysis import stats

    speed = SWEEPS["speed"]
    family = {(c.named[0], c.named[1]) for c in speed.cells[scale] if c.named[1] != "single_env"}
    assert len(family) == 8  # 4 designs x the busy and the waiting step
    n = speed.seeds[scale]
    assert len(family) * stats.rank_test_p(range(n), range(n, 2 * n)) < 0.05
    assert len(family) * stats.rank_test_p(range(5), range(5, 10)) > 0.05  # why not 5


def test_a_throughput_sweep_runs_seed_by_seed_with_the_same_ids():
    """scaling interleaves: every cell's first seed before any second seed, cells in their order
    within a seed, and the ids (so what is done) are those of the cell-by-cell order."""
    scaling = SWEEPS["scaling"]
    assert scaling.interleave and not SWEEPS["architectures"].interleave
    runs = sweep_grid.expand(scaling, "small", 3)
    seeds = [r.seed for r in runs]
    cells = len(runs) // 3
    assert seeds == sorted(seeds) and seeds[:cells] == [seeds[0]] * cells
    by_cell = sweep_grid.expand(Sweep(**{**scaling.__dict__, "interleave": False}), "small", 3)
    assert sorted(r.run_id for r in runs) == sorted(r.run_id for r in by_cell)
    assert [r.run_id for r in runs[:cells]] == [r.run_id for r in by_cell[::3]]
    # the headline's high_utd is measured one at a time too, at its ratio, at a free env step only
    high = [r for r in runs if r.architecture == "high_utd"]
    expected = {"cartpole": 4.0, "minatar_breakout_cpu": 1.0}  # each env's headline ratio
    assert {r.named[0] for r in high} == set(expected)
    assert all(r.updates["utd"] == expected[r.named[0]] and r.updates["env_step_cost_us"] == 0.0 for r in high)


@pytest.mark.parametrize("tokens, label", [
    ([], "cartpole single_env seed=101 total_env_steps=5000"),
    (["lr=0.001"], "cartpole single_env seed=101 total_env_steps=5000 [with lr=0.001]"),
    (["total_env_steps=3000"], "cartpole single_env seed=101 [with total_env_steps=3000]"),  # once, not twice
    (["env_id=my_envs:Corridor-v0", "total_env_steps=3000"],  # the user's env: never labelled cartpole
     "single_env seed=101 [with env_id=my_envs:Corridor-v0 total_env_steps=3000]"),
])
def test_a_runs_label_shows_each_override_once_and_never_the_config_it_replaced(tokens, label):
    from experiments.sweeps.grid import Overrides

    [run] = [r for r in sweep_grid.expand(SWEEPS["smoke"], "small", 1, Overrides.parse(tokens))
             if r.architecture == "single_env"]
    assert run.label() == label


def test_dry_run_lists_runs_and_estimate_and_runs_nothing(tmp_path, forked):
    proc = _sweep(forked, ["smoke", "--dry-run", "--out", str(tmp_path / "out")])
    assert proc.returncode == 0, proc.stderr
    assert "estimated" in proc.stderr and "min" in proc.stderr
    for arch in ("single_env", "actor_learner", "vector_env"):
        assert arch in proc.stdout
    assert "not run" in proc.stdout
    assert statuses(tmp_path / "out") == {}


def test_a_part_of_a_sweep_is_estimated_at_its_share_of_the_sweeps_time(tmp_path, forked):
    """wallclock_check's estimate (80 min) is for its 12 runs at its 3 seeds: one seed is a third of it."""
    whole = _sweep(forked, ["wallclock_check", "--dry-run", "--out", str(tmp_path / "a")])
    one = _sweep(forked, ["wallclock_check", "--dry-run", "--seeds", "1", "--out", str(tmp_path / "b")])
    assert "12 to run; estimated 80.0 min" in whole.stderr, whole.stderr
    assert "4 to run; estimated 26.7 min" in one.stderr, one.stderr


def test_cells_picks_part_of_a_sweep_with_the_whole_sweeps_ids(tmp_path, forked):
    """A part of a sweep made on its own (one cell remade in an idle window) is the same runs the
    whole sweep lists: same ids, so the whole sweep later skips them."""
    whole = sweep_grid.expand(SWEEPS["scaling"], "small", 3)
    part = sweep_grid.pick_cells(whole, "minatar_breakout_cpu/high_utd,minatar_breakout_cpu/components")
    assert {(r.architecture, r.named[0]) for r in part} == {("high_utd", "minatar_breakout_cpu"),
                                                            ("components", "minatar_breakout_cpu")}
    assert len(part) == 6 and [r.run_id for r in part] == [r.run_id for r in whole if r in part]
    proc = _sweep(forked, ["scaling", "--seeds", "3", "--cells", "minatar_breakout_cpu/high_utd", "--dry-run",
                   "--out", str(tmp_path / "out")])
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith("scaling-")]
    assert listed == [r.run_id for r in part if r.architecture == "high_utd"]
    with pytest.raises(ValueError, match="'cartpole/nope' names no cell of this sweep; its cells: .*cartpole/high_utd"):
        sweep_grid.pick_cells(whole, "cartpole/high_utd,, cartpole/nope")
    with pytest.raises(ValueError, match="no pattern given"):  # an empty shell variable never means all
        sweep_grid.pick_cells(whole, " , ")
    assert sweep_grid.pick_cells(whole, " minatar_breakout_cpu/high_utd ") == [r for r in part
                                                                             if r.architecture == "high_utd"]


@pytest.mark.parametrize("pattern, cells", [
    # key=value parts pick among cells that share their named configs; defaults count (reset_period=0,
    # reset_layers="last"); the long cells (100k) share the grid's names and settings but for the budget
    ("cartpole/high_utd/utd=4/layer_norm=True", {(4.0, True, 0, "last", 50_000), (4.0, True, 40_000, "last", 50_000),
                                                 (4.0, True, 0, "last", 100_000), (4.0, True, 40_000, "last", 100_000),
                                                 (4.0, True, 40_000, "all", 100_000)}),
    ("cartpole/high_utd/utd=4/layer_norm=True/reset_period=0", {(4.0, True, 0, "last", 50_000),
                                                                (4.0, True, 0, "last", 100_000)}),
    ("cartpole/high_utd/utd=4/layer_norm=True/total_env_steps=50000", {(4.0, True, 0, "last", 50_000),
                                                                       (4.0, True, 40_000, "last", 50_000)}),
    ("cartpole/high_utd/reset_layers=all", {(4.0, True, 40_000, "all", 100_000)}),
    ("high_utd/utd=16.0/layer_norm=False", {(16.0, False, 0, "last", 50_000), (16.0, False, 160_000, "last", 50_000)}),
    ("cartpole/single_env,utd=1/reset_period=10000", {(0.25, False, 0, "last", 50_000), (0.25, False, 0, "last", 100_000),
                                                      (1.0, False, 10_000, "last", 50_000),
                                                      (1.0, True, 10_000, "last", 50_000)}),
])
def test_cells_picks_by_setting_where_cells_share_their_names(pattern, cells):
    whole = sweep_grid.expand(SWEEPS["utd"], "small", 2)
    part = sweep_grid.pick_cells(whole, pattern)
    keys = ("utd", "layer_norm", "reset_period", "reset_layers", "total_env_steps")
    assert {tuple(r.config()[k] for k in keys) for r in part} == cells
    assert len(part) == 2 * len(cells) and [r.run_id for r in part] == [r.run_id for r in whole if r in part]


def test_cells_names_a_setting_no_cell_has():
    whole = sweep_grid.expand(SWEEPS["utd"], "small", 1)
    with pytest.raises(ValueError, match="'high_utd/utd=5' names no cell of this sweep"):
        sweep_grid.pick_cells(whole, "high_utd/utd=5")


@pytest.mark.parametrize("args, message", [
    (["nope"], "unknown sweep 'nope'; valid sweeps: smoke, architectures"),
    (["smoke", "--cells", "cartpole/nope"], "error: --cells: 'cartpole/nope' names no cell of this sweep"),
    (["smoke", "--cells", ""], "error: --cells: no pattern given"),
    (["smoke", "--seeds", "0"], "--seeds must be >= 1"),
    pytest.param(["smoke", "--mongo", "mongodb://127.0.0.1:1/dqn"], "--mongo 'mongodb://127.0.0.1:1/dqn' is unreachable",
                 marks=pytest.mark.slow),  # waits out the driver's connection timeout
    (["smoke", "--mongo", "localhost:27017"], "expected a mongodb:// URL"),
])
def test_bad_input_fails_before_any_run(tmp_path, args, message, forked):
    proc = _sweep(forked, [*args, "--out", str(tmp_path / "out")])
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert statuses(tmp_path / "out") == {} if (tmp_path / "out").exists() else True


def test_an_unwritable_out_fails_clearly(tmp_path, forked):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = _sweep(forked, ["smoke", "--out", str(blocker / "runs")])
    assert proc.returncode != 0 and "is not writable" in proc.stderr and str(blocker) in proc.stderr


@pytest.mark.slow
def test_a_sweep_killed_mid_run_resumes_and_counts_every_run_once(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", TINY_SWEEP, "tiny", "--out", str(out)]
    first = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    # Wait until one run is COMPLETED and the next one has written a checkpoint, then kill the
    # sweep outright.
    while time.monotonic() < deadline:
        found = statuses(out, polling=True) if out.exists() else {}
        running = [k for k, r in found.items() if r["status"] == "RUNNING"]
        if sum(r["status"] == "COMPLETED" for r in found.values()) >= 1 and running and (
                out / "_checkpoints" / f"{running[0]}.pt").exists():
            break
        time.sleep(0.05)
    else:
        first.kill()
        pytest.fail("the sweep did not get to its second run")
    completed_before = {k: v["start_time"] for k, v in statuses(out).items() if v["status"] == "COMPLETED"}
    first.send_signal(signal.SIGKILL)
    first.wait()
    time.sleep(0.5)  # the orphaned run dies with its parent (PR_SET_PDEATHSIG)
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr[-2000:]
    found = statuses(out)
    assert len(found) == 3 and all(r["status"] == "COMPLETED" for r in found.values())
    for run_id, start in completed_before.items():
        assert found[run_id]["start_time"] == start  # completed runs were not run again
    resumed = [r for k, r in found.items() if k == running[0]][0]
    assert resumed["result"]["resumed_from_env_steps"] >= 300  # it continued from its checkpoint
    assert len(os.listdir(out / "_incomplete")) == 1  # the killed run, set aside, not counted
    assert os.listdir(out / "_checkpoints") == []  # finished runs leave no checkpoint behind


@pytest.mark.parametrize("started_with", [signal.SIG_DFL, signal.SIG_IGN], ids=["from a terminal", "with & in a script"])
def test_ctrl_c_on_a_sweep_is_one_line_saying_what_was_kept_and_how_to_resume(tmp_path, started_with):
    """Also where the sweep was started with SIGINT ignored, as `cmd &` in a script starts it: a
    `kill -INT` to its group still stops it (a background sweep once went on through one)."""
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", TINY_SWEEP, "tiny", "--out", str(out)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, started_with))
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # one run completed, the next one running
        found = statuses(out, polling=True) if out.exists() else {}
        if {"COMPLETED", "RUNNING"} <= {r["status"] for r in found.values()}:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the sweep and its run
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr[-2000:]
    [line] = [x for x in stderr.splitlines() if x.startswith("error:")]
    [cut] = [k for k, r in statuses(out).items() if r["status"] == "INTERRUPTED"]  # every record parses
    assert line.startswith(f"error: interrupted (Ctrl-C): 1 of 3 runs are complete and kept in {out}; 1 interrupted "
                           f"({cut})") and line.endswith("run the same command again to resume (completed runs are "
                                                         "skipped)")
    assert not any(str(out) in p for p in _processes())  # no run of it goes on alone


def _processes() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found.append(f.read().replace(b"\0", b" ").decode())
        except OSError:
            pass
    return found


def _completed(**result) -> str:
    return json.dumps({"status": "COMPLETED", "result": {"env_steps_per_sec": 1000.0, "final_holdout_return": 500.0,
                                                         **result}})


_CUT = _completed(holdout_curve=[{"env_steps": 1000 * k, "return_mean": 1.0} for k in range(400)])[:4096]
STORED_CASES = [
    # (case, what the run stored in run.json or None for nothing, its exit code, the record's state and label)
    ("completed", _completed(), 0, "done", "COMPLETED"),
    ("completed, non-zero exit", _completed(), 1, "done", "COMPLETED"),
    ("diverged, exit 3", _completed(diverged=True, diverged_at_update=120, diverged_reason="non-finite TD loss"), 3,
     "diverged", "DIVERGED"),
    ("COMPLETED without a result", json.dumps({"status": "COMPLETED"}), 0, "failed", "NO RESULT"),
    ("run.json cut at 4,096 bytes by a full disk", _CUT, 0, "failed", "UNREADABLE"),
    ("status FAILED", json.dumps({"status": "FAILED", "result": None}), 1, "failed", "FAILED"),
    ("killed: status RUNNING", json.dumps({"status": "RUNNING"}), -9, "failed", "RUNNING"),
    ("exit 0, nothing stored", None, 0, "failed", "INCOMPLETE"),
]


def test_what_a_run_left_decides_whether_it_counts(tmp_path, monkeypatch, capsys):
    """One fake run per case (the runner writes its run.json and returns its exit code): only a
    COMPLETED run.json with a result counts, whatever the exit code; a diverged one counts apart;
    the others are named with their reason, moved aside and rerun on restart (experiments/sweeps/records.py)."""
    monkeypatch.setitem(SWEEPS, "fake", Sweep("fake", "one fake run per case", {"small": 0.1, "paper": 0.1},
                                              {"small": [Cell(("cartpole", "single_env"), dict(TINY))], "paper": []},
                                              {"small": len(STORED_CASES), "paper": 1}))
    runs = sweep_grid.expand(SWEEPS["fake"], "small", None)
    case_of = {run.run_id: case for run, case in zip(runs, STORED_CASES)}
    launched, restarted = [], []

    def fake_launch(run, store, log_dir, quiet, at_once=1):
        launched.append(run.run_id)
        _, stored, code, _, _ = case_of[run.run_id] if not restarted else ("rerun", _completed(), 0, "done", "")
        os.makedirs(os.path.join(store.out, run.run_id), exist_ok=True)
        if stored is not None:
            with open(os.path.join(store.out, run.run_id, "run.json"), "w") as f:
                f.write(stored)
        return code

    monkeypatch.setattr(sweep_runners, "launch", fake_launch)
    out = tmp_path / "out"
    code = sweep_mod.main(["fake", "--out", str(out)])
    first = capsys.readouterr()
    assert code == 1  # some runs failed
    for run_id, (case, _, exit_code, state, label) in case_of.items():
        record = sweep_stores.FileStore(str(out)).record(run_id)
        assert (record.state, record.label()) == (state, label), case
        row = next(line for line in first.out.splitlines() if line.startswith(run_id))
        assert row[25:36].strip() == label, case  # the summary's status column
        if state == "failed":
            assert f"run {run_id} failed (exit {exit_code}; {record.reason}" in first.err, case
            assert f"{run_id} ({record.reason})" in first.err.split("\nfailed: ")[1], case
    diverged = [r for r, c in case_of.items() if c[3] == "diverged"]
    assert f"3 of {len(runs)} runs completed" in first.err
    assert f"1 of them diverged (counted apart, not rerun): {diverged[0]}" in first.err
    assert "is not valid JSON (4,096 bytes" in first.err and "COMPLETED but has no result" in first.err
    # Started again: only the failed runs run, each stored folder of theirs moved aside first.
    launched.clear()
    restarted.append(True)
    assert sweep_mod.main(["fake", "--out", str(out)]) == 0
    again = capsys.readouterr()
    failed = [r for r, c in case_of.items() if c[3] == "failed"]
    assert launched == failed
    assert f"{len(runs)} runs, 3 already completed (1 of them diverged), {len(failed)} to run" in again.err
    assert len(os.listdir(out / "_incomplete")) == len(failed)  # every failed case left a folder
    assert all(sweep_stores.FileStore(str(out)).record(r).counts for r in case_of)


class _FakeMongoStore(sweep_stores.MongoStore):
    def __init__(self, collection):
        self.url, self.db_name, self.runs = "mongodb://mock", "dqn", collection


def test_mongo_store_counts_only_completed_runs_and_clears_the_rest():
    mongomock = pytest.importorskip("mongomock")
    runs = mongomock.MongoClient().db.runs
    runs.insert_many([{"_id": "a", "status": "COMPLETED", "result": {"env_steps_per_sec": 5.0}},
                      {"_id": "b", "status": "RUNNING"}, {"_id": "c", "status": "FAILED"},
                      {"_id": "e", "status": "COMPLETED"},
                      {"_id": "f", "status": "COMPLETED", "result": {"diverged": True}}])
    store = _FakeMongoStore(runs)
    assert [store.record(i).label() for i in "abcdef"] == ["COMPLETED", "RUNNING", "FAILED", "not run", "NO RESULT",
                                                           "DIVERGED"]
    for run_id in "abcef":
        store.clear_incomplete(run_id)
    assert [doc["_id"] for doc in runs.find()] == ["a", "f"]  # a diverged run counts: it stays
    assert store.record("a").result == {"env_steps_per_sec": 5.0}
    assert store.observer_args() == ["--mongo", "mongodb://mock"]


@pytest.mark.skipif(not os.environ.get("MONGO_URL"), reason="MONGO_URL not set: no real MongoDB server to test "
                                                              "the sweep's --mongo path against")
def test_tiny_sweep_against_a_real_mongodb(tmp_path):
    url = os.environ["MONGO_URL"].rstrip("/") + f"/pdqn_sweep_test_{os.getpid()}"
    proc = subprocess.run([sys.executable, "-c", TINY_SWEEP, "tiny", "--seeds", "1", "--mongo", url, "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    import pymongo

    client = pymongo.MongoClient(url)
    db = client.get_default_database()
    try:
        assert [d["status"] for d in db.runs.find()] == ["COMPLETED"]
    finally:
        client.drop_database(db.name)


def test_sweeps_name_only_known_named_configs():
    from experiments.tracking.configs import NAMED_CONFIGS

    for sweep in SWEEPS.values():
        for scale, cells in sweep.cells.items():
            for cell in cells:
                assert isinstance(cell, Cell) and isinstance(sweep, Sweep)
                for name in cell.named:
                    assert name in NAMED_CONFIGS or name in sweep_grid.ARCHITECTURE_CONFIGS, (sweep.name, name)


@pytest.mark.parametrize("network, learner, hand_derived, optimizer", [
    ("minatar_conv", [], False, "architectures.core.dqn.FusedAdam"),  # the conv net goes through autograd
    pytest.param("cartpole_mlp", [], True, "architectures.core.dqn.FusedAdam",  # the suite's: hand-derived gradient
                 marks=pytest.mark.slow),
    pytest.param("cartpole_mlp", ["mlp_fast_grad=False", "optimizer=torch"], False, "torch.optim.adam.Adam",
                 marks=pytest.mark.slow),  # a practitioner's: autograd and torch.optim.Adam
])
def test_timing_experiment_times_the_learner_update(tmp_path, network, learner, hand_derived, optimizer):
    proc = subprocess.run([sys.executable, "-m", "experiments.timing", "with", f"network={network}", "batch_size=8",
                           "updates=20", "warmup=2", "torch_threads=1", *learner, "-F", str(tmp_path), "-l", "WARNING"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run,) = statuses(tmp_path).values()
    r = run["result"]
    assert run["status"] == "COMPLETED" and r["updates"] == 20 and r["threads_in_effect"] == 1
    assert 0 < r["update_us_p10"] <= r["update_us_median"] <= r["update_us_p90"]
    assert (r["hand_derived_gradient"], r["optimizer"]) == (hand_derived, optimizer)


@pytest.mark.parametrize("arg, message", [("network=nope", "network: must be one of"),
                                          ("torch_threads=0", "torch_threads: must be an integer >= 1"),
                                          ("optimizer=sgd", "optimizer: must be one of fused, torch")])
@pytest.mark.slow
def test_timing_bad_input_fails_fast(tmp_path, arg, message, forked):
    proc = forked.run(["experiments.timing", "with", arg, "-F", str(tmp_path)], timeout=60)
    assert proc.returncode == 2 and f"error: {message}" in proc.stderr
    assert statuses(tmp_path) == {}


@pytest.mark.slow
def test_device_sweep_skips_cuda_runs_without_cuda(tmp_path, forked):
    import torch

    proc = _sweep(forked, ["device", "--dry-run", "--out", str(tmp_path)])
    assert proc.returncode == 0
    if not torch.cuda.is_available():
        assert "no CUDA on this machine" in proc.stderr and "device=cuda" not in proc.stdout
    assert "device=cpu" in proc.stdout


@pytest.mark.slow
def test_a_full_disk_fails_clearly_and_leaves_completed_runs_intact(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8M", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root): no full-disk test")
    try:
        out = disk / "out"
        cmd = [sys.executable, "-c", TINY_SWEEP, "tiny", "--out", str(out)]
        first = subprocess.run([*cmd, "--seeds", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert first.returncode == 0, first.stderr[-2000:]
        (run_id,) = statuses(out)
        before = (out / run_id / "run.json").read_bytes()
        # Fill the disk to the last byte, unbuffered: a buffered file's close would flush its
        # unwritten rest and raise ENOSPC again (it did, in CI on 2026-12-05).
        with open(disk / "filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
            except OSError:
                pass
        second = subprocess.run([*cmd, "--seeds", "2"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert second.returncode != 0 and "No space left on device" in second.stderr, second.stderr[-2000:]
        assert "Traceback" not in second.stderr
        assert (out / run_id / "run.json").read_bytes() == before  # the completed run is untouched
        assert list(statuses(out)) == [run_id]
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


@pytest.mark.slow
def test_a_failing_run_is_named_and_the_others_still_complete(tmp_path):
    # The actor_learner run's actor 0 crashes at its 100th env step (the workers' fault hook);
    # the single_env run has no workers and completes.
    code = TINY_SWEEP.replace(
        "'small': [Cell(('cartpole', 'single_env'), {TINY!r})]".format(TINY=TINY),
        "'small': [Cell(('cartpole', 'single_env'), {TINY!r}), Cell(('cartpole', 'actor_learner'), {TINY!r})]".format(
            TINY=TINY))
    assert code != TINY_SWEEP
    proc = subprocess.run([sys.executable, "-c", code, "tiny", "--seeds", "1", "--out", str(tmp_path), "--report"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PDQN_FAULT": "0:crash:100"})
    assert proc.returncode == 1
    assert "failed (exit 1; status FAILED)" in proc.stderr and "_logs" in proc.stderr
    assert "rerun the same command" in proc.stderr
    assert sorted(r["status"] for r in statuses(tmp_path).values()) == ["COMPLETED", "FAILED"]
    # --report builds from what is there, naming the failed run it left out.
    assert (tmp_path / "report" / "figures" / "learning_curves.csv").exists()
    assert (tmp_path / "report" / "generated" / "numbers.tex").exists()
    assert "status FAILED; left out" in proc.stderr
    assert "failed (" not in proc.stderr.split("report: building")[1]  # every figure it had data for built


def test_a_bad_value_in_a_sweeps_own_cell_stops_it_before_any_run(tmp_path):
    code = TINY_SWEEP.replace(
        "'small': [Cell(('cartpole', 'single_env'), {TINY!r})]".format(TINY=TINY),
        "'small': [Cell(('cartpole', 'single_env'), {TINY!r}), Cell(('cartpole',), dict({TINY!r}, lr=-1.0))]".format(
            TINY=TINY))
    proc = subprocess.run([sys.executable, "-c", code, "tiny", "--seeds", "1", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "error: lr: must be a number > 0" in proc.stderr
    assert statuses(tmp_path) == {}


def test_a_second_sweep_on_the_same_store_is_refused(tmp_path):
    import fcntl

    tmp_path.mkdir(exist_ok=True)
    with open(tmp_path / ".sweep.lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("pid 4242")
        held.flush()
        proc = subprocess.run([sys.executable, "-c", TINY_SWEEP, "tiny", "--out", str(tmp_path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "another sweep (pid 4242) is running on the store" in proc.stderr
    assert statuses(tmp_path) == {}  # nothing ran, nothing was moved aside
    assert not (tmp_path / "_incomplete").exists()


@pytest.mark.parametrize("value, text", [(True, "True"), (False, "False"), (0.25, "0.25"), (2, "2"),
                                         ([64, 64], "[64, 64]"), ("apex", "apex")])
def test_values_reach_sacred_as_python_literals(value, text):
    run = sweep_grid.RunSpec("x", "single_env", ("cartpole",), {"key": value}, 1)
    assert f"key={text}" in run.sacred_args()


def test_every_cell_of_every_sweep_is_a_valid_config():
    """Catches a sweep that would fail run after run (a JSON `true`, a misspelt key) before it starts."""
    from architectures.core.config import DQNConfig
    from experiments.tracking.configs import NAMED_CONFIGS, algorithm_values

    for sweep in SWEEPS.values():
        if sweep.experiment != "train":
            continue
        for cells in sweep.cells.values():
            for cell in cells:
                values = {}
                for name in cell.named:
                    values.update(NAMED_CONFIGS[name])
                values.update(cell.updates)
                values = algorithm_values(values)
                values["checkpoint_path"] = "run.pt"  # the runner gives every train run one
                DQNConfig.from_dict(values)


def test_the_docs_name_every_sweep():
    with open(os.path.join(ROOT, "docs", "sweeps.md")) as f:
        readme = f.read()
    assert [name for name in SWEEPS if f"`{name}`" not in readme] == []


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="no scheduler autogroups on this kernel")
def test_nice_lowers_its_own_sessions_group_and_leaves_a_terminals_alone():
    """Under autogroups nice ranks only within a session's group: a `--nice` sweep leading its own
    session (setsid) lowers that group too, one in a shared session leaves the group as it was."""
    # A process in no autogroup (the root group: a session never setsid since boot, as CI's can be)
    # reads the file as empty; "-" stands for that.
    probe = ("import os; from experiments.sweeps.runners import lower_priority; lower_priority(); "
             "print(os.nice(0), (open('/proc/self/autogroup').read().split() or ['-'])[-1])")
    own = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         start_new_session=True)
    shared = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert own.stdout.split() == ["10", "19"], own.stderr
    with open("/proc/self/autogroup") as f:
        before = (f.read().split() or ["-"])[-1]
    assert shared.stdout.split() == ["10", before], shared.stderr


@pytest.mark.slow
def test_each_run_stores_how_many_ran_at_once(tmp_path):
    """`--jobs 2` reaches every run's result as runs_at_once 2 (the report quotes no speed from
    such runs); a run a sweep made alone stores 1."""
    cmd = [sys.executable, "-c", TINY_SWEEP, "tiny", "--out", str(tmp_path / "out")]
    together = subprocess.run([*cmd, "--seeds", "2", "--jobs", "2"], cwd=ROOT, capture_output=True, text=True,
                              timeout=240)
    assert together.returncode == 0, together.stderr[-2000:]
    first, second = [line for line in together.stderr.splitlines() if re.match(r"\[[#.]+\] run \d/2", line)]
    first_id = re.search(r"min: (\S+)", first)[1]
    assert "also running" not in first and f"(also running: {first_id})" in second  # the later names the earlier
    alone = subprocess.run([*cmd, "--seeds", "3"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert alone.returncode == 0, alone.stderr[-2000:]
    at_once = sorted(run["result"]["runs_at_once"] for run in statuses(tmp_path / "out").values())
    assert at_once == [1, 2, 2]


def test_rest_comes_before_each_run_started_and_never_before_one_skipped(tmp_path, monkeypatch, capsys):
    """`--rest S` (timing runs one at a time: the run before must not set this one's speed, docs/benchmarks.md):
    S idle seconds before each run the sweep starts; a restart skips its completed runs without resting."""
    monkeypatch.setitem(SWEEPS, "fake", Sweep("fake", "two fake runs", {"small": 0.1, "paper": 0.1},
                                              {"small": [Cell(("cartpole", "single_env"), dict(TINY))], "paper": []},
                                              {"small": 2, "paper": 1}))
    started = []

    def fake_launch(run, store, log_dir, quiet, at_once=1):
        started.append(time.monotonic())
        os.makedirs(os.path.join(store.out, run.run_id), exist_ok=True)
        with open(os.path.join(store.out, run.run_id, "run.json"), "w") as f:
            f.write(_completed())
        return 0

    monkeypatch.setattr(sweep_runners, "launch", fake_launch)
    began = time.monotonic()
    assert sweep_mod.main(["fake", "--out", str(tmp_path / "out"), "--rest", "0.5"]) == 0
    assert len(started) == 2 and started[0] - began >= 0.5 and started[1] - started[0] >= 0.5
    began = time.monotonic()
    assert sweep_mod.main(["fake", "--out", str(tmp_path / "out"), "--rest", "60"]) == 0
    assert len(started) == 2 and time.monotonic() - began < 30  # both completed: nothing started, no rest
    assert "2 already completed, 0 to run" in capsys.readouterr().err
