"""actor_learner with backend=ray, and sweeps through `--ray`: behaviour, diagnostics, failures.

Every test shares one Ray instance the module starts itself (`ray.init(num_cpus=2)`) and shuts
down at the end. Skipped, with the reason shown, where Ray is not installed.
"""

import os
import re
import subprocess
import sys
import time

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (optional extra): pip install -e '.[ray]'")

from architectures.core.config import ConfigError, DQNConfig  # noqa: E402
from architectures.core.evaluation import checkpoint_steps  # noqa: E402
from architectures.core.metrics import NullReporter  # noqa: E402
from architectures.designs.actor_learner.ray_backend import train as train_on_ray  # noqa: E402
from architectures.transport import ray_support  # noqa: E402
from architectures.transport.workers import FAULT_ENV, WorkerFailed  # noqa: E402
from tests.test_sweep import statuses  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = dict(total_env_steps=2_000, eval_every=1_000, eval_episodes=2, learning_starts=300, hidden_sizes=[16],
            buffer_size=2_000, batch_size=16, log_every=500)
TWO_RUN_SWEEP = (
    "import sys; from experiments.sweeps.catalog import SWEEPS, Sweep, Cell; "
    "SWEEPS['tiny'] = Sweep('tiny', 'two tiny single_env runs', {'small': 0.3, 'paper': 0.3}, "
    f"{{'small': [Cell(('cartpole', 'single_env'), {TINY!r})], 'paper': []}}, {{'small': 2, 'paper': 1}}); "
    "from experiments.sweep import main; sys.exit(main(sys.argv[1:]))"
)


def small_cfg(**changes) -> DQNConfig:
    base = dict(env_id="CartPole-v1", seed=3, total_env_steps=6_000, hidden_sizes=(32, 32), buffer_size=6_000,
                batch_size=32, learning_starts=500, eps_decay_steps=2_000, eval_every=2_000, eval_episodes=2,
                target_update_period=50, log_every=1_000, num_workers=2, weight_sync_period=5,
                worker_timeout_s=20.0, backend="ray")
    return DQNConfig(**{**base, **changes})


