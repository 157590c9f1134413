"""plan on a machine with many cores and a GPU (docs/gpu.md): the learner's device measured in the loop
and weighed, and an env's own wait told from its work with no config key."""

from __future__ import annotations

import pytest

from analysis.cost.model import medians, predict_all, recommend, worker_counts
from architectures.core.config import DQNConfig
from experiments.components.measure import own_env_wait, without_own_wait
from experiments.plan.devices import learner_devices, learner_in_loop, measure_devices, with_learner

TINY = DQNConfig(hidden_sizes=(16, 16), batch_size=16)


def test_without_cuda_the_plan_weighs_the_cpu_alone():
    import torch

    assert learner_devices() == (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])


def test_another_device_is_measured_in_the_loop_and_replaces_only_the_learner():
    """The CUDA branch, run here on meta (the stand-in accelerator): the learner's sample and update
    come from single_env's loop with the learner there, everything else stays the CPU's."""
    costs = {"sample": {"us": 20.0}, "update": {"us": 300.0}, "act": {"us": 7.0},
             "in_loop": {"sample": {"us": 30.0}, "update": {"us": 330.0}, "env_step": {"us": 9.0}}}
    lines = []
    by_device = measure_devices(TINY, costs, ["cpu", "meta"], 0.3, lines.append)
    assert by_device["cpu"] is costs and len(lines) == 1 and "the learner on meta" in lines[0]
    meta = by_device["meta"]
    assert meta["update"] == meta["in_loop"]["update"] and meta["update"] != costs["update"]
    assert meta["act"] == costs["act"] and meta["in_loop"]["env_step"] == costs["in_loop"]["env_step"]
    assert costs["in_loop"]["update"] == {"us": 330.0}  # the CPU's costs are not changed in place


def test_the_learner_in_the_loop_costs_what_the_loop_pays_for_it():
    row = learner_in_loop(TINY, 0.3)
    assert row["sample"]["us"] > 0 and row["update"]["us"] > 0
    cheaper = with_learner({"update": {"us": 1e9}, "sample": {"us": 1e9}}, row)
    assert cheaper["update"] == row["update"]


@pytest.mark.parametrize("wall,cpu,queued,own", [
    (10.0, 9.5, 0.0, 0.0),            # CartPole's own step: all work
    (3_400.0, 110.0, 0.0, 3_290.0),   # a step that blocks on another process: all wait but its CPU
    (2_000.0, 1_300.0, 0.0, 700.0),   # a mixed step: its mix
    (300.0, 270.0, 0.0, 0.0),         # under a fifth of the step: noise, not a wait
    (3_890.0, 2_288.0, 1_590.0, 0.0),  # a busy step on a shared machine: queued for a CPU, not waiting
])
def test_an_envs_own_wait_is_told_from_its_work(wall, cpu, queued, own):
    costs = {"env_step": {"us": wall, "p10": wall, "p90": wall, "cpu_us": cpu, "queued_us": queued}}
    assert own_env_wait(costs, lambda line: None) == pytest.approx(own)
    if own:
        assert costs["env_step"]["us"] == pytest.approx(cpu) and costs["env_wait"]["us"] == pytest.approx(own)
    else:
        assert "env_wait" not in costs and costs["env_step"]["us"] == wall


def test_a_busy_step_queued_behind_other_work_is_not_read_as_a_wait():
    """A busy env step timed while another process spins on the same CPU: its wall time doubles,
    its CPU does not, and the time queued for the CPU tells the two apart."""
    import multiprocessing as mp
    import os

    from experiments.components.alone import timed

    if not os.path.exists("/proc/thread-self/schedstat"):
        pytest.skip("no /proc/thread-self/schedstat here: queueing cannot be told from waiting")
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    spinner = mp.get_context("fork").Process(target=_spin, daemon=True)
    spinner.start()
    try:
        step = timed(lambda: _busy_us(500), 40, blocks=3)
    finally:
        spinner.kill()
        spinner.join()
        os.sched_setaffinity(0, before)
    assert step["us"] > 1.5 * step["cpu_us"]  # the spinner took the core half the time
    assert own_env_wait({"env_step": step}, lambda line: None) == 0.0


def _spin() -> None:  # forked with the test's one-core affinity
    while True:
        pass


def _busy_us(us: float) -> None:
    import time

    end = time.thread_time() + us / 1e6
    while time.thread_time() < end:
        pass


def test_the_loops_lose_the_envs_own_wait_once():
    costs = {"in_loop": {"env_step": {"us": 3_100.0}, "update": {"us": 400.0}},
             "hogwild_in_loop": {"us": 3_300.0}, "hogwild_at_cores": {"2": {"us": 1_700.0}},
             "vector_round_trip": {2: {"us": 3_200.0}}, "vector_trip": {"4": {"us": 3_482.0}}}
    without_own_wait(costs, 3_000.0)
    assert costs["in_loop"]["env_step"]["us"] == pytest.approx(100.0)
    assert costs["in_loop_waiting"]["env_step"]["us"] == 3_100.0  # the loop as it ran: the waiting loop
    assert costs["hogwild_in_loop"]["us"] == pytest.approx(300.0)
    assert costs["hogwild_at_cores"]["2"]["us"] == pytest.approx(200.0)  # 2 workers: 3,400 - 3,000 over 2
    assert costs["vector_round_trip"][2]["us"] == pytest.approx(200.0)
    assert costs["vector_trip"]["4"]["us"] == pytest.approx(482.0)  # the async trip held each env's wait too


def test_a_blocking_user_env_is_measured_as_a_wait_and_predicted_past_the_cores():
    """The env blocks ~3 ms on a simulator process; nothing in the config says so."""
    from experiments.components.alone import Bench, env_costs

    bench = Bench.open(DQNConfig(env_id="tests.remote_envs:RemoteCartPole-v0"))
    try:
        costs = env_costs(bench, 0.0, budget_s=2.0, log=lambda line: None)
    finally:
        bench.env.close()
    own = own_env_wait(costs, lambda line: None)
    assert 2_500 < own < 6_000 and costs["env_step"]["us"] < 1_000
    counts = worker_counts(medians(costs), cores=2)
    assert max(counts) > 2 * 2  # past the cores, as for env_step_wait_us


def test_a_dearer_learner_lowers_the_recommendations_speed():
    """plan picks the device whose recommendation is fastest: a dearer learner must lower it."""
    import json
    import os

    plan = json.load(open(os.path.join(os.path.dirname(__file__), "..", "results", "reference", "seed_shape", "plan",
                                       "plan.json")))
    costs = plan["component_costs_us"]
    slow = with_learner(costs, {"sample": costs["sample"], "update": {k: 10 * v for k, v in costs["update"].items()}})
    fast = recommend(predict_all(medians(costs), utd=0.25, cores=2))[0].env_steps_per_sec
    slower = recommend(predict_all(medians(slow), utd=0.25, cores=2))[0].env_steps_per_sec
    assert slower < fast
