"""Checkpoint and resume for every architecture: a run whose whole process group is SIGKILLed
mid-run, started again with the same command, ends COMPLETED with the exact env-step and update
counts, each holdout checkpoint once, epsilon continued, and nothing left behind.

Also: high_utd resumes bit for bit (as single_env does, tests/test_single_env.py), a checkpoint
of another run is refused, a killed sweep resumes its parallel run, and designs that map shared
memory refuse, in one line and before any work, a run that /dev/shm cannot hold.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from architectures.core.config import ConfigError, DQNConfig
from experiments.tracking.configs import algorithm_values
from architectures.core.envs import env_spec
from architectures.core.schedules import EpsilonSchedule, UpdateRatio
from architectures.designs import high_utd, hogwild
from architectures.designs.actor_learner import local as actor_learner
from architectures.registry import NAMES
from architectures.run.acting import actor_epsilon
from architectures.run.sync_points import stops, worker_quota
from tests.test_actor_learner import alive, descendants
from tests.test_single_env import KillAt, Recorder, Killed, untimed
from tests.test_sweep import statuses

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOTAL, EVAL_EVERY, SAVE_EVERY = 6_000, 2_000, 1_000  # three holdouts, the first save well before the end
RUN = dict(total_env_steps=TOTAL, eval_every=EVAL_EVERY, eval_episodes=2, checkpoint_every=SAVE_EVERY,
           learning_starts=500, eps_decay_steps=20_000, buffer_size=6_000, batch_size=32, hidden_sizes=[32, 32],
           log_every=1_000, target_update_period=50, num_workers=2, worker_timeout_s=30.0)
DESIGNS = {  # name: (named configs, overrides): every design in the registry, and variants of two
    **{name: (("cartpole", name), {"utd": 1.0, "reset_period": 1_500} if name == "high_utd" else {}) for name in NAMES},
    "hogwild_shared_replay": (("cartpole", "hogwild"), {"hogwild_replay": "shared", "optimizer_state": "per_worker"}),
    "actor_learner_free": (("cartpole", "actor_learner"), {"actor_quotas": "free", "slow_worker_cost_us": 200.0}),
}


def _command(named, overrides, checkpoint, out) -> list[str]:
    values = {**RUN, **overrides, "checkpoint_path": str(checkpoint)}
    args = [f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in values.items()]
    return [sys.executable, "-m", "experiments.train", "with", *named, *args, "-F", str(out), "-l", "WARNING"]


def _mapped_by(pids: list[int]) -> set[str]:
    """The names in /dev/shm (shared-memory segments, named semaphores) that processes `pids` map now:
    what a killed run must leave nothing of. Judged by name, not by a look at all of /dev/shm, where
    the test beside this one (pytest -n 2) and any other run on the machine make and free their own."""
    names = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                names.update(line.rsplit("/dev/shm/", 1)[1].split()[0] for line in f
                             if "/dev/shm/" in line and not line.rstrip().endswith("(deleted)"))
        except OSError:  # gone meanwhile
            continue
    return names


def _saved_steps(checkpoint) -> int:
    import torch

    return int(torch.load(checkpoint, weights_only=False)["env_steps"])


def kill_mid_run_and_resume(tmp_path, named, overrides, timeout=150, on_resume=None):
    """Start the run, SIGKILL its process group once a checkpoint exists, start it again (with
    `on_resume` overrides, which checkpoint.MAY_DIFFER allows); returns (the resumed run's
    run.json, its metrics, the processes alive at the kill)."""
    out, checkpoint = tmp_path / "runs", tmp_path / "run.pt"
    cmd = _command(named, overrides, checkpoint, out)
    first = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + timeout
    while not checkpoint.exists():
        assert first.poll() is None, first.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.02)
    processes = [first.pid, *descendants(first.pid)]
    theirs = _mapped_by(processes)  # all of it must be gone once the run is
    os.killpg(first.pid, signal.SIGKILL)  # the whole group: learner, workers, env processes, trackers
    first.wait(timeout=10)
    assert checkpoint.exists()
    saved = _saved_steps(checkpoint)
    assert SAVE_EVERY <= saved < TOTAL  # killed after a checkpoint, before the end
    again = _command(named, {**overrides, **(on_resume or {})}, checkpoint, out)
    second = subprocess.run(again, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert second.returncode == 0, second.stderr[-3000:]
    runs = sorted((p for p in out.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    with open(runs[-1] / "run.json") as f:
        run = json.load(f)
    with open(runs[-1] / "metrics.json") as f:
        metrics = json.load(f)
    with open(runs[-1] / "config.json") as f:
        run["config"] = json.load(f)
    with open(runs[-1] / "info.json") as f:
        run["info"] = json.load(f)
    assert run["result"]["resumed_from_env_steps"] == saved
    deadline = time.monotonic() + 10
    while True:  # judged on one reading
        left, leaked = alive(processes), {name for name in theirs if os.path.exists(f"/dev/shm/{name}")}
        if not (left or leaked) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left == [], "a process of the killed run outlived it"
    assert leaked == set(), f"the killed run left shared memory behind: {sorted(leaked)}"
    assert not checkpoint.exists()  # the finished run removed it
    return run, metrics


def _expected_updates(name: str, cfg: DQNConfig) -> int:
    if name == "pqn":  # every rollout that ends at or past learning_starts, in epochs of minibatches
        per_rollout = cfg.rollout_steps * cfg.num_workers
        ends = [min(TOTAL, per_rollout * k) for k in range(1, -(-TOTAL // per_rollout) + 1)]
        return sum(end >= cfg.learning_starts for end in ends) * cfg.rollout_epochs * cfg.rollout_minibatches
    return UpdateRatio(cfg.utd, cfg.learning_starts).target_updates(TOTAL)  # hogwild's workers too, exactly


def _expected_epsilons(name: str, cfg: DQNConfig, saved: int) -> list[float]:
    if name in ("single_env", "high_utd", "vector_env", "pqn", "actor_learner_free"):  # the run's env-step count
        schedule = EpsilonSchedule(cfg.eps_start, cfg.eps_end, cfg.eps_decay_steps)
        return [schedule(saved)] * (1 if name in ("single_env", "high_utd") else cfg.num_workers)
    return [actor_epsilon(cfg, i)(worker_quota(saved, cfg.num_workers, i)) for i in range(cfg.num_workers)]


RESUMED_WITH = {"actor_learner": {"checkpoint_every": 1_500}, "hogwild_shared_replay": {"checkpoint_every": 0}}
"""Resumed with another checkpoint period (checkpoint.MAY_DIFFER): the sync points are rebuilt from the
resumed config and the next one found by env steps (saved at 1,000 or 3,000 every 1,000: resumed
every 1,500 it stops next at 1,500 or 4,500; with saves off, only at the holdouts), never skipping
a holdout checkpoint. actor_learner's per-stop quotas are the case where the stops matter most."""


