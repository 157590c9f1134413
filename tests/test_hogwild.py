"""hogwild: shared parameters, the lock switch, which Adam state is in force, the shared replay,
and failures."""

import math
import os
import signal
import subprocess
import sys
import time

import pytest

from architectures.core import limits
from architectures.core.config import ConfigError
from architectures.core.metrics import NullReporter
from architectures.designs import hogwild
from architectures.transport.shared import leaked_segments
from architectures.transport.workers import FAULT_ENV, WorkerFailed
from tests.test_actor_learner import ROOT, alive, assert_clean, descendants, small_cfg


@pytest.mark.parametrize("utd, workers, learning_starts", [(0.25, 2, 500), (0.25, 3, 1_000), (1.0, 4, 7), (4.0, 2, 0),
                                                        (0.3, 3, 250), (2.5, 5, 13)])
def test_the_workers_updates_add_up_to_the_runs_exactly(utd, workers, learning_starts):
    """At every sync point each worker stands at its quota of the env steps, and the updates its
    WorkerShare owes add up to the run's UpdateRatio exactly: each flooring its own share lost up to
    workers - 1 (hogwild made 1,124 of the 1,125 the others made)."""
    from architectures.core.schedules import UpdateRatio, WorkerShare
    from architectures.run.sync_points import worker_quota

    run, stops = UpdateRatio(utd, learning_starts), [*range(1, 600, 7), 5_000, 123_457]  # sync points
    shares = [WorkerShare(utd, learning_starts, workers, i, stops) for i in range(workers)]
    for env_steps in stops:
        owed = [share.target_updates(worker_quota(env_steps, workers, i)) for i, share in enumerate(shares)]
        assert sum(owed) == run.target_updates(env_steps), env_steps
        assert max(owed) - min(owed) <= 1  # every worker learns its share
    for share in shares:  # never owing less after a step than before it
        owed = [share.target_updates(s) for s in range(0, 3_000)]
        assert owed == sorted(owed)


def test_a_run_makes_the_updates_its_utd_says_exactly():
    r = hogwild.train(small_cfg(total_env_steps=5_000, learning_starts=500, eval_every=5_000, eval_episodes=0))
    assert r["updates"] == 1_125 and r["realised_utd"] == 0.25  # (5,000 - 500) / 4, as every other design


@pytest.mark.slow
def test_lock_free_workers_share_one_network_and_their_writes_overlap():
    r = hogwild.train(small_cfg(total_env_steps=4_000, eval_every=2_000))
    assert r["env_steps"] == 4_000 and r["hogwild_lock"] is False and r["hogwild_replay"] == "local"
    assert "replay" not in r["worker_shares"]  # each local replay holds only its own worker's rows
    assert r["realised_utd"] == pytest.approx(0.25, rel=0.02)
    assert sum(r["worker_updates"]) == r["updates"] and min(r["worker_updates"]) > 0
    assert [c["env_steps"] for c in r["holdout_curve"]] == [2_000, 4_000]
    if limits.available_cores() >= 2:  # two workers really run at once only with two cores
        assert r["overlap_fraction"] > 0
    assert r["mean_version_gap"] > 0  # the other worker's updates land while one computes
    # One shared Adam state: it counted every worker's steps (a racy counter may lose a few), and
    # the last worker to finish saw more steps than it took itself.
    assert 0.9 * r["updates"] <= r["shared_adam_steps"] <= r["updates"]
    assert max(r["worker_adam_steps"]) > max(r["worker_updates"])
    assert_clean()


@pytest.mark.slow
def test_the_lock_removes_every_overlap():
    r = hogwild.train(small_cfg(total_env_steps=4_000, eval_every=4_000, hogwild_lock=True))
    assert r["overlap_fraction"] == 0.0
    assert r["shared_adam_steps"] == r["updates"]  # under the lock no step is lost
    assert_clean()


@pytest.mark.slow
def test_per_worker_optimizer_state_is_private_to_each_worker():
    r = hogwild.train(small_cfg(total_env_steps=4_000, eval_every=4_000, optimizer_state="per_worker"))
    assert r["shared_adam_steps"] is None
    assert r["worker_adam_steps"] == [float(u) for u in r["worker_updates"]]  # each counted only its own
    assert_clean()


class _Scalars(NullReporter):
    def __init__(self):
        self.values: dict[str, list[float]] = {}

    def scalar(self, name, value, env_steps):
        self.values.setdefault(name, []).append(value)


@pytest.mark.slow
def test_shared_replay_holds_every_workers_rows_and_learning_stays_finite():
    scalars = _Scalars()
    r = hogwild.train(small_cfg(total_env_steps=4_000, eval_every=4_000, hogwild_replay="shared"), scalars)
    assert r["env_steps"] == 4_000 and r["hogwild_replay"] == "shared"
    assert r["realised_utd"] == pytest.approx(0.25, rel=0.02) and min(r["worker_updates"]) > 0
    assert scalars.values["td_loss"] and all(math.isfinite(v) for v in scalars.values["td_loss"])
    assert math.isfinite(r["final_holdout_return"])
    # The ring (5,000 rows) holds all ~4,000 transitions: each worker wrote half of them.
    replay_shares = r["worker_shares"]["replay"]
    assert sum(replay_shares) == pytest.approx(1.0) and all(abs(s - 0.5) <= 0.01 for s in replay_shares)
    assert r["replay_resampled_rows"] >= 0 and r["replay_write_waits"] >= 0
    assert_clean()


@pytest.mark.parametrize("replay", ["local", "shared"])
def test_prioritized_replay_is_refused_before_starting_anything(replay):
    # Hogwild workers never write priorities back: accepting it would sample uniformly, silently.
    with pytest.raises(ConfigError, match="prioritized: hogwild workers do not update priorities"):
        hogwild.train(small_cfg(hogwild_replay=replay, prioritized=True))
    assert_clean()


@pytest.mark.slow
@pytest.mark.parametrize("replay", ["local", "shared"])
def test_a_crashing_worker_fails_the_run_naming_it(monkeypatch, replay):
    monkeypatch.setenv(FAULT_ENV, "1:crash:500")
    with pytest.raises(WorkerFailed, match=r"worker 1 \(pid \d+\)"):
        hogwild.train(small_cfg(total_env_steps=20_000, worker_timeout_s=5.0, hogwild_replay=replay))
    assert_clean()  # the shared replay's segments too


@pytest.mark.slow
def test_a_killed_main_process_leaves_no_workers_and_no_shared_replay():
    proc = subprocess.Popen([sys.executable, "-m", "architectures", "hogwild", "--num_workers", "2",
                             "--total_env_steps", "2000000", "--eval_episodes", "0", "--hidden_sizes", "[16]",
                             "--hogwild_replay", "shared", "--log_every", "2000"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, text=True)
    try:
        line = proc.stderr.readline()  # the first progress line: the workers are running
        assert "env steps" in line, line
        assert any("_replay_" in name for name in leaked_segments(proc.pid))
        workers = descendants(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # no finally block runs in the main process
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while (alive(workers) or leaked_segments(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(workers) == [] and leaked_segments(proc.pid) == []  # the resource tracker unlinks them