def _ray_processes() -> list[str]:
    """Command lines of live processes below this one that belong to Ray (GCS, raylet, workers)."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    commands[int(entry)] = f.read().replace(b"\0", b" ").decode()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry))
    out, stack = [], [os.getpid()]
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child)
            if "ray" in commands.get(child, ""):
                out.append(commands[child][:120])
    return out


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
    deadline = time.monotonic() + 15
    while _ray_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _ray_processes() == []  # no GCS, raylet or worker outlives the tests


class Recorder(NullReporter):
    def __init__(self):
        self.scalars: dict[str, list] = {}

    def scalar(self, name, value, env_steps):
        self.scalars.setdefault(name, []).append((env_steps, value))


@pytest.fixture(scope="module")
def ray_run(cluster):
    recorder = Recorder()
    result = train_on_ray(small_cfg(), recorder)
    return result, recorder


def _our_actors() -> list[str]:
    return [name for name in ray.util.list_named_actors() if name.startswith("pdqn_actor_")]


@pytest.mark.slow
def test_utd_and_checkpoints_match_the_local_backend(ray_run):
    r, _ = ray_run
    cfg = small_cfg()
    assert r["backend"] == "ray" and r["env_steps"] == 6_000
    assert r["updates"] == (6_000 - 500) // 4  # exactly the local backend's count (test_actor_learner)
    assert r["realised_utd"] == pytest.approx(0.25, rel=0.02)
    assert [c["env_steps"] for c in r["holdout_curve"]] == checkpoint_steps(6_000, 2_000) == [2_000, 4_000, 6_000]
    assert r["eval_seconds"] > 0 and r["env_steps_per_sec"] == pytest.approx(r["env_steps"] / r["train_seconds"])
    assert r["weight_publishes"] == r["updates"] // cfg.weight_sync_period
    assert _our_actors() == []  # the run's actors are gone


@pytest.mark.slow
def test_no_transition_is_lost_or_duplicated(ray_run):
    r, _ = ray_run
    # What each actor produced reached the replay exactly once; only the n-step adder's pending
    # starts at the very end (at most n - 1 per actor) never become transitions.
    assert r["worker_transitions"] == r["worker_transitions_received"]
    made = sum(r["worker_transitions"])
    assert 6_000 - 2 * (3 - 1) <= made <= 6_000
    assert r["worker_shares"]["env_steps"] == [0.5, 0.5]
    for share in r["worker_shares"]["replay"]:  # equal env steps, so equal rows (n - 1 pending starts aside)
        assert abs(share - 0.5) <= 0.01
    # The sampled share also depends on when each actor's rows arrived (a replay sampled while one
    # actor is ahead over-represents it): it came out 0.556 once with other runs on the machine.
    for share in r["worker_shares"]["sampled"]:
        assert abs(share - 0.5) <= 0.1


@pytest.mark.slow
def test_diagnostics_as_the_local_backend_reports_them(ray_run):
    r, recorder = ray_run
    lag = r["policy_lag"]
    assert 0 <= lag["p50"] <= lag["p95"] <= lag["max"] and lag["mean"] > 0
    assert 0 <= r["acting_staleness"]["mean"] < lag["mean"]
    handoff = r["handoff_us_per_transition"]
    assert handoff["actor_write"] > 0 and handoff["learner_drain"] > 0 and handoff["learner_request"] > 0
    assert handoff["total"] == pytest.approx(handoff["actor_write"] + handoff["learner_drain"]
                                             + handoff["learner_request"])
    assert r["bottleneck"]["role"] in ("learner", "actors")
    for role in ("env_step", "act", "n_step", "handoff", "weight_sync", "wait"):
        assert r["actor_time_breakdown"][role]["seconds_per_actor"] >= 0
    assert {"actor_env_step", "actor_handoff", "update", "handoff_drain", "handoff_request"} <= set(
        r["component_costs_us"])
    for version, fetches in zip(r["worker_weights_versions"], r["worker_weight_fetches"]):
        assert version >= 0.5 * r["updates"] and fetches >= 5  # weights kept arriving
    assert all(n > 0 for n in r["worker_episodes"]) and len(r["actor_hosts"]) == 2
    for name in ("env_steps_per_sec", "td_loss", "policy_lag_mean", "actor_weights_staleness_max",
                 "train_episode_return"):
        assert recorder.scalars.get(name), name


class KillActor(NullReporter):
    """Kills actor 1 with ray.kill once training is under way, as a lost node would."""

    def __init__(self):
        self.killed_at = None

    def progress(self, env_steps, total, steps_per_sec, last_return):
        if self.killed_at is None and env_steps >= 1_000:
            (name,) = [a for a in _our_actors() if a.endswith("_1")]
            ray.kill(ray.get_actor(name))
            self.killed_at = time.monotonic()


@pytest.mark.timeout(120)
@pytest.mark.slow
def test_a_killed_ray_actor_fails_the_run_naming_it(cluster):
    reporter = KillActor()
    with pytest.raises(WorkerFailed, match=r"actor 1 \(Ray actor, pid \d+\) died after [\d,]+ env steps"):
        train_on_ray(small_cfg(total_env_steps=20_000, eval_every=20_000), reporter)
    assert reporter.killed_at is not None and time.monotonic() - reporter.killed_at < 30  # reported, no hang
    assert _our_actors() == []


class KillActors(NullReporter):
    """Kills slot 1's newest actor with ray.kill at each of `at` env steps, as a lost node would."""

    def __init__(self, at: list[int]):
        self.at, self.killed = list(at), []

    def progress(self, env_steps, total, steps_per_sec, last_return):
        if self.at and env_steps >= self.at[0]:
            slot = sorted(a for a in _our_actors() if re.search(r"_1(_r\d+)?$", a))
            ray.kill(ray.get_actor(slot[-1]))  # the replacement is named ..._1_r<k>
            self.killed.append(slot[-1])
            self.at.pop(0)


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_a_lost_actor_is_replaced_and_the_run_keeps_its_exact_env_steps(cluster):
    killer = KillActors([1_000])
    r = train_on_ray(small_cfg(actor_restarts=1, log_every=250), killer)
    assert len(killer.killed) == 1
    assert r["env_steps"] == 6_000 and r["updates"] == (6_000 - 500) // 4  # utd held through the loss
    assert [c["env_steps"] for c in r["holdout_curve"]] == [2_000, 4_000, 6_000]
    assert (r["actors_lost"], r["actors_replaced"]) == (1, 1)
    assert 0 < r["env_steps_undelivered"] <= 2 * 128 and r["actor_seconds_short"] > 0
    assert r["worker_transitions"] == r["worker_transitions_received"]  # what arrived, once
    assert r["worker_shares"]["env_steps"] == [0.5, 0.5]  # the replacement made the lost actor's share
    assert r["worker_weights_versions"][1] >= 0.5 * r["updates"]  # and it received the newest weights
    assert _our_actors() == []