@pytest.mark.parametrize("name", list(DESIGNS))
@pytest.mark.slow
def test_a_run_killed_whole_resumes_with_exact_counts_and_nothing_left_behind(tmp_path, name):
    named, overrides = DESIGNS[name]
    run, metrics = kill_mid_run_and_resume(tmp_path, named, overrides, on_resume=RESUMED_WITH.get(name))
    cfg = DQNConfig.from_dict({k: v for k, v in algorithm_values(run["config"]).items() if k != "seed"})
    result = run["result"]
    assert run["status"] == "COMPLETED"
    assert result["env_steps"] == TOTAL
    assert result["updates"] == _expected_updates(name, cfg)  # realised UTD exact across the kill
    checkpoints = [EVAL_EVERY, 2 * EVAL_EVERY, TOTAL]
    assert [h["env_steps"] for h in run["info"]["holdout"]] == checkpoints  # each once, in order
    assert [c["env_steps"] for c in result["holdout_curve"]] == checkpoints
    assert metrics["holdout_return_mean"]["steps"] == checkpoints
    saved = result["resumed_from_env_steps"]
    assert result["epsilon_at_resume"] == pytest.approx(_expected_epsilons(name, cfg, saved))
    assert max(result["epsilon_at_resume"]) < cfg.eps_start  # exploration did not start over
    # Checkpoints at episode ends drop nothing; mid-episode ones drop at most n - 1 starts per env.
    limit = 0 if name in ("single_env", "high_utd") else cfg.num_workers * (cfg.n_step - 1)
    assert 0 <= result["dropped_on_resume"] <= limit
    assert result["checkpoints_written"] >= 1  # the count carries across the resume
    # this process's time saving: none where the resume turned saves off (RESUMED_WITH), so none was written
    assert (result["checkpoint_seconds"] > 0) == (cfg.checkpoint_every > 0)


