import numpy as np
import pytest

from architectures.core.diagnostics import PolicyLag, name_bottleneck, shares


def test_policy_lag_summary_on_known_lags():
    lag = PolicyLag()
    lag.record(10, np.array([10, 9, 8, 0]))  # lags 0, 1, 2, 10
    lag.record(20, np.array([20, 20, 19, 15]))  # lags 0, 0, 1, 5
    s = lag.summary()
    assert s["mean"] == pytest.approx(19 / 8) and s["max"] == 10
    assert s["p50"] == pytest.approx(1.0)
    assert lag.window()["max"] == 10
    assert np.isnan(lag.window()["mean"])  # the window restarts after each read


def test_policy_lag_reservoir_keeps_mean_and_max_exact():
    lag = PolicyLag(reservoir_batches=4, seed=0)
    for v in range(100):
        lag.record(v, np.zeros(3, np.int64))
    s = lag.summary()
    assert len(lag.reservoir) == 4
    assert s["mean"] == pytest.approx(np.mean(np.arange(100))) and s["max"] == 99


@pytest.mark.parametrize("sources, n, expected", [
    ([0, 1, 1, 1], 2, [0.25, 0.75]),
    ([2, 2], 3, [0.0, 0.0, 1.0]),
    ([], 2, [0.0, 0.0]),
])
def test_shares(sources, n, expected):
    assert shares(np.array(sources, dtype=np.int64), n) == expected


@pytest.mark.parametrize("roles, role, component", [
    ({"learner": {"update": 9.0, "sample": 0.5, "wait": 0.2}, "actors": {"env_step": 3.0, "wait": 6.0}},
     "learner", "update"),
    ({"learner": {"update": 2.0, "wait": 7.5}, "actors": {"env_step": 8.0, "handoff": 1.0, "wait": 0.5}},
     "actors", "env_step"),
])
def test_the_bottleneck_is_the_role_that_never_waits(roles, role, component):
    b = name_bottleneck(10.0, roles)
    assert (b["role"], b["component"]) == (role, component)
    assert b["summary"].startswith(f"{role} (busy")


@pytest.mark.parametrize("cores_busy, says_cores", [(1.95, True), (1.8, True), (1.5, False)])
def test_a_run_that_kept_its_cores_busy_says_so(cores_busy, says_cores):
    """Past the cores (shape_confirm: 1.89-1.96 of 2 busy at 12-32 actors) a role's time is partly a
    wait for a CPU: the summary names the cores where 90% of them were busy."""
    roles = {"learner": {"update": 6.0, "wait": 3.0}, "actors": {"env_step": 9.5, "wait": 0.0}}
    b = name_bottleneck(10.0, roles, {"cores_busy": cores_busy, "cores": 2})
    assert b["role"] == "actors" and b["cores_busy"] == cores_busy
    assert ("the cores:" in b["summary"]) == says_cores
    assert "cores_busy" not in name_bottleneck(10.0, roles)