@pytest.mark.timeout(180)
@pytest.mark.slow
def test_a_loss_past_actor_restarts_fails_the_run_naming_the_host(cluster):
    # the second kill finds the replacement up, or still starting: either way the second loss
    with pytest.raises(WorkerFailed, match=r"^actor 1(\'s replacement)? \(Ray actor.* on host \S+ \([\d.]+\); "
                                           r"actor_restarts=1 replacements were used$"):
        train_on_ray(small_cfg(actor_restarts=1, log_every=250, total_env_steps=20_000, eval_every=20_000),
                     KillActors([1_000, 3_000]))
    assert _our_actors() == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fault, message", [
    ("0:crash:700", r"^actor 0 \(Ray actor, pid \d+\) raised RuntimeError: injected crash \(PDQN_FAULT\)$"),
    ("1:kill:700", r"actor 1 \(Ray actor, pid \d+\) died after"),
    ("1:hang:700", r"actor 1 \(Ray actor, pid \d+\) returned no batch for 4 s .* hung"),
])
@pytest.mark.slow
def test_an_actor_that_raises_dies_or_hangs_fails_the_run(cluster, monkeypatch, fault, message):
    monkeypatch.setenv(FAULT_ENV, fault)
    with pytest.raises(WorkerFailed, match=message):
        train_on_ray(small_cfg(total_env_steps=4_000, worker_timeout_s=4.0))
    assert _our_actors() == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("env, when", [
    ("StepRaises-v0", r"its env step 100: RuntimeError: the simulator lost its licence server \(at step 100\)"),
    ("ResetRaises-v0", r"reset, after 0 env steps: OSError: the simulator lost its licence server: cannot reset"),
])
def test_an_env_that_raises_in_a_ray_actor_is_one_line_naming_it(cluster, env, when):
    """As in every other design (tests/test_faults.py): the env, the actor, the env step and the
    exception's message in one line; the actor's traceback is the error's cause. A reset that
    raises in the actor's constructor is said by its first call, not as Ray's death notice."""
    from architectures.core.errors import EnvFailed

    with pytest.raises(EnvFailed) as caught:
        train_on_ray(small_cfg(env_id=f"tests.fault_envs:{env}", total_env_steps=4_000))
    assert re.fullmatch(rf"env tests\.fault_envs:{env} \(actor \d, Ray actor, pid \d+\) raised in {when}",
                        str(caught.value)), str(caught.value)
    assert "Traceback" in str(caught.value.__cause__)
    assert _our_actors() == []


def test_without_ray_backend_ray_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[ray\]'"):
        train_on_ray(small_cfg())


def test_an_unreachable_address_is_one_clear_line():
    with pytest.raises(ConfigError, match="no Ray cluster reachable at '127.0.0.1:1'"):
        ray_support.check_ray_address("127.0.0.1:1")
    with pytest.raises(ConfigError, match="expected 'auto', 'HOST:PORT'"):
        ray_support.check_ray_address("nonsense")