@pytest.mark.slow
def test_actor_learner_on_ray_resumes_after_a_group_kill(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (optional extra): pip install -e '.[ray]'")
    run, _ = kill_mid_run_and_resume(tmp_path, ("cartpole", "actor_learner"), {"backend": "ray"}, timeout=240)
    result = run["result"]
    assert run["status"] == "COMPLETED" and result["backend"] == "ray"
    assert result["env_steps"] == TOTAL and result["updates"] == (TOTAL - 500) // 4
    assert [h["env_steps"] for h in run["info"]["holdout"]] == [EVAL_EVERY, 2 * EVAL_EVERY, TOTAL]
    assert max(result["epsilon_at_resume"]) < 1.0


@pytest.mark.slow
def test_high_utd_resumes_bit_for_bit(tiny_cfg, tmp_path):
    cfg = tiny_cfg.replace(total_env_steps=2_000, eval_every=500, checkpoint_every=300, utd=2.0, reset_period=400,
                           checkpoint_path=str(tmp_path / "run.pt"))
    whole = Recorder()
    expected = high_utd.train(cfg.replace(checkpoint_path=str(tmp_path / "other.pt")), whole)
    with pytest.raises(Killed):
        high_utd.train(cfg, KillAt(1_400))
    resumed = Recorder()
    got = high_utd.train(cfg, resumed)
    for key in ("env_steps", "updates", "episodes", "holdout_curve", "resets", "max_abs_q", "diverged"):
        assert got[key] == expected[key], key
    assert untimed(resumed.holdouts) == untimed(whole.holdouts)
    # Every loss, |Q| and gradient norm logged after the resume is the uninterrupted run's.
    after = [(n, s, v) for n, v, s in resumed.scalars if n in ("td_loss", "q_max_abs", "grad_norm")]
    everything = {(n, s): v for n, v, s in whole.scalars}
    assert after and all(everything[(n, s)] == v for n, s, v in after)
    assert 0 < got["resumed_from_env_steps"] < 2_000


def test_a_checkpoint_of_another_run_is_refused_naming_the_key(tiny_cfg, tmp_path):
    from architectures.designs.single_env import train

    cfg = tiny_cfg.replace(total_env_steps=2_000, checkpoint_every=300, checkpoint_path=str(tmp_path / "run.pt"))
    with pytest.raises(Killed):
        train(cfg, KillAt(1_000))
    with pytest.raises(ConfigError, match=r"checkpoint_path: .* belongs to a run with lr=0.0005 \(this run has 0.001\)"):
        train(cfg.replace(lr=1e-3))
    with pytest.raises(ConfigError, match="was written by single_env, not high_utd"):
        high_utd.train(cfg)
    assert train(cfg.replace(worker_timeout_s=5.0))["resumed_from_env_steps"] > 0  # supervision may change


def test_a_checkpoint_from_before_every_state_was_a_run_part_is_refused_in_one_line(tiny_cfg, tmp_path):
    """Format 2 kept a design's own state in `extras`, which no design reads any more: such a file is
    refused, saying why and what to do, never half-restored."""
    import torch

    from architectures.designs.single_env import train
    from architectures.run.checkpoint import CHECKPOINT_FORMAT

    cfg = tiny_cfg.replace(total_env_steps=2_000, checkpoint_every=300, checkpoint_path=str(tmp_path / "run.pt"))
    with pytest.raises(Killed):
        train(cfg, KillAt(1_000))
    saved = torch.load(cfg.checkpoint_path, weights_only=False)
    assert saved["format"] == CHECKPOINT_FORMAT == 3 and "extras" not in saved and "actor" in saved["parts"]
    torch.save({**saved, "format": 2, "extras": {"actor": saved["parts"].pop("actor")}}, cfg.checkpoint_path)
    with pytest.raises(ConfigError) as err:
        train(cfg)
    assert str(err.value) == (f"checkpoint_path: {cfg.checkpoint_path!r} has checkpoint format 2, this suite writes 3; "
                              "move it aside to start the run afresh")


def test_stops_are_every_holdout_checkpoint_and_every_save():
    cfg = DQNConfig(total_env_steps=10_000, eval_every=4_000, checkpoint_every=3_000, checkpoint_path="unused.pt")
    got = [(s.env_steps, s.evaluate, s.save) for s in stops(cfg)]
    assert got == [(3_000, False, True), (4_000, True, False), (6_000, False, True), (8_000, True, False),
                   (9_000, False, True), (10_000, True, False)]  # no save at the end: the run is done


TINY_PARALLEL = dict(total_env_steps=6_000, eval_every=2_000, eval_episodes=2, learning_starts=500, hidden_sizes=[16],
                     buffer_size=4_000, batch_size=16, log_every=1_000, checkpoint_every=1_000, num_workers=2)
PARALLEL_SWEEP = (
    "import sys; from experiments.sweeps.catalog import SWEEPS, Sweep, Cell; "
    "SWEEPS['tiny'] = Sweep('tiny', 'two tiny actor_learner runs', {'small': 0.3, 'paper': 0.3}, "
    f"{{'small': [Cell(('cartpole', 'actor_learner'), {TINY_PARALLEL!r})], 'paper': []}}, {{'small': 2, 'paper': 1}}); "
    "from experiments.sweep import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.slow
def test_a_killed_sweep_resumes_its_parallel_run_from_the_checkpoint(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", PARALLEL_SWEEP, "tiny", "--out", str(out)]
    first = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = statuses(out, polling=True) if out.exists() else {}
        running = [k for k, r in found.items() if r["status"] == "RUNNING"]
        if running and (out / "_checkpoints" / f"{running[0]}.pt").exists():
            break
        time.sleep(0.02)
    else:
        os.killpg(first.pid, signal.SIGKILL)
        pytest.fail("the sweep's first run wrote no checkpoint")
    os.kill(first.pid, signal.SIGKILL)  # the sweep alone: its run dies with it (PR_SET_PDEATHSIG)
    first.wait()
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert second.returncode == 0, second.stderr[-3000:]
    found = statuses(out)
    assert len(found) == 2 and all(r["status"] == "COMPLETED" for r in found.values())
    resumed = found[running[0]]["result"]
    assert resumed["resumed_from_env_steps"] >= 1_000 and resumed["env_steps"] == 6_000
    assert resumed["updates"] == (6_000 - 500) // 4


# ---------------------------------------------------------------------- shared memory that cannot fit
@pytest.mark.parametrize("module, overrides, parts", [
    (actor_learner, dict(num_workers=2), {"rings", "weights", "status", "locks"}),
    (hogwild, dict(hogwild_replay="shared"), {"shared replay", "networks", "adam state", "status", "locks"}),
])
@pytest.mark.slow
def test_the_predicted_need_is_what_the_blocks_take(monkeypatch, module, overrides, parts):
    """The need checked before the run is computed from the same layouts the run allocates."""
    from architectures.transport import shared

    cfg = DQNConfig(hidden_sizes=(32, 32), buffer_size=3_000, total_env_steps=500, learning_starts=100,
                    eval_episodes=0, **overrides)
    allocated = []
    original = shared.SharedBlocks.close

    def record_close(self):
        allocated.append(self.nbytes)
        original(self)

    monkeypatch.setattr(shared.SharedBlocks, "close", record_close)
    module.train(cfg)
    spec = env_spec(cfg.env_id)
    shapes = [(32, 4), (32,), (32, 32), (32,), (2, 32), (2,)]
    needs = module.shared_memory_needs(cfg, spec, shapes)
    assert set(needs) == parts
    ours = sum(v for k, v in needs.items() if k not in ("locks", "networks", "adam state"))
    assert allocated == [ours]


def test_a_need_above_the_free_space_is_one_line_naming_need_space_and_ways_out(monkeypatch):
    from architectures.transport import shared

    monkeypatch.setattr(shared, "shm_free_bytes", lambda path=shared.SHM_DIR: 64 * 2**20)
    cfg = DQNConfig(env_id="MinAtar/Breakout-v1", hidden_sizes=(128,), buffer_size=100_000, num_workers=2,
                    hogwild_replay="shared")
    with pytest.raises(ConfigError) as info:
        hogwild.preflight(cfg)
    text = str(info.value)
    assert "\n" not in text and text.startswith("shared memory: hogwild with 2 worker(s)")
    assert "shared replay" in text and "64.0 MB is free" in text
    for way_out in ("buffer_size", "num_workers", "--shm-size"):
        assert way_out in text


def _in_small_tmpfs(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "--mount", "sh", "-c",
                           f"mount -t tmpfs -o size=32m tmpfs /dev/shm && exec {command}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def _can_mount_tmpfs() -> str | None:
    try:
        probe = _in_small_tmpfs("true")
    except (FileNotFoundError, subprocess.TimeoutExpired) as err:
        return f"cannot run unshare: {err}"
    return None if probe.returncode == 0 else f"mounting a tmpfs is not allowed here: {probe.stderr.strip()[:200]}"


MINATAR = "--env_id MinAtar/Breakout-v1 --hidden_sizes [128] --total_env_steps 20000 --eval_episodes 0"


@pytest.mark.parametrize("command", [
    f"-m architectures hogwild {MINATAR} --hogwild_replay shared --buffer_size 100000",  # the replay: 83 MB
    f"-m architectures actor_learner {MINATAR} --num_workers 12",  # twelve 3.4 MB rings
    "-m experiments.train with minatar_breakout hogwild hogwild_replay=shared -F {out}",  # Sacred records nothing
])
@pytest.mark.slow
def test_in_a_32mb_shm_a_minatar_run_that_cannot_fit_stops_before_any_work(tmp_path, command):
    reason = _can_mount_tmpfs()
    if reason:
        pytest.skip(reason)
    out = tmp_path / "runs"
    proc = _in_small_tmpfs(f"{sys.executable} {command.format(out=out)}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: shared memory:") and "is free" in last and "--shm-size" in last
    assert "Bus error" not in proc.stderr and "leaked" not in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists() or not any(p.name.isdigit() for p in out.iterdir())
