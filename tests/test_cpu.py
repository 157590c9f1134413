"""A run's `cpu`: the CPU seconds of its main process and of its workers over the training clock,
so a run can tell a bound set by the cores' capacity from one set by waiting.

The env-stepping role pays a busy env's cost as CPU, and a waiting env's wait not as CPU; paused
time (evaluation, checkpoints) is not counted; the workers' CPU is theirs, not the main process's.
"""

from __future__ import annotations

import os
import time

import pytest

from architectures.core.config import DQNConfig
from architectures.core.metrics import CpuMeter, Stopwatch, process_cpu_seconds
from architectures.designs import hogwild, single_env, vector_env
from architectures.designs.actor_learner import local as actor_learner

pytestmark = pytest.mark.alone  # it measures times or CPU seconds (tests/conftest.py)

BUSY_US, WAIT_US = 500.0, 2000.0

# design module, workers, env cost, the role that steps the envs
CASES = [
    pytest.param(single_env, 1, {"env_step_cost_us": BUSY_US}, "main", id="single_env"),
    pytest.param(actor_learner, 2, {"env_step_wait_us": WAIT_US}, "workers", id="actor_learner",
                 marks=pytest.mark.slow),
    pytest.param(vector_env, 2, {"env_step_cost_us": BUSY_US}, "workers", id="vector_env"),
    pytest.param(hogwild, 2, {"env_step_cost_us": BUSY_US}, "workers", id="hogwild", marks=pytest.mark.slow),
]


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_the_clock_counts_no_cpu_while_paused():
    clock = Stopwatch(cpu=CpuMeter())
    _burn(0.05)
    clock.pause()
    _burn(0.2)
    clock.resume()
    _burn(0.05)
    cpu = clock.cpu()
    assert 0.09 <= cpu["main"] < 0.2, cpu
    assert cpu["workers"] == 0.0


def test_a_gone_process_reads_as_none():
    assert process_cpu_seconds(2 ** 31 - 1) is None


def test_a_process_reads_as_the_cpu_it_spent():
    """The kernel's count for this process is what time.process_time says (both: user + system
    of every thread), to its 10 ms steps."""
    _burn(0.1)
    before, read = time.process_time(), process_cpu_seconds(os.getpid())
    assert abs(read - before) < 0.05, (read, before)


@pytest.mark.parametrize("module,workers,cost,role", CASES)
def test_the_env_stepping_role_pays_a_busy_step_as_cpu_and_a_wait_not(module, workers, cost, role):
    cfg = DQNConfig(total_env_steps=1_000, learning_starts=200, buffer_size=2_000, eval_episodes=0,
                    eval_every=1_000, log_every=1_000, num_workers=workers, **cost)
    cpu = module.train(cfg)["cpu"]
    stepping = cpu[f"{role}_us_per_env_step"]
    if "env_step_cost_us" in cost:
        assert stepping >= 0.8 * BUSY_US, cpu
    else:
        assert 0 < stepping < WAIT_US / 4, cpu
    if role == "main":
        assert cpu["workers_seconds"] == 0.0
    else:
        assert cpu["main_seconds"] > 0
    assert 0 < cpu["cores_busy"] <= cpu["cores"] * 1.1, cpu
