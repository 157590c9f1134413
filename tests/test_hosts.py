"""Across hosts: actor_learner's actors and a sweep's runs on other hosts of a Ray cluster, and
what a lost host costs. The hosts are network namespaces on this machine (experiments/testbed/netns_hosts.py):
separate addresses and hostnames, one switch, no route out. Skipped with the reason where Ray
is missing or namespaces are refused (not root, or a kernel or container that forbids them)."""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (optional extra): pip install -e '.[ray]'")

from experiments.testbed.netns_hosts import Hosts  # noqa: E402
from tests.test_ray import TINY, TWO_RUN_SWEEP  # noqa: E402
from tests.test_sweep import statuses  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_RUN = ["--total_env_steps=3000", "--learning_starts=300", "--eval_every=1500", "--eval_episodes=2",
            "--batch_size=16", "--hidden_sizes=16", "--worker_timeout_s=30"]


@pytest.fixture(scope="module")
def hosts():
    refused = Hosts.refused()
    if refused:
        pytest.skip(refused)
    built = Hosts(count=3, cpus=2, quick_loss=True)  # a lost host known in ~3 s, not ~15 s
    try:
        built.build()
        built.start(1, wait=False)
        built.start(2, wait=False)
        built.start(3)  # blocks until both nodes' 4 CPUs have joined the head
        yield built
    finally:
        built.close()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert built.tag not in listed  # no namespace, and so no process in one, outlives the tests


