"""Faults a run meets besides a kill: a full disk, non-finite values, a shared or bad checkpoint,
an unknown named config. Each ends with a non-zero exit code and one line, and leaves nothing
half-written (issue 20). The disk cases run on a small tmpfs, skipped where mounting is not
allowed; the bad envs come from tests/fault_envs.py."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from architectures import get_train_fn
from architectures.core.config import DQNConfig
from architectures.core.errors import CheckpointSaveFailed, NonFiniteEnvValue, RunDiverged
from architectures.registry import NAMES
from architectures.run.checkpoint import CHECKPOINT_FORMAT, save_checkpoint
from experiments.store import atomic_write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DESIGNS = list(NAMES)  # every design in the registry: a new one is tested here without a line of its own
TINY = dict(total_env_steps=1_500, eval_every=1_000, eval_episodes=2, learning_starts=200, hidden_sizes=(16,),
            buffer_size=1_500, batch_size=16, log_every=250, num_workers=2, worker_timeout_s=30.0)
CLI_TINY = ["total_env_steps=600", "learning_starts=100", "eval_every=300", "eval_episodes=2", "hidden_sizes=[16]",
            "batch_size=16", "log_every=100"]


def _train(args, timeout=120, **env):
    return subprocess.run([sys.executable, "-m", "experiments.train", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": ROOT, **env})


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


def _fill(folder) -> None:
    try:
        with open(os.path.join(folder, "filler"), "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
    except OSError:
        pass


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
    assert err.update >= 1 and err.env_steps >= TINY["learning_starts"] and "non-finite TD loss" in err.reason
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


def test_a_run_on_a_full_disk_is_refused_before_it_is_recorded(small_disk):
    _fill(small_disk)
    store = small_disk / "runs"
    proc = _train(["with", *CLI_TINY, "-F", str(store)])
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
def test_a_checkpoint_the_run_cannot_use_is_one_line_exit_2_and_kept(tmp_path, case):
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
    proc = _train(["with", *CLI_TINY, f"checkpoint_path={path}", "checkpoint_every=300", "-F", str(store)])
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


def test_an_unknown_named_config_is_one_line_exit_2(tmp_path):
    proc = _train(["with", "cartpol", "seed=3", "-F", str(tmp_path / "runs")])
    assert proc.returncode == 2
    [line] = _errors(proc.stderr)
    assert "'cartpol': unknown named config (valid: cartpole," in line and "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()
