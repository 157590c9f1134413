import os
import sys

import pytest

# Tests import the repo's packages from the checkout, installed or not.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from architectures.core.config import DQNConfig  # noqa: E402


@pytest.fixture
def tiny_cfg() -> DQNConfig:
    """A CartPole run small enough for a unit test (about a second)."""
    return DQNConfig(env_id="CartPole-v1", seed=7, total_env_steps=1_200, hidden_sizes=(16, 16), buffer_size=1_000,
                     batch_size=16, learning_starts=200, eps_decay_steps=500, eval_every=400, eval_episodes=2,
                     target_update_period=20, log_every=200)