def _result(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{\n"):])  # the CLI prints the result last, as JSON


def _design(hosts: Hosts, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return hosts.run(1, [sys.executable, "-m", "architectures", "actor_learner", "--backend=ray",
                         f"--ray_address={hosts.head}", *TINY_RUN, *args], cwd=ROOT, timeout=timeout)


def test_the_hosts_are_apart(hosts):
    """Each host has its own address and hostname, and reaches nothing outside 198.18.0.0/24."""
    probe = ("import socket, sys\n"
             "try:\n    socket.create_connection(('192.0.2.1', 80), timeout=1)\nexcept OSError as err:\n"
             "    print('unreachable', err.errno)\n")
    for host in (1, 2, 3):
        routes = hosts.run(host, ["ip", "route"]).stdout
        assert routes.split()[0] == "198.18.0.0/24" and "default" not in routes
        out = hosts.run(host, [sys.executable, "-c", probe]).stdout
        assert out.startswith("unreachable"), out


def test_actors_run_on_the_other_hosts_and_every_transition_arrives(hosts):
    proc = _design(hosts, "--num_workers=3")
    assert proc.returncode == 0, proc.stderr[-3000:] + hosts.logs()
    result = _result(proc.stdout)
    assert result["env_steps"] == 3000
    assert result["worker_transitions"] == result["worker_transitions_received"]
    nodes = result["actor_nodes"]
    # the head has no CPUs: 3 actors of one CPU on two nodes of two CPUs span both hosts
    assert {node["address"] for node in nodes} == {hosts.address(2), hosts.address(3)}
    assert all(node["hostname"] == hosts.hostname(int(node["address"].rsplit(".", 1)[1])) for node in nodes)
    assert len({node["node_id"] for node in nodes}) == 2
    assert result["actor_hosts"] == [node["hostname"] for node in nodes]


def test_a_sweep_across_hosts_runs_each_run_once_on_a_node_it_records(hosts, tmp_path):
    out = tmp_path / "out"  # one filesystem for every host here, as a shared mount would be
    cmd = [sys.executable, "-c", TWO_RUN_SWEEP, "tiny", "--out", str(out), "--ray", hosts.head]
    proc = hosts.run(1, cmd, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Ray: 3 node(s), 4 CPUs" in proc.stderr
    found = statuses(out)
    assert len(found) == 2 and all(r["status"] == "COMPLETED" for r in found.values())
    for name in found:
        with open(out / name / "info.json") as f:
            node = json.load(f)["node"]
        assert node["address"] in (hosts.address(2), hosts.address(3))
        assert node["hostname"] == hosts.hostname(int(node["address"].rsplit(".", 1)[1])) and node["node_id"]





def test_a_lost_host_costs_its_actors_not_the_run(hosts):
    """A host with actors on it is lost (every process on it killed at once) while the run trains:
    its actors are replaced on the other host and the run ends with its exact env steps."""
    cmd = [sys.executable, "-m", "architectures", "actor_learner", "--backend=ray", f"--ray_address={hosts.head}",
           "--num_workers=2", "--actor_restarts=2", "--total_env_steps=12000", "--eval_every=4000",
           "--eval_episodes=2", "--learning_starts=300", "--batch_size=16", "--hidden_sizes=16",
           "--env_step_wait_us=1000", "--worker_timeout_s=30"]
    driver = hosts.popen(1, cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        placed = hosts.actor_addresses(2)
        assert len(placed) == 2, placed
        lost = int(placed[0].rsplit(".", 1)[1])  # a host with at least one of the actors
        hosts.lose(lost)
        out, err = driver.communicate(timeout=240)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, 9)
            driver.wait()
    try:
        assert driver.returncode == 0, err[-3000:]
        result = _result(out)
        assert result["env_steps"] == 12000  # each actor's share is fixed: the run ends only with the replacement
        assert [c["env_steps"] for c in result["holdout_curve"]] == [4000, 8000, 12000]
        # each actor the host held was lost and replaced (a replacement Ray offered the lost host a CPU
        # for before declaring it dead would be lost too, and counted: a bench round saw that)
        assert result["actors_lost"] == result["actors_replaced"] >= placed.count(hosts.address(lost))
        assert result["actor_seconds_short"] > 0
        assert {node["address"] for node in result["actor_nodes"]} == {hosts.address(5 - lost)}  # the survivor
        assert result["worker_transitions"] == result["worker_transitions_received"]
    finally:
        hosts.start(lost)  # the host back, for any test after this one


SLOW = dict(TINY, total_env_steps=12_000, eval_every=4_000, buffer_size=12_000, env_step_wait_us=1_000.0,
            log_every=2_000)
"""Runs of ~15 s, checkpointed at every holdout (4,000 env steps), so a host can be lost mid-run."""


def test_a_sweep_run_lost_with_its_host_runs_again_on_another(hosts, tmp_path):
    out = tmp_path / "out"
    sweep = hosts.popen(1, [sys.executable, "-c", TWO_RUN_SWEEP.replace(repr(TINY), repr(SLOW)), "tiny", "--out",
                            str(out), "--ray", hosts.head], cwd=ROOT, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    lost = None
    try:
        lost, argv = hosts.wait_for_process("experiments.train", (2, 3))  # a host a run trains on
        # lost once that run has written its record: a fixed 3 s was, on a loaded CI machine, still in its
        # imports, and then the retry had no record to move aside (CI of stop 59)
        record = out / argv[argv.index("--id") + 1] / "run.json"
        end = time.monotonic() + 120
        while not record.exists() and time.monotonic() < end:
            time.sleep(0.2)
        assert record.exists(), f"the run on host {lost} wrote no record in 120 s"
        hosts.lose(lost)
        _, err = sweep.communicate(timeout=400)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, 9)
            sweep.wait()
        if lost is not None:
            hosts.start(lost)  # the host back, for any test after this one
    assert sweep.returncode == 0, err[-3000:]
    found = statuses(out)
    assert len(found) == 2 and all(r["status"] == "COMPLETED" for r in found.values()), err[-3000:]
    for name in found:  # a run on the lost host ran again on the other one
        with open(out / name / "info.json") as f:
            assert json.load(f)["node"]["address"] == hosts.address(5 - lost)
    assert os.listdir(out / "_incomplete")  # the lost attempt's record, moved aside by the retry
    assert "its node or worker was lost" in err and "running it again (1 of 2)" in err  # said, not silent


def test_a_sweep_whose_hosts_are_all_lost_says_so_and_leaves_the_runs(hosts, tmp_path):
    """No live node can hold a run any more: each is said at once and left for the rerun; the
    sweep ends instead of waiting in silence for a node to come back."""
    out = tmp_path / "out"
    sweep = hosts.popen(1, [sys.executable, "-c", TWO_RUN_SWEEP.replace(repr(TINY), repr(SLOW)), "tiny", "--out",
                            str(out), "--ray", hosts.head], cwd=ROOT, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
    try:
        hosts.wait_for_process("experiments.train", (2, 3))
        hosts.lose(2)
        hosts.lose(3)
        lost_at = time.monotonic()
        _, err = sweep.communicate(timeout=120)
        waited = time.monotonic() - lost_at
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, 9)
            sweep.wait()
        hosts.start(2, wait=False)
        hosts.start(3)
    assert sweep.returncode != 0 and waited < 60, err[-3000:]
    said = [line for line in err.splitlines() if "no live node has them" in line]
    assert len(said) == 2 and all(line.endswith("left for the rerun") for line in said), err[-3000:]


def test_a_resume_on_a_smaller_cluster_re_divides_the_remaining_env_steps(hosts, tmp_path):
    """Killed after its first checkpoint with 4 actors on two hosts, the run resumes after one
    host is gone: 2 actors make the remaining env steps, exactly, and the record says so."""
    checkpoint = tmp_path / "run.pt"
    cmd = [sys.executable, "-m", "architectures", "actor_learner", "--backend=ray", f"--ray_address={hosts.head}",
           "--num_workers=4", "--total_env_steps=16000", "--eval_every=8000", "--checkpoint_every=8000",
           f"--checkpoint_path={checkpoint}", "--eval_episodes=2", "--learning_starts=300", "--batch_size=16",
           "--hidden_sizes=16", "--env_step_wait_us=1000", "--worker_timeout_s=30"]
    first = hosts.popen(1, cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 180
        while not checkpoint.exists() and first.poll() is None and time.monotonic() < end:
            time.sleep(0.2)
        assert checkpoint.exists()
    finally:
        os.killpg(first.pid, 9)  # killed whole, after its first checkpoint
        first.wait()
    hosts.lose(3)
    try:
        hosts.wait_for_cpus(2, free=True)  # host 3 declared dead, the killed run's actors gone
        second = hosts.run(1, cmd, cwd=ROOT, timeout=300, env={"PYTHONWARNINGS": "default"})  # as a user's shell
    finally:
        hosts.start(3)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "warning: the cluster has 2 free CPUs for 4 actors: resuming with 2" in second.stderr
    result = _result(second.stdout)
    assert result["env_steps"] == 16000 and result["actors_placed"] == 2
    assert [c["env_steps"] for c in result["holdout_curve"]] == [8000, 16000]
    assert {node["address"] for node in result["actor_nodes"]} == {hosts.address(2)}


@pytest.mark.alone  # a round trip's time: 3.9 ms bridged beside a loaded machine, against 2 ms allowed
def test_the_delay_line_holds_every_frame_its_time_each_way():
    """A host behind the delay line answers a round trip later by twice its one-way time, and
    directly again once the line's ends are bridged (experiments/testbed/delay_line.py)."""
    refused = Hosts.refused()
    if refused:
        pytest.skip(refused)
    if not any(os.path.exists(p) for p in ("/usr/sbin/ethtool", "/sbin/ethtool")):
        pytest.skip("the delay line needs ethtool (./setup.sh --hosts)")
    from experiments.benches.round_trip import round_trip_ms

    lined = Hosts(count=2, cpus=1, lined=(2,)).build()
    try:
        direct = round_trip_ms(lined)
        lined.delay(2, 5.0)
        delayed = round_trip_ms(lined)
        lined.delay(2, None)
        bridged = round_trip_ms(lined)
    finally:
        lined.close()
    assert direct < 2.0 and bridged < 2.0, (direct, bridged)
    assert 10.0 <= delayed < 20.0, delayed
    assert all(lined.tag not in name for name in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                                text=True).stdout.split())


def test_a_cluster_that_refuses_the_token_is_a_refusal_with_rays_cause(tmp_path):
    """A head with token authentication and a driver with the wrong token: one line with Ray's
    cause, exit 2 and nothing stored, from experiments.train and from a --ray sweep, where Ray
    itself retries for ~20 s and says only that it failed to connect (the check ends at Ray's first
    refusal: this test took 30 s of the suite before it did, 7 s alone after)."""
    refused = Hosts.refused()
    if refused:
        pytest.skip(refused)
    guarded = Hosts(count=1, cpus=0, auth_token="a" * 32).build()
    try:
        guarded.start(1)
        wrong = {"RAY_AUTH_TOKEN": "b" * 32, "PYTHONPATH": ROOT}
        with ThreadPoolExecutor(max_workers=2) as both:  # side by side
            tracked, sweep = both.map(lambda cmd: guarded.run(1, cmd, cwd=ROOT, timeout=300, env=wrong), [
                [sys.executable, "-m", "experiments.train", "with", "cartpole", "actor_learner", "backend=ray",
                 f"ray_address={guarded.head}", "-F", str(tmp_path / "runs")],
                [sys.executable, "-m", "experiments.sweep", "smoke", "--ray", guarded.head, "--out",
                 str(tmp_path / "sweep")]])
        joined = guarded.run(1, [sys.executable, "-c", "from architectures.transport.ray_support import "
                                 f"check_ray_joinable; check_ray_joinable({guarded.head!r})"], cwd=ROOT, timeout=300,
                             env={"PYTHONPATH": ROOT})  # the right token: it joins
    finally:
        guarded.close()
    cause = "InvalidAuthToken: Authentication token is missing or incorrect"
    errors = [line for line in tracked.stderr.splitlines() if line.startswith("error:")]
    assert tracked.returncode == 2 and len(errors) == 1 and cause in errors[0], tracked.stderr[-3000:]
    assert errors[0].startswith(f"error: ray_address: the Ray cluster at '{guarded.head}' refused this driver")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())  # nothing stored
    assert sweep.returncode == 2 and cause in sweep.stderr, sweep.stderr[-3000:]
    assert not any((tmp_path / "sweep").rglob("*"))  # no run, no log
    assert joined.returncode == 0, joined.stderr[-3000:]
