"""actor_learner and vector_env: behaviour, diagnostics, and what happens when things go wrong.

Each run here is real: spawned actor processes, shared memory, a learner. Sizes are tiny so the
whole file takes well under a minute on 2 cores.
"""

import os
import signal
import subprocess
import sys
import time
import warnings

import pytest

from architectures.core import limits
from architectures.core.config import DQNConfig
from architectures.designs import vector_env
from architectures.designs.actor_learner import local as actor_learner
from architectures.run import acting, sync_points
from architectures.transport import workers
from architectures.transport.shared import leaked_segments
from architectures.transport.workers import FAULT_ENV, WorkerFailed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def small_cfg(**changes) -> DQNConfig:
    base = dict(env_id="CartPole-v1", seed=3, total_env_steps=6_000, hidden_sizes=(32, 32), buffer_size=5_000,
                batch_size=32, learning_starts=500, eps_decay_steps=2_000, eval_every=2_000, eval_episodes=2,
                target_update_period=50, log_every=1_000, num_workers=2, weight_sync_period=5,
                worker_timeout_s=20.0)
    return DQNConfig(**{**base, **changes})


def descendants(pid: int) -> list[int]:
    """Live processes below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    out.append(pid)
        except OSError:
            pass
    return out


SERVICES = ("resource_tracker", "architectures.transport.reaper", "tests/forked_commands.py")
"""Helper processes that live as long as the test process itself, by design (the last, the `forked`
fixture's server, tests/conftest.py)."""


def assert_clean() -> None:
    """No shared-memory segment of this process and no live worker process is left."""
    assert leaked_segments(os.getpid()) == []

    def workers() -> list[int]:
        return alive([p for p in descendants(os.getpid()) if not any(s in cmdline(p) for s in SERVICES)])

    deadline = time.monotonic() + 5
    while workers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers() == []


def cmdline(pid: int) -> str:
    """A process's command line, or empty when it has gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.fixture(scope="module")
def two_worker_run():
    # The replay holds the whole run, so its share counts every transition each actor handed
    # off; with a smaller buffer it is a window whose share swings with scheduling bursts.
    result = actor_learner.train(small_cfg(buffer_size=6_000))
    assert_clean()
    return result


@pytest.mark.slow
def test_utd_holds_on_the_global_step_count(two_worker_run):
    r = two_worker_run
    assert r["env_steps"] == 6_000
    assert r["updates"] == (6_000 - 500) // 4
    assert r["realised_utd"] == pytest.approx(0.25, rel=0.02)


@pytest.mark.slow
def test_every_worker_keeps_receiving_weights(two_worker_run):
    r = two_worker_run
    publishes = r["updates"] // 5
    assert r["weight_publishes"] == publishes
    for version, fetches in zip(r["worker_weights_versions"], r["worker_weight_fetches"]):
        # Each actor picked weights up many times and ended on recent ones. (How recent depends
        # on when it finished its quota: the learner catches up its owed updates, up to
        # utd_slack_steps worth, after the actors stop; the freeze test covers a stalled actor.)
        # How many publications an actor sees depends on scheduling (after a wait it skips to the
        # newest), so the count is only required to show repeated pick-ups. On a slow, loaded
        # machine an actor can finish its quota well before the learner's last update (a CI run
        # saw one end below 0.7 of them), so "recent" is the second half of the run.
        assert version >= 0.5 * r["updates"] and fetches >= 10


@pytest.mark.slow
def test_symmetric_workers_share_the_data_evenly(two_worker_run):
    shares = two_worker_run["worker_shares"]
    # env steps and replay rows are set by each actor's quota: within 10% of 1/N. What the learner sampled
    # also follows when each actor's rows arrived (an earlier row is drawn more often): 0.59 / 0.41 once
    # with another test beside this run (a fresh-clone CI run), so within 20% there; starving is far outside.
    for kind, within in (("env_steps", 0.05), ("replay", 0.05), ("sampled", 0.10)):
        assert len(shares[kind]) == 2
        for share in shares[kind]:
            assert abs(share - 0.5) <= within, (kind, shares[kind])
    assert all(n > 0 for n in two_worker_run["worker_episodes"])


@pytest.mark.slow
def test_holdout_checkpoints_are_exact_and_off_the_clock(two_worker_run):
    r = two_worker_run
    assert [c["env_steps"] for c in r["holdout_curve"]] == [2_000, 4_000, 6_000]
    assert r["eval_seconds"] > 0
    assert r["env_steps_per_sec"] == pytest.approx(r["env_steps"] / r["train_seconds"])


@pytest.mark.slow
def test_diagnostics_name_lag_handoff_and_bottleneck(two_worker_run):
    r = two_worker_run
    lag = r["policy_lag"]
    assert 0 <= lag["p50"] <= lag["p95"] <= lag["max"] and lag["mean"] > 0
    # Staleness at hand-off excludes replay age, so it is the smaller part of the lag.
    assert 0 <= r["acting_staleness"]["mean"] < lag["mean"]
    assert r["handoff_us_per_transition"]["total"] > 0
    assert r["bottleneck"]["role"] in ("learner", "actors")
    assert r["bottleneck"]["summary"].startswith(r["bottleneck"]["role"])
    for role in ("env_step", "act", "n_step", "handoff", "weight_sync", "wait"):
        assert r["actor_time_breakdown"][role]["seconds_per_actor"] >= 0
    assert {"actor_env_step", "actor_act", "actor_handoff", "update"} <= set(r["component_costs_us"])


@pytest.mark.slow
def test_apex_epsilons_and_prioritized_replay_run():
    r = actor_learner.train(small_cfg(total_env_steps=2_000, eval_every=2_000, actor_epsilons="apex",
                                      prioritized=True, learning_starts=300))
    assert r["updates"] == (2_000 - 300) // 4
    assert r["realised_utd"] == pytest.approx(0.25, rel=0.02)
    assert_clean()


def test_apex_epsilons_spread_over_actors():
    cfg = small_cfg(num_workers=4, actor_epsilons="apex")
    eps = [acting.actor_epsilon(cfg, i)(0) for i in range(4)]
    assert eps[0] == pytest.approx(0.4) and eps[-1] == pytest.approx(0.4 ** 8)
    assert eps == sorted(eps, reverse=True)
    sched = acting.actor_epsilon(small_cfg(num_workers=4), 2)
    assert sched(500) == pytest.approx(DQNConfig().eps_start + (0.02 - 1.0) * 2_000 / 2_000)  # global = 4 x 500


@pytest.mark.parametrize("fault, message", [
    ("1:crash:700", "actor 1 (pid"),
    ("0:kill:700", "actor 0 (pid"),
    ("1:freeze_weights:900", "actor 1 (pid"),
    ("0:hang:900", "actor 0 (pid"),
])
@pytest.mark.slow
def test_a_failing_worker_fails_the_run_fast_and_cleanly(monkeypatch, fault, message):
    monkeypatch.setenv(FAULT_ENV, fault)
    start = time.monotonic()
    with pytest.raises(WorkerFailed) as info:
        actor_learner.train(small_cfg(total_env_steps=20_000, worker_timeout_s=3.0))
    text = str(info.value)
    assert message in text
    expected = {"crash": "injected crash", "kill": "SIGKILL", "freeze_weights": "stopped receiving weights",
                "hang": "made no progress"}[fault.split(":")[1]]
    assert expected in text
    assert time.monotonic() - start < 25
    assert_clean()


def _as_from_a_terminal() -> None:
    """A command started from a terminal gets Ctrl-C's SIGINT; one started by a non-interactive
    shell's `&` (a CI step, `nohup ... &`) inherits SIGINT ignored, and this test, run there,
    would measure that instead of the CLI's own handling."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _as_with_and_in_a_script() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a non-interactive shell's `cmd &` leaves a command


def _start_cli(extra: list[str], started=_as_from_a_terminal) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "architectures", "actor_learner", "--num_workers", "2",
                             "--total_env_steps", "2000000", "--eval_episodes", "0", "--hidden_sizes", "[16]",
                             *extra], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True, text=True, preexec_fn=started)


