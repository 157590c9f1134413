import numpy as np
import pytest

from architectures.diagnostics import PolicyLag, name_bottleneck, shares


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


def test_learner_log_averages_over_what_happened_since_the_last_log():
    import types

    import torch

    from architectures.diagnostics import LearnerLog, PolicyLag

    class Recorder:
        def __init__(self):
            self.rows = []

        def scalar(self, name, value, env_steps):
            self.rows.append((name, value, env_steps))

    reporter, lag = Recorder(), PolicyLag(seed=0)
    lag.record(10, np.array([4, 8]))
    learner = types.SimpleNamespace(version=0, last_q_taken=torch.tensor([1.0, 3.0]))
    log = LearnerLog(reporter, log_every=100)
    assert not log.due(99) and log.due(100)
    learner.version, log.loss_sum = 4, 2.0           # 4 updates, losses summing to 2
    log.write(130, 50.0, learner, lag, episodes=2, return_sum=30.0)
    assert not log.due(199) and log.due(200)        # the cadence stays on multiples of log_every
    log.write(200, 60.0, learner, lag, episodes=5, return_sum=90.0)  # no update since: no td_loss
    got = {(name, step): value for name, value, step in reporter.rows}
    assert got[("td_loss", 130)] == 0.5 and got[("q_mean", 130)] == 2.0
    assert got[("train_episode_return", 130)] == 15.0
    assert got[("train_episode_return", 200)] == 20.0  # (90 - 30) / (5 - 2): only the new episodes
    assert ("td_loss", 200) not in got and got[("env_steps_per_sec", 200)] == 60.0