@pytest.mark.parametrize("probe, message", [
    ("import sys, time\nprint('Unauthenticated: RPC error: InvalidAuthToken: wrong', file=sys.stderr, flush=True)\n"
     "time.sleep(60)\n", "refused this driver: InvalidAuthToken: wrong"),
    ("import sys\nprint('ConnectionError: gone', file=sys.stderr)\nsys.exit(1)\n", "cannot join .*: ConnectionError: gone"),
    ("import time\ntime.sleep(60)\n", "no answer from the Ray cluster at .* in 2 s"),
])
def test_the_join_check_ends_at_the_first_refusal_or_its_timeout(monkeypatch, probe, message):
    """The probe is read as it writes: Ray's first refusal ends it (Ray itself retries ~20 s), and a
    probe that never answers is ended at the timeout (a probe left running would hold the check for its 60 s)."""
    import socket

    with socket.socket() as port:  # a reachable address, so the check gets as far as the probe
        port.bind(("127.0.0.1", 0))
        port.listen()
        monkeypatch.setattr(ray_support, "JOIN_PROBE", probe)
        started = time.monotonic()
        with pytest.raises(ConfigError, match=message):
            ray_support.check_ray_joinable(f"127.0.0.1:{port.getsockname()[1]}", timeout_s=2.0)
    assert time.monotonic() - started < 15  # not the probe's 60 s


@pytest.mark.slow
def test_an_empty_ray_address_starts_a_private_instance_beside_a_running_cluster(cluster, tmp_path):
    """With RAY_ADDRESS naming the running cluster (as `ray start` leaves a marker that ray.init
    follows), ray.init(num_cpus=...) would join it and refuse num_cpus: the run starts its own."""
    proc = subprocess.run([sys.executable, "-m", "architectures", "actor_learner", "--backend=ray",
                           "--num_workers=1", "--total_env_steps=1000", "--learning_starts=200", "--eval_every=1000",
                           "--eval_episodes=1", "--batch_size=16", "--hidden_sizes=16"], cwd=ROOT,
                          capture_output=True, text=True, timeout=150, env={**os.environ, "RAY_ADDRESS": cluster})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"env_steps": 1000' in proc.stdout
    assert _our_actors() == []  # nothing of the run's was placed on the running cluster


@pytest.mark.slow
def test_a_sweep_through_ray_stores_every_run_once_and_resumes(cluster, tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", TWO_RUN_SWEEP, "tiny", "--out", str(out), "--ray", cluster]
    first = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=150)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "Ray: 1 node(s), 2 CPUs" in first.stderr
    found = statuses(out)
    assert len(found) == 2 and all(r["status"] == "COMPLETED" for r in found.values())
    started = {k: r["start_time"] for k, r in found.items()}
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0 and "2 already completed, 0 to run" in second.stderr, second.stderr[-2000:]
    assert {k: r["start_time"] for k, r in statuses(out).items()} == started  # not run again


def test_a_sweep_with_an_unreachable_ray_address_stops_before_any_run(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "experiments.sweep", "smoke", "--out", str(tmp_path / "out"),
                           "--ray", "127.0.0.1:1"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "error: --ray: no Ray cluster reachable at '127.0.0.1:1'" in proc.stderr
    assert "Traceback" not in proc.stderr and statuses(tmp_path / "out") == {}


def test_sweep_runs_reserve_their_processes_in_cpus():
    from experiments.sweeps import grid as sweep_grid
    from experiments.sweeps.catalog import SWEEPS

    cpus = {r.architecture: r.processes() for r in sweep_grid.expand(SWEEPS["smoke"], "small", 1)}
    assert cpus["single_env"] == 1 and cpus["high_utd"] == 1
    assert cpus["actor_learner"] == cpus["vector_env"] == cpus["hogwild"] == 3  # 2 workers + the main process