def _wait_running(proc: subprocess.Popen) -> list[int]:
    line = proc.stderr.readline()  # the first progress line: actors are running
    assert "env steps" in line, line
    return descendants(proc.pid)


@pytest.mark.slow
@pytest.mark.parametrize("started", [_as_from_a_terminal, _as_with_and_in_a_script],
                         ids=["from a terminal", "with & in a script"])
def test_ctrl_c_stops_everything_and_leaves_no_shared_memory(started):
    """Also where the run was started with SIGINT ignored, as `cmd &` in a script starts it: a
    `kill -INT` to the group still stops the run and its workers."""
    proc = _start_cli(["--log_every", "2000"], started=started)
    try:
        workers = _wait_running(proc)
        assert len(workers) >= 2
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _, rest = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "Traceback" not in rest, rest[-2000:]  # one line, saying what is kept
    assert [line for line in rest.splitlines() if line.startswith("error:")] == [
        "error: interrupted (Ctrl-C); nothing is recorded without tracking (its checkpoint, if checkpoint_path was "
        "set, is kept: the same command resumes from it)"]
    deadline = time.monotonic() + 5
    while alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(workers) == []
    assert leaked_segments(proc.pid) == []


@pytest.mark.slow
def test_a_killed_learner_leaves_no_orphans_and_no_shared_memory():
    proc = _start_cli(["--log_every", "2000"])
    try:
        workers = _wait_running(proc)
        os.kill(proc.pid, signal.SIGKILL)  # the learner dies without any cleanup of its own
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while (alive(workers) or leaked_segments(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(workers) == []  # actors notice their parent is gone
    assert leaked_segments(proc.pid) == []  # the resource tracker unlinks what the learner left


def test_too_many_workers_warns_naming_the_cores(monkeypatch):
    monkeypatch.setattr(limits, "available_cores", lambda: 2)
    with pytest.warns(RuntimeWarning, match="num_workers=3 .* on 2 CPU cores"):
        workers.warn_if_oversubscribed(3, "actor processes plus one learner")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        workers.warn_if_oversubscribed(2, "actor processes plus one learner")


@pytest.mark.parametrize("total, workers", [(10, 3), (6_000, 2), (7, 7), (5, 8)])
def test_worker_quotas_sum_to_the_total(total, workers):
    quotas = [sync_points.worker_quota(total, workers, i) for i in range(workers)]
    assert sum(quotas) == total and max(quotas) - min(quotas) <= 1


# ---------------------------------------------------------------------- vector_env
@pytest.mark.alone
@pytest.mark.slow
def test_vector_env_paces_updates_and_shares_evenly():
    result = vector_env.train(small_cfg())
    assert result["env_steps"] == 6_000
    assert result["realised_utd"] == pytest.approx(0.25, rel=0.02)
    assert [c["env_steps"] for c in result["holdout_curve"]] == [2_000, 4_000, 6_000]
    for kind in ("replay", "sampled"):
        shares = result["worker_shares"][kind]
        assert all(abs(s - 0.5) <= 0.05 for s in shares), (kind, shares, result["worker_shares"])
    assert result["bottleneck"]["role"] in ("learner", "envs")
    assert_clean()


def test_vector_env_evaluates_on_the_exact_env_step_whatever_its_env_count():
    """Envs are sent no further than the next holdout: with 3 envs, 1,000 is no multiple of a vector
    step, and the holdout still falls on it (lockstep stepping overshot it by up to 2)."""
    with pytest.warns(RuntimeWarning, match="CPU cores") if limits.available_cores() < 3 else (
            warnings.catch_warnings()):
        result = vector_env.train(small_cfg(num_workers=3, total_env_steps=2_000, eval_every=1_000))
    assert [c["env_steps"] for c in result["holdout_curve"]] == [1_000, 2_000] and result["env_steps"] == 2_000
    assert_clean()
