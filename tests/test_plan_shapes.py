"""experiments/plan/shapes.py: each validation shape's step takes the time and CPU its table says,
named the user's way, through the suite's own env factory."""

import time

import pytest

from architectures.core.envs import make_env
from experiments.plan import shapes as plan_shapes


def _time_steps(env_id: str, steps: int, seed: int = 7) -> tuple[float, float, float]:
    """(wall us, CPU us) per step over `steps` steps, and the reset's wall us."""
    env = make_env(env_id)
    began = time.perf_counter()
    env.reset(seed=seed)
    reset_us = 1e6 * (time.perf_counter() - began)
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    env.close()
    return 1e6 * wall / steps, 1e6 * cpu / steps, reset_us


@pytest.mark.parametrize("shape", ["Busy1ms", "Wait1ms", "MixedTwoThirds"])
def test_a_shapes_step_spends_its_cpu_and_its_wait(shape):
    spec = plan_shapes.SHAPES[shape]
    wall, cpu, _ = _time_steps(f"experiments.plan.shapes:{shape}-v0", 100)
    # The CPU is the thread's own, so it holds on a busy machine; the wall has only a floor there (a
    # shared core stretches a busy step), and the wall beyond the CPU is at least the wait.
    assert cpu == pytest.approx(spec.get("busy_us", 0.0), abs=150 + 0.2 * spec.get("busy_us", 0.0))
    assert wall >= 0.9 * plan_shapes.mean_step_us(shape) and wall - cpu >= 0.9 * spec.get("wait_us", 0.0)


def _waits(monkeypatch, seed: int, steps: int = 2_000) -> list[float]:
    """The waits HeavyTail asks for over `steps` steps from an episode seeded `seed` (sleep
    recorded, not slept: the draws, with no timing in the way)."""
    waits: list[float] = []
    monkeypatch.setattr(plan_shapes.time, "sleep", waits.append)
    env = make_env("experiments.plan.shapes:HeavyTail-v0")
    env.reset(seed=seed)
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()  # the draws go on from the seeded episode's
    env.close()
    monkeypatch.undo()
    return waits


def test_the_heavy_tail_is_slow_on_its_share_of_steps_drawn_from_the_episodes_seed(monkeypatch):
    first = _waits(monkeypatch, 3)
    assert first == _waits(monkeypatch, 3) != _waits(monkeypatch, 4)  # the seed decides which steps are slow
    assert set(first) == {0.0003, 0.012} and 0.03 < first.count(0.012) / len(first) < 0.05
    assert plan_shapes.mean_step_us("HeavyTail") == pytest.approx(0.96 * 300 + 0.04 * 12_000)


def test_a_slow_reset_waits_and_the_conv_net_shapes_step_minatar():
    _, _, reset_us = _time_steps("experiments.plan.shapes:SlowReset-v0", 1)
    assert reset_us >= 40_000
    env = make_env("experiments.plan.shapes:BreakoutWait1ms-v0")
    obs, _ = env.reset(seed=1)
    assert obs.shape == (10, 10, 4)  # MinAtar Breakout's planes: the conv net's input
    env.close()
