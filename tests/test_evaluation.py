import numpy as np
import pytest

from architectures.core.config import DQNConfig
from architectures.core.envs import holdout_seeds
from architectures.core.evaluation import HoldoutEvaluator, checkpoint_steps
from architectures.core.networks import build_q_network


@pytest.mark.parametrize("total,every,expected", [
    (100, 25, [25, 50, 75, 100]),
    (100, 30, [30, 60, 90, 100]),   # the final checkpoint always runs at total_env_steps
    (100, 100, [100]),
    (100, 500, [100]),
])
def test_checkpoint_steps(total, every, expected):
    assert checkpoint_steps(total, every) == expected


def test_evaluator_plays_the_fixed_holdout_and_is_deterministic():
    cfg = DQNConfig(total_env_steps=100, eval_every=50, eval_episodes=3, eval_epsilon=0.1, learning_starts=0)
    net = build_q_network((4,), 2, (8,), False, seed=0)
    evaluator = HoldoutEvaluator(cfg, net)
    seen = []
    reset = evaluator.env.reset
    evaluator.env.reset = lambda seed=None, **kw: (seen.append(seed), reset(seed=seed, **kw))[1]
    assert not evaluator.due(49) and evaluator.due(50)
    first = evaluator.evaluate(50)
    second = evaluator.evaluate(100)
    assert seen == holdout_seeds(3) * 2
    assert first["returns"] == second["returns"]  # same weights, same holdout -> same returns
    assert len(first["returns"]) == 3 and first["return_mean"] == pytest.approx(np.mean(first["returns"]))
    assert [r["checkpoint"] for r in evaluator.results] == [50, 100]
    assert not evaluator.due(10**6)


def test_evaluation_disabled_with_zero_episodes():
    cfg = DQNConfig(total_env_steps=100, eval_every=50, eval_episodes=0, learning_starts=0)
    evaluator = HoldoutEvaluator(cfg, build_q_network((4,), 2, (8,), False, seed=0))
    assert not evaluator.enabled
    assert np.isnan(evaluator.evaluate(50)["return_mean"])


@pytest.mark.alone
def test_evaluation_is_off_the_training_clock_and_timed_as_eval(monkeypatch):
    import time

    from architectures.core.metrics import Stopwatch, Timers

    evaluator = HoldoutEvaluator(DQNConfig(eval_episodes=0), net=None)
    seen = {}

    def slow_evaluate(env_steps, train_seconds):
        seen["train_seconds"] = train_seconds
        time.sleep(0.2)
        return {"env_steps": env_steps}

    monkeypatch.setattr(evaluator, "evaluate", slow_evaluate)
    clock, timers = Stopwatch(), Timers()
    time.sleep(0.05)
    assert evaluator.evaluate_off_clock(100, clock, timers) == {"env_steps": 100}
    assert 0.05 <= seen["train_seconds"] < 0.2     # the clock read at the checkpoint, before evaluating
    assert clock.elapsed() < 0.2                    # the 0.2 s of evaluation never reached it
    assert timers.seconds["eval"] >= 0.2 and timers.calls["eval"] == 1
