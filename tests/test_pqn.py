"""pqn (architectures/designs/pqn.py): Q(lambda) targets as defined, and a run's rollouts,
updates, checkpoints and refusals. Its resume, fault, clock and user-env tests are the registry's
(tests/test_resume.py, test_faults.py, test_clock.py, test_user_envs.py)."""

import math

import numpy as np
import pytest

from architectures.core.config import ConfigError, DQNConfig
from architectures.designs import pqn
from tests.test_single_env import Recorder, untimed

GAMMA = 0.9


def _by_definition(rewards, terminated, truncated, next_values, gamma, lam):
    """G_t written out for one env at a time, as the module docstring defines it."""
    T, N = rewards.shape  # noqa: N806
    out = np.zeros((T, N))
    for i in range(N):
        for t in reversed(range(T)):
            if terminated[t, i]:
                out[t, i] = rewards[t, i]
            elif truncated[t, i] or t == T - 1:
                out[t, i] = rewards[t, i] + gamma * next_values[t, i]
            else:
                out[t, i] = rewards[t, i] + gamma * ((1 - lam) * next_values[t, i] + lam * out[t + 1, i])
    return out


@pytest.mark.parametrize("lam", [0.0, 0.65, 1.0])
def test_lambda_returns_match_their_definition(lam):
    rng = np.random.default_rng(0)
    T, N = 7, 3  # noqa: N806
    rewards = rng.normal(size=(T, N)).astype(np.float32)
    terminated, truncated = np.zeros((T, N), bool), np.zeros((T, N), bool)
    terminated[2, 0], truncated[4, 1], terminated[6, 2] = True, True, True  # ends inside the rollout and at its end
    next_values = rng.normal(size=(T, N)).astype(np.float32)
    got = pqn.lambda_returns(rewards, terminated, truncated, next_values, GAMMA, lam)
    assert np.allclose(got, _by_definition(rewards, terminated, truncated, next_values, GAMMA, lam), atol=1e-6)


def test_lambda_zero_is_one_step_td_and_lambda_one_the_discounted_return():
    rewards = np.ones((3, 1), np.float32)
    none = np.zeros((3, 1), bool)
    values = np.full((3, 1), 10.0, np.float32)
    one_step = pqn.lambda_returns(rewards, none, none, values, GAMMA, 0.0)
    assert np.allclose(one_step[:, 0], 1 + GAMMA * 10)
    monte_carlo = pqn.lambda_returns(rewards, none, none, values, GAMMA, 1.0)
    assert monte_carlo[0, 0] == pytest.approx(1 + GAMMA + GAMMA ** 2 + GAMMA ** 3 * 10)


TINY = dict(total_env_steps=3_000, eval_every=1_000, eval_episodes=2, learning_starts=0, hidden_sizes=(16,),
            num_workers=2, rollout_steps=64, rollout_epochs=2, rollout_minibatches=4, layer_norm=True,
            lr_anneal=True, log_every=500, worker_timeout_s=30.0)


def test_a_run_learns_every_rollout_once_in_epochs_of_minibatches():
    result = pqn.train(DQNConfig(**TINY))
    rollouts = math.ceil(3_000 / (64 * 2))  # the last one shorter, to end at the budget
    assert result["rollouts"] == rollouts and result["env_steps"] == 3_000
    assert result["updates"] == rollouts * 2 * 4
    assert [c["env_steps"] for c in result["holdout_curve"]] == [1_000, 2_000, 3_000]
    assert all(np.isfinite(c["return_mean"]) for c in result["holdout_curve"])
    assert result["episodes"] > 0 and result["num_workers"] == 2


def test_learning_waits_for_learning_starts():
    result = pqn.train(DQNConfig(**{**TINY, "learning_starts": 1_000}))
    # rollouts end at 128, 256, ...: the 7 that end before 1,000 env steps learn nothing
    assert result["updates"] == (math.ceil(3_000 / 128) - 7) * 2 * 4


def test_prioritized_replay_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="pqn has no replay buffer"):
        pqn.train(DQNConfig(**TINY, prioritized=True))


def test_which_envs_share_a_batch_changes_no_result():
    """Env 0 made 2 ms slower answers later than env 1, so its steps are acted on in other batches
    than env 1's; every loss, holdout and episode is still the even run's: each env's steps keep
    their order in the rollout, and its epsilon, exploration draws and values are those lockstep
    stepping gave it. Every episode ends in a time limit, so the truncations' bootstraps are in."""
    cfg = DQNConfig(**{**TINY, "env_id": "tests.fault_envs:ShortPole-v0", "total_env_steps": 1_600,
                       "eval_every": 400, "log_every": 200, "rollout_steps": 32, "eps_decay_steps": 400})
    runs = []
    for slow in (0.0, 2_000.0):
        rec = Recorder()
        result = pqn.train(cfg.replace(slow_worker_cost_us=slow), rec)
        runs.append(([v for name, v, _ in rec.scalars if name == "td_loss"], untimed(rec.holdouts),
                     result["episodes"], result["updates"]))
    assert len(runs[0][0]) >= 6 and runs[0][2] >= 80  # losses logged, and episodes cut off every 20 steps
    assert runs[0] == runs[1]
