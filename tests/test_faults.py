"""Faults a run meets besides a kill: a full disk, non-finite values, a shared or bad checkpoint,
an unknown named config. Each ends with a non-zero exit code and one line, and leaves nothing
half-written (docs/checkpoints-and-faults.md). The disk cases run on a small tmpfs, skipped where mounting is not
allowed; the bad envs come from tests/fault_envs.py."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import traceback
import warnings

import numpy as np
import pytest
import torch

from architectures import get_train_fn, preflight
from architectures.core.config import ConfigError, DQNConfig
from architectures.core.errors import CheckpointSaveFailed, EnvFailed, NonFiniteEnvValue, RunDiverged
from architectures.registry import NAMES
from architectures.run.checkpoint import CHECKPOINT_FORMAT, save_checkpoint
from experiments.tracking.store import atomic_write
from tests.fault_envs import RAISED, RAISES_AT
from tests.test_actor_learner import assert_clean

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DESIGNS = list(NAMES)  # every design in the registry: a new one is tested here without a line of its own
TINY = dict(total_env_steps=1_500, eval_every=1_000, eval_episodes=2, learning_starts=200, hidden_sizes=(16,),
            buffer_size=1_500, batch_size=16, log_every=250, num_workers=2, worker_timeout_s=30.0)
CLI_TINY = ["total_env_steps=600", "learning_starts=100", "eval_every=300", "eval_episodes=2", "hidden_sizes=[16]",
            "batch_size=16", "log_every=100"]


def _train(args, timeout=120, **env):
    return subprocess.run([sys.executable, "-m", "experiments.train", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": ROOT, **env})


def _refused(forked, args):
    """A command that stops before any work, in a warm fork (tests/forked_commands.py): its own
    interpreter spent 3-5 s of a loaded CI machine importing torch only to exit 2."""
    return forked.run(["experiments.train", *args], env={**os.environ, "PYTHONPATH": ROOT})


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _no_leftovers(folder) -> None:
    """Every JSON record under `folder` parses, and no temp file is left."""
    for base, _, names in os.walk(folder):
        for name in names:
            assert not name.endswith(".tmp"), os.path.join(base, name)
            if name.endswith(".json"):
                with open(os.path.join(base, name)) as f:
                    json.load(f)


def _run_folders(store) -> list[str]:
    return [d for d in os.listdir(store) if d.isdigit()] if os.path.isdir(store) else []


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs, unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip() or 'not root'})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder, leave: int = 0) -> None:
    """Fill the disk, then free `leave` bytes again (to the block)."""
    path = os.path.join(folder, "filler")
    try:
        with open(path, "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError:
        pass
    if leave:
        os.truncate(path, max(0, os.path.getsize(path) - leave))


# ---------------------------------------------------------------------- non-finite values
NON_FINITE = [(design, "NanObs-v0") for design in DESIGNS] + [("single_env", "NanReward-v0")]
"""Every design's observations; the reward through one (every design checks both in one place,
run.acting.EpisodeStream.record)."""


@pytest.mark.parametrize("design, env", NON_FINITE)
@pytest.mark.slow
def test_a_non_finite_env_value_stops_the_run(design, env):
    cfg = DQNConfig(env_id=f"tests.fault_envs:{env}", **TINY)
    with pytest.raises(NonFiniteEnvValue) as caught:
        get_train_fn(design)(cfg, None)
    message = str(caught.value)
    assert "\n" not in message and f"env tests.fault_envs:{env} (worker " in message
    assert "at its env step 500;" in message
    assert ("reward (nan)" if env == "NanReward-v0" else "non-finite observation") in message


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.slow
def test_a_non_finite_loss_stops_every_design_as_diverged(design):
    with pytest.raises(RunDiverged) as caught:
        get_train_fn(design)(DQNConfig(lr=1e30, **TINY), None)
    err = caught.value
    # hogwild's workers start learning by their own step counts (WorkerShare), so the run's summed
    # count can trail learning_starts where another worker lags (195 of 200 once in CI); it still
    # holds the learning worker's own published steps, its share of learning_starts less the step
    # in hand (published after its updates).
    workers = TINY["num_workers"]
    started = TINY["learning_starts"] // workers - 1 if design == "hogwild" else TINY["learning_starts"]
    assert err.update >= 1 and err.env_steps >= started and "non-finite TD loss" in err.reason
    assert not np.isfinite(err.max_abs_q)  # what it saw, never the 0.0 a max() over NaN gives
    result = err.result()
    assert result["diverged"] is True and result["diverged_at_update"] == err.update


def test_a_diverged_run_is_recorded_as_diverged_and_exits_3(tmp_path):
    store = tmp_path / "runs"
    proc = _train(["with", *CLI_TINY, "lr=1e30", "-F", str(store)])
    assert proc.returncode == 3, proc.stderr[-2000:]
    [line] = _errors(proc.stderr)
    assert line.startswith("error: diverged: non-finite TD loss") and "recorded as diverged" in line
    run = json.load(open(store / "1" / "run.json"))
    assert run["status"] == "COMPLETED" and run["result"]["diverged"] is True
    assert run["result"]["diverged_at_update"] >= 1


# ---------------------------------------------------------------------- every episode has an end
ENDLESS = "tests.fault_envs:Endless-v0"  # never terminates, registered without max_episode_steps


@pytest.mark.parametrize("design", DESIGNS)
def test_an_env_without_a_cap_is_said_once_and_cut_at_the_default_cap(design):
    from architectures.core.envs import DEFAULT_EPISODE_CAP
    from architectures.core.errors import RunWarning

    with pytest.warns(RunWarning) as said:
        preflight(design, DQNConfig(env_id=ENDLESS, **TINY))
    [message] = [str(w.message) for w in said]
    assert message.startswith(f"max_episode_steps: {ENDLESS!r} is registered without an episode cap") and (
        f"cut after {DEFAULT_EPISODE_CAP:,} env steps" in message and "\n" not in message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a cap of its own, or the key set: nothing to say
        preflight(design, DQNConfig(env_id=ENDLESS, max_episode_steps=50, **TINY))
        preflight(design, DQNConfig(**TINY))


def test_a_holdout_env_made_where_no_preflight_ran_has_an_end():
    """The design's own call (a library user) makes the holdout env: an env registered without a
    cap gets the default one there too, so the holdout cannot hang."""
    from architectures.core.envs import DEFAULT_EPISODE_CAP
    from architectures.core.evaluation import HoldoutEvaluator

    evaluator = HoldoutEvaluator(DQNConfig(env_id=ENDLESS, **TINY), None)
    assert evaluator.env.spec.max_episode_steps == DEFAULT_EPISODE_CAP
    evaluator.env.close()
    assert HoldoutEvaluator(DQNConfig(env_id=ENDLESS, **{**TINY, "eval_episodes": 0}), None).env is None  # no holdout


@pytest.mark.parametrize("design", DESIGNS)
def test_an_env_that_never_ends_is_cut_at_max_episode_steps_in_training_and_on_the_holdout(design):
    result = get_train_fn(design)(DQNConfig(env_id=ENDLESS, max_episode_steps=50, **TINY), None)
    assert result["env_steps"] == TINY["total_env_steps"]
    assert result["holdout_truncated"] == [TINY["eval_episodes"]] * 2  # each holdout episode cut, and counted
    # training episodes end at the cap too: every env's steps in whole episodes of 50, but for the one
    # each env has under way (vector_env's envs step as they are ready, so their shares differ)
    workers = TINY["num_workers"] if design in ("actor_learner", "hogwild", "vector_env", "pqn") else 1
    assert TINY["total_env_steps"] // 50 - workers < result["episodes"] <= TINY["total_env_steps"] // 50


def test_an_env_registered_without_a_cap_trains_from_the_command_and_its_cap_is_recorded(tmp_path):
    """MinAtar registers its games without a cap; `MinAtar/Asterix-v1`, as MinAtar's docs name it,
    trains, says the default cap once and records it."""
    store = tmp_path / "runs"
    proc = _train(["with", "env_id=MinAtar/Asterix-v1", *CLI_TINY, "-F", str(store)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = [line for line in proc.stderr.splitlines() if "registered without an episode cap" in line]
    assert len(said) == 1 and said[0].startswith("warning: max_episode_steps: 'MinAtar/Asterix-v1'"), said
    [folder] = _run_folders(store)
    result = json.load(open(store / folder / "run.json"))["result"]
    assert (result["episode_cap"], result["episode_cap_source"]) == (108_000, "default")


# ---------------------------------------------------------------------- an env that raises
WHERE = {"single_env": "the main process", "high_utd": "the main process", "actor_learner": r"actor \d, pid \d+",
         "hogwild": r"worker \d, pid \d+", "vector_env": r"env \d, pid \d+", "pqn": r"env \d, pid \d+"}
"""The process each design steps its envs in, as the error names it."""
WHEN = {"StepRaises-v0": f"its env step {RAISES_AT}: RuntimeError: {RAISED} \\(at step {RAISES_AT}\\)",
        "ResetRaises-v0": f"reset, after 0 env steps: OSError: {RAISED}: cannot reset"}


@pytest.mark.parametrize("design, env", [(d, e) for d in DESIGNS for e in WHEN])
def test_an_env_that_raises_ends_the_run_in_one_line_naming_env_process_step_and_message(design, env):
    assert set(WHERE) == set(DESIGNS)  # a new design says where its envs run
    with pytest.raises(EnvFailed) as caught:
        get_train_fn(design)(DQNConfig(env_id=f"tests.fault_envs:{env}", **TINY), None)
    message = str(caught.value)
    assert re.fullmatch(rf"env tests\.fault_envs:{env} \({WHERE[design]}\) raised in {WHEN[env]}", message), message
    assert "in fault" in "".join(traceback.format_exception(caught.value)) or env != "StepRaises-v0"  # the env's frame
    assert_clean()


@pytest.mark.parametrize("design", ["single_env", "actor_learner", "vector_env"])  # main, spawned, AsyncVectorEnv
def test_an_env_that_raises_prints_one_line_and_its_traceback_goes_to_the_record(tmp_path, design):
    store = tmp_path / "runs"
    proc = _train(["with", design, "env_id=tests.fault_envs:StepRaises-v0", *CLI_TINY, "-F", str(store)])
    assert proc.returncode == 1, proc.stderr[-2000:]
    [line] = _errors(proc.stderr)
    assert re.fullmatch(rf"error: env tests\.fault_envs:StepRaises-v0 \({WHERE[design]}\) raised in "
                        rf"{WHEN['StepRaises-v0']}", line), line
    assert "Traceback" not in proc.stderr
    [folder] = _run_folders(store)
    run = json.load(open(store / folder / "run.json"))
    trace = "".join(run["fail_trace"])
    assert run["status"] == "FAILED" and f"raise RuntimeError(f\"{{RAISED}}" in trace  # the env's own frame
    assert_clean()


@pytest.mark.parametrize("fault, said", [
    ("1:crash:100", r"actor 1 \(pid \d+\) raised RuntimeError: injected crash \(PDQN_FAULT\) after [\d,]+ env steps"),
    ("0:kill:100", r"actor 0 \(pid \d+\) was killed by SIGKILL after [\d,]+ env steps"),
])
def test_a_worker_that_raises_or_dies_is_one_line_too(tmp_path, fault, said):
    """The faults table's 'a worker': it printed Sacred's traceback of the WorkerFailed."""
    store = tmp_path / "runs"
    proc = _train(["with", "actor_learner", *CLI_TINY, "-F", str(store)], PDQN_FAULT=fault)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    [line] = _errors(proc.stderr)
    assert re.fullmatch(f"error: {said}", line), line
    assert_clean()


# ---------------------------------------------------------------------- Ctrl-C
def test_ctrl_c_on_a_run_is_one_line_saying_what_was_kept_and_how_to_resume(tmp_path):
    store, checkpoint = tmp_path / "runs", tmp_path / "run.pt"
    proc = subprocess.Popen([sys.executable, "-m", "experiments.train", "with", *CLI_TINY, "total_env_steps=10000000",
                             "eval_every=5000000", "checkpoint_every=300", f"checkpoint_path={checkpoint}",
                             "-F", str(store)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env={**os.environ, "PYTHONPATH": ROOT},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as from a terminal
    deadline = time.monotonic() + 60
    while not checkpoint.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr[-2000:]
    [line] = _errors(stderr)
    assert line == (f"error: interrupted (Ctrl-C): the run's record is kept as INTERRUPTED ({store / '1'}), and its "
                    f"last checkpoint '{checkpoint}'; run the same command again to resume from it")
    assert json.load(open(store / "1" / "run.json"))["status"] == "INTERRUPTED"


# ---------------------------------------------------------------------- a full disk
def test_a_disk_that_fills_mid_run_fails_the_run_and_leaves_whole_records(small_disk):
    store = small_disk / "runs"
    proc = _train(["with", "env_id=tests.fault_envs:FillsDisk-v0", *CLI_TINY, "total_env_steps=1500",
                   "-F", str(store)], PDQN_TEST_FILL=str(small_disk))
    assert proc.returncode == 1, proc.stderr[-2000:]
    [line] = _errors(proc.stderr)
    assert f"the run store '{store}' could not be written (No space left on device)" in line
    assert "Traceback" not in proc.stderr
    _no_leftovers(store)
    [folder] = _run_folders(store)
    assert json.load(open(store / folder / "run.json"))["status"] != "COMPLETED"  # never a success


def test_a_run_on_a_full_disk_is_refused_before_it_is_recorded(small_disk, forked):
    _fill(small_disk)
    store = small_disk / "runs"
    proc = _refused(forked, ["with", *CLI_TINY, "-F", str(store)])
    assert proc.returncode == 2, proc.stderr[-2000:]
    [line] = _errors(proc.stderr)
    assert line.startswith(f"error: the run store: '{store}' has") and "the run needs" in line
    assert not _run_folders(store)


def test_a_failed_checkpoint_save_removes_its_temp_file(small_disk):
    path = str(small_disk / "run.pt")
    save_checkpoint(path, {"format": CHECKPOINT_FORMAT, "weights": torch.zeros(10)})
    before = open(path, "rb").read()
    with pytest.raises(CheckpointSaveFailed, match="No space left on device"):
        save_checkpoint(path, {"format": CHECKPOINT_FORMAT, "replay": torch.zeros(2_000_000)})  # 8 MB
    assert not os.path.exists(f"{path}.tmp") and open(path, "rb").read() == before


def test_a_record_that_cannot_be_written_keeps_the_last_whole_one(small_disk):
    path = str(small_disk / "run.json")
    atomic_write(path, b'{"status": "RUNNING"}')
    with pytest.raises(OSError):
        atomic_write(path, b"x" * (8 * 2**20))
    assert json.load(open(path)) == {"status": "RUNNING"}
    assert os.listdir(small_disk) == ["run.json"]


def test_a_source_snapshot_left_empty_is_copied_again(tmp_path):
    from sacred.dependencies import get_digest

    store = tmp_path / "runs"
    source = os.path.join(ROOT, "experiments", "train.py")
    (store / "_sources").mkdir(parents=True)
    empty = store / "_sources" / f"train_{get_digest(source)}.py"
    empty.write_bytes(b"")  # what a run started on a full disk left
    proc = _train(["with", *CLI_TINY, "-F", str(store)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert empty.read_bytes() == open(source, "rb").read()


# ---------------------------------------------------------------------- the report on a full disk
REPORT_RESULT = {"architecture": "single_env", "env_steps": 3_000, "env_steps_per_sec": 1_000.0, "train_seconds": 3.0,
                 "final_holdout_return": 100.0, "holdout_curve": [{"env_steps": 1_000, "return_mean": 50.0},
                                                                  {"env_steps": 3_000, "return_mean": 100.0}]}


def _report_store(folder, runs: int) -> str:
    from tests.synthetic_runs import write_run

    for seed in range(1, runs + 1):
        write_run(os.path.join(folder, "architectures"), f"architectures-{seed}", {"seed": seed},
                  {**REPORT_RESULT, "final_holdout_return": 100.0 * seed})
    return str(folder)


@pytest.fixture(scope="module")
def good_report(tmp_path_factory):
    """A whole report of two runs, built once; each case copies it onto its small disk."""
    from analysis import report as report_mod

    root = tmp_path_factory.mktemp("report")
    report_mod.build([_report_store(root / "store", 2)], str(root / "out"))
    return root / "out"


def _files(folder) -> dict:
    return {os.path.relpath(os.path.join(base, name), folder): open(os.path.join(base, name), "rb").read()
            for base, _, names in os.walk(folder) for name in names}


@pytest.mark.parametrize("free_kb", [0, 24, 96])  # full; room for a few tables; for a figure or two
def test_a_report_on_a_full_disk_stops_in_one_line_and_the_last_report_survives(small_disk, good_report, capsys,
                                                                                free_kb):
    import shutil

    from analysis import report as report_mod

    out = small_disk / "report"
    shutil.copytree(good_report, out)
    before = _files(out)
    store = _report_store(small_disk.parent / "store", 3)  # a third run: every table would change
    _fill(small_disk, leave=free_kb * 1024)
    assert report_mod.main(["--runs", store, "--out", str(out), "--cache", ""]) == 1
    [line] = _errors(capsys.readouterr().err)
    assert line.startswith(f"error: the report in '{out}' could not be written (No space left on device, at ")
    assert line.endswith("nothing of this build was kept and the report there before is as it was")
    assert _files(out) == before  # whole and unchanged: no 0-byte, cut, temp or staged file left


def test_a_report_into_a_new_folder_on_a_full_disk_leaves_nothing(small_disk, tmp_path, capsys):
    from analysis import report as report_mod

    store = _report_store(tmp_path / "store", 2)
    _fill(small_disk)
    assert report_mod.main(["--runs", store, "--out", str(small_disk / "new" / "report"), "--cache", ""]) == 1
    [line] = _errors(capsys.readouterr().err)
    assert "could not be written (No space left on device" in line
    assert sorted(os.listdir(small_disk)) == ["filler"]  # the folders it made are gone again


# ---------------------------------------------------------------------- checkpoints
def _bad_checkpoints(tmp_path) -> dict:
    good = tmp_path / "good.pt"
    stamp = {"format": CHECKPOINT_FORMAT, "architecture": "single_env", "config": DQNConfig(seed=99).to_dict()}
    torch.save({**stamp, "env_steps": 300}, good)
    return {
        "truncated": (good.read_bytes()[:200], "cannot be read as a checkpoint"),
        "random": (np.random.default_rng(0).bytes(4096), "cannot be read as a checkpoint"),
        "empty": (b"", "cannot be read as a checkpoint"),
        "foreign": (None, "is not a checkpoint of this suite"),
        "changed_key": (good.read_bytes(), "belongs to a run with"),
    }


@pytest.mark.parametrize("case", ["truncated", "random", "empty", "foreign", "changed_key", "directory",
                                  "unwritable"])
@pytest.mark.slow
def test_a_checkpoint_the_run_cannot_use_is_one_line_exit_2_and_kept(tmp_path, case, forked):
    store, path = tmp_path / "runs", tmp_path / "ckpt.pt"
    if case == "directory":
        path.mkdir()
        expected = "is a directory; name a file in it"
    elif case == "unwritable":
        path = "/proc/nope/x.pt"
        expected = "cannot write in '/proc/nope'"
    else:
        data, expected = _bad_checkpoints(tmp_path)[case]
        if data is None:
            torch.save({"state_dict": torch.zeros(3)}, path)
        else:
            path.write_bytes(data)
    before = path.read_bytes() if isinstance(path, os.PathLike) and path.is_file() else None
    proc = _refused(forked, ["with", *CLI_TINY, f"checkpoint_path={path}", "checkpoint_every=300", "-F", str(store)])
    assert proc.returncode == 2, proc.stderr[-2000:]
    [line] = _errors(proc.stderr)
    assert line.startswith("error: checkpoint_path:") and expected in line and "delete" not in line
    assert "Traceback" not in proc.stderr and not _run_folders(store)
    if before is not None:
        assert path.read_bytes() == before  # kept as it was


@pytest.mark.slow
def test_a_second_run_on_a_held_checkpoint_stops_naming_the_holder(tmp_path):
    path, store = tmp_path / "run.pt", tmp_path / "runs"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from architectures.run.checkpoint import hold_lock; "
                               "hold_lock(sys.argv[1]); print('held', flush=True); time.sleep(600)", str(path)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT})
    try:
        assert holder.stdout.readline().strip() == "held"
        began = time.monotonic()
        proc = _train(["with", *CLI_TINY, f"checkpoint_path={path}", "checkpoint_every=300", "-F", str(store)])
        assert proc.returncode == 2 and time.monotonic() - began < 30
        [line] = _errors(proc.stderr)
        assert f"is in use by another run (pid {holder.pid})" in line
        assert not _run_folders(store)
    finally:
        holder.send_signal(signal.SIGKILL)  # a death of any kind frees the lock
        holder.wait()
    proc = _train(["with", *CLI_TINY, f"checkpoint_path={path}", "checkpoint_every=300", "-F", str(store)])
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_an_unknown_named_config_is_one_line_exit_2(tmp_path, forked):
    proc = _refused(forked, ["with", "cartpol", "seed=3", "-F", str(tmp_path / "runs")])
    assert proc.returncode == 2
    [line] = _errors(proc.stderr)
    assert "'cartpol': unknown named config (valid: cartpole," in line and "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()
